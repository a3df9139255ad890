package auditsink

import (
	"bytes"
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
