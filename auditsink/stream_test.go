package auditsink

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// streamItems reads every item of body through an itemStream.
func streamItems(body string, maxItem int64) (items []string, skipped int, s *itemStream, err error) {
	s = newItemStream(iotest.OneByteReader(strings.NewReader(body)), maxItem)
	if err := s.start(); err != nil {
		return nil, 0, s, err
	}
	for {
		var b bytes.Buffer
		err := s.next(&b)
		switch {
		case errors.Is(err, io.EOF):
			return items, skipped, s, nil
		case errors.Is(err, errItemTooLarge):
			skipped++
		case err != nil:
			return items, skipped, s, err
		default:
			items = append(items, b.String())
		}
	}
}

func TestItemStreamAgreesWithSplit(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	bodies := []string{
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[]}`,
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":null}`,
		` { "kind" : "EventList" , "apiVersion":"audit.k8s.io/v1", "metadata":{"x":[1,{"y":"]}"}]},
		  "items" : [ {"a":"b\"]}"} , {"deep":` + deep + `}, 42, "s", true ] , "more": {"z":1} } `,
		`{"KIND":"EventList","ApiVersion":"audit.k8s.io/v1","items":[{"a":1}],"items2":[{"b":2}]}`,
	}
	for _, body := range bodies {
		want, err := splitEventList([]byte(body))
		if err != nil {
			t.Fatalf("split %.60q: %v", body, err)
		}
		got, skipped, s, err := streamItems(body, 1<<20)
		if err != nil || skipped != 0 {
			t.Fatalf("stream %.60q: %v (skipped %d)", body, err, skipped)
		}
		if s.kind != want.Kind || s.apiVersion != want.APIVersion || len(got) != len(want.Items) {
			t.Fatalf("stream %.60q: kind %q apiVersion %q %d items; split: %q %q %d", body, s.kind, s.apiVersion, len(got), want.Kind, want.APIVersion, len(want.Items))
		}
		for i := range got {
			if got[i] != string(want.Items[i]) {
				t.Errorf("item %d: %q, split %q", i, got[i], want.Items[i])
			}
		}
	}
}

func TestItemStreamSkipsOversizedItems(t *testing.T) {
	big := `{"data":"` + strings.Repeat("x", 5000) + `","nested":{"s":"]}\"]}"}}`
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"a":1},` + big + `,{"b":2}]}`
	items, skipped, _, err := streamItems(body, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 || len(items) != 2 || items[0] != `{"a":1}` || items[1] != `{"b":2}` {
		t.Errorf("items %q, skipped %d; want the two small items and one skipped", items, skipped)
	}
}

func TestItemStreamRefusesBadEnvelopes(t *testing.T) {
	for _, body := range []string{
		``,
		`[]`,
		`{"items":[{"a":1}],"kind":"EventList","apiVersion":"audit.k8s.io/v1"}`, // items first
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"a":1}`,   // cut short
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"a":1} {"b":2}]}`,
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]} trailing`,
		`{"kind":1,"apiVersion":"audit.k8s.io/v1","items":[]}`,
	} {
		if _, _, _, err := streamItems(body, 1<<20); err == nil {
			t.Errorf("%q: accepted", body)
		}
	}
}

// TestItemStreamCutsALongDeleteCollection: a deletecollection longer than
// the largest event taken keeps its envelope and its List: the items that
// fit whole, those past the point where it would not as their metadata
// only (and any copied whole past half of the limit, rewritten); one that
// fits is kept whole, even past half of the limit; a List whose metadata
// alone is too long is skipped like any long event; the stream goes on
// after each; other long events are skipped as before.
func TestItemStreamCutsALongDeleteCollection(t *testing.T) {
	item := func(name string, size int) string {
		return `{ "metadata" : {"name":"` + name + `","namespace":"prod","uid":"uid-` + name + `","resourceVersion":"7","annotations":{"a":"]}\"{["}},` +
			`"data":{"v":"` + strings.Repeat("x", size) + `"}}`
	}
	list := func(items ...string) string {
		return `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[` + strings.Join(items, " , ") + `]}`
	}
	event := func(verb, resp string) string {
		return `{"kind":"Event","auditID":"a-` + verb + `","stage":"ResponseComplete","verb":"` + verb + `",` +
			`"objectRef":{"resource":"configmaps","namespace":"prod"},"responseObject":` + resp + `,"stageTimestamp":"2026-11-25T10:00:00Z"}`
	}
	hugeMeta := `{"metadata":{"name":"m","uid":"uid-m","annotations":{"a":"` + strings.Repeat("y", 3000) + `"}}}`
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + strings.Join([]string{
		event("deletecollection", list(item("a", 300), item("b", 300), item("c", 300), item("d", 300), item("e", 300), item("f", 300))),
		event("update", list(item("u1", 400), item("u2", 400), item("u3", 400), item("u4", 400))), // not a List a deletecollection answered
		event("deletecollection", list(hugeMeta, item("g", 400))),
		event("deletecollection", list(item("h", 500), item("i", 500))), // past half, under the limit: whole
		`{"small":true}`,
	}, ",") + `]}`
	items, skipped, s, err := streamItems(body, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 2 || len(items) != 3 || items[2] != `{"small":true}` {
		t.Fatalf("%d items, %d skipped, %d cut: %q; want the two deletecollections and the small item, 2 skipped", len(items), skipped, s.cut, items)
	}
	type listItem struct {
		Kind     string            `json:"kind"`
		Metadata map[string]any    `json:"metadata"`
		Data     map[string]string `json:"data"`
	}
	decode := func(raw string) []listItem {
		t.Helper()
		if len(raw) >= 2000 {
			t.Errorf("an event of %d bytes, over the limit", len(raw))
		}
		var ev struct {
			Verb           string `json:"verb"`
			StageTimestamp string `json:"stageTimestamp"`
			ResponseObject struct {
				Kind  string     `json:"kind"`
				Items []listItem `json:"items"`
			} `json:"responseObject"`
		}
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, raw)
		}
		if ev.Verb != "deletecollection" || ev.StageTimestamp == "" || ev.ResponseObject.Kind != "ConfigMapList" {
			t.Fatalf("event: %s", raw)
		}
		return ev.ResponseObject.Items
	}
	whole := func(it listItem) bool { return it.Kind == "" && len(it.Data["v"]) > 0 }
	cut := decode(items[0])
	if len(cut) != 6 || !whole(cut[0]) {
		t.Fatalf("the cut List: %+v", cut)
	}
	for i, it := range cut {
		if !whole(it) && (it.Kind != "PartialObjectMetadata" || it.Data != nil || it.Metadata["uid"] != "uid-"+string(rune('a'+i)) || it.Metadata["resourceVersion"] != "7") {
			t.Errorf("item %d: %+v, want it whole or its metadata only", i, it)
		}
		if i > 0 && whole(it) && !whole(cut[i-1]) {
			t.Errorf("item %d whole after a cut one", i)
		}
	}
	if whole(cut[5]) || s.cut == 0 {
		t.Errorf("the last item of a List too long was not cut (%d cut)", s.cut)
	}
	for _, it := range decode(items[1]) {
		if !whole(it) {
			t.Errorf("a deletecollection under the limit was cut: %+v", it)
		}
	}
}

// TestItemStreamDeleteCollectionProperties: random deletecollections under
// random limits: each is read as one item (the stream goes on to the
// sentinel after it), what is kept is JSON within the limit with every
// item, whole or as its metadata, and one that fits is kept whole.
func TestItemStreamDeleteCollectionProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 500 {
		var items []string
		for i := range 1 + rng.IntN(12) {
			items = append(items, fmt.Sprintf(`{"metadata":{"name":"n%d","uid":"u%d","resourceVersion":"%d"},"data":{"v":%q}}`,
				i, i, i+1, strings.Repeat("x", rng.IntN(600))))
		}
		ev := `{"kind":"Event","auditID":"a","stage":"ResponseComplete","verb":"deletecollection","objectRef":{"resource":"configmaps"},` +
			`"responseObject":{"kind":"ConfigMapList","apiVersion":"v1","items":[` + strings.Join(items, ",") + `]},"stageTimestamp":"2026-11-25T10:00:00Z"}`
		limit := int64(300 + rng.IntN(6000))
		body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev + `,{"sentinel":true}]}`
		got, skipped, _, err := streamItems(body, limit)
		if err != nil || len(got)+skipped != 2 || got[len(got)-1] != `{"sentinel":true}` {
			t.Fatalf("case %d (limit %d): %d items, %d skipped, %v", n, limit, len(got), skipped, err)
		}
		if skipped == 1 {
			if int64(len(ev)) < limit-max(limit/16, 64) {
				t.Fatalf("case %d: an event of %d bytes under the limit %d was skipped", n, len(ev), limit)
			}
			continue
		}
		var out struct {
			ResponseObject struct {
				Items []struct {
					Kind     string         `json:"kind"`
					Metadata map[string]any `json:"metadata"`
				} `json:"items"`
			} `json:"responseObject"`
		}
		if err := json.Unmarshal([]byte(got[0]), &out); err != nil || int64(len(got[0])) >= limit {
			t.Fatalf("case %d: %d bytes under limit %d, %v", n, len(got[0]), limit, err)
		}
		if len(out.ResponseObject.Items) != len(items) {
			t.Fatalf("case %d: %d items of %d", n, len(out.ResponseObject.Items), len(items))
		}
		for i, it := range out.ResponseObject.Items {
			if it.Metadata["uid"] != fmt.Sprintf("u%d", i) {
				t.Fatalf("case %d: item %d: %+v", n, i, it)
			}
			if it.Kind != "" && int64(len(ev)) < limit-max(limit/16, 64) {
				t.Fatalf("case %d: an event that fits (%d bytes, limit %d) was cut", n, len(ev), limit)
			}
		}
	}
}
