package auditsink

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
// the largest event taken keeps its envelope and its List, the items past
// half of the limit as their metadata only; a List whose metadata alone
// is too long is skipped like any long event; the stream goes on after
// both; other long events are skipped as before.
func TestItemStreamCutsALongDeleteCollection(t *testing.T) {
	item := func(name string) string {
		return `{ "metadata" : {"name":"` + name + `","namespace":"prod","uid":"uid-` + name + `","resourceVersion":"7","annotations":{"a":"]}\"{["}},` +
			`"data":{"v":"` + strings.Repeat("x", 400) + `"}}`
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
		event("deletecollection", list(item("a"), item("b"), item("c"), item("d"))),
		event("update", list(item("u1"), item("u2"), item("u3"), item("u4"))), // not a List a deletecollection answered
		event("deletecollection", list(hugeMeta, item("e"))),
		`{"small":true}`,
	}, ",") + `]}`
	items, skipped, s, err := streamItems(body, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 2 || len(items) != 2 || items[1] != `{"small":true}` || s.cut != 3 {
		t.Fatalf("%d items, %d skipped, %d cut: %q; want the cut deletecollection and the small item, 2 skipped, 3 cut", len(items), skipped, s.cut, items)
	}
	if len(items[0]) >= 2000 {
		t.Errorf("the cut event is %d bytes, over the limit", len(items[0]))
	}
	var ev struct {
		Verb           string `json:"verb"`
		StageTimestamp string `json:"stageTimestamp"`
		ResponseObject struct {
			Kind  string `json:"kind"`
			Items []struct {
				Kind     string            `json:"kind"`
				Metadata map[string]any    `json:"metadata"`
				Data     map[string]string `json:"data"`
			} `json:"items"`
		} `json:"responseObject"`
	}
	if err := json.Unmarshal([]byte(items[0]), &ev); err != nil {
		t.Fatalf("the cut event is not JSON: %v\n%s", err, items[0])
	}
	r := ev.ResponseObject
	if ev.Verb != "deletecollection" || ev.StageTimestamp == "" || r.Kind != "ConfigMapList" || len(r.Items) != 4 {
		t.Fatalf("cut event: %s", items[0])
	}
	if r.Items[0].Kind != "" || len(r.Items[0].Data["v"]) != 400 {
		t.Errorf("the first item is not whole: %+v", r.Items[0])
	}
	for i, name := range []string{"b", "c", "d"} {
		it := r.Items[i+1]
		if it.Kind != "PartialObjectMetadata" || it.Data != nil || it.Metadata["uid"] != "uid-"+name || it.Metadata["resourceVersion"] != "7" {
			t.Errorf("item %s: %+v, want its metadata only", name, it)
		}
	}
}
