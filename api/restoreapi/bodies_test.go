package restoreapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// TestFailedMutationBodiesAreBoundedInBytes: a page of failed mutations
// carries their request bodies up to history.MaxPageBodyBytes, then ends
// with a next cursor; following it gives every attempt once, each with its
// body. (A page of 500 bodies of megabytes each was read whole before.)
func TestFailedMutationBodiesAreBoundedInBytes(t *testing.T) {
	st := openRecord(t, store.Options{})
	const n, size = 7, 3 << 20
	var b model.Batch
	for i := range n {
		at := rt0.Add(time.Duration(i) * time.Second)
		body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("big-%d", i)}, "data": map[string]any{"v": strings.Repeat("x", size)}})
		b.Events = append(b.Events, model.Event{Cluster: "default", Key: sum("denied", fmt.Sprint(i)), StageAt: at,
			AuditID: fmt.Sprintf("denied-%d", i), Stage: "ResponseComplete", Verb: "create",
			RequestURI: "/api/v1/namespaces/prod/configmaps", Username: "mallory", APIVersion: "v1", Resource: "configmaps",
			Namespace: "prod", Name: fmt.Sprintf("big-%d", i), ResponseCode: 422, RequestObject: body})
	}
	if _, err := st.WriteBatch(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	h := recordServer(t, st, denySecrets{}, Options{})
	seen := map[string]bool{}
	pages := 0
	for next := ""; pages == 0 || next != ""; pages++ {
		path := "/api/v1/clusters/default/failed-mutations?limit=500"
		if next != "" {
			path += "&cursor=" + url.QueryEscape(next)
		}
		code, e, body := do(t, h, http.MethodGet, path, "")
		if code != http.StatusOK {
			t.Fatalf("page %d: %d %+v", pages, code, e)
		}
		if len(body) > history.MaxPageBodyBytes+(1<<20) {
			t.Errorf("page %d is %d bytes, over the %d of bodies a page may hold", pages, len(body), history.MaxPageBodyBytes)
		}
		var page history.Page[history.Event]
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Items {
			if len(ev.RequestObject) < size || seen[ev.Name] {
				t.Errorf("page %d: %s with a body of %d bytes (seen before: %v)", pages, ev.Name, len(ev.RequestObject), seen[ev.Name])
			}
			seen[ev.Name] = true
		}
		next = page.Next
		if pages > n {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != n || pages < 3 {
		t.Errorf("%d attempts over %d pages; want all %d, over several pages", len(seen), pages, n)
	}
}
