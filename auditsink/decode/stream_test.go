package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
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
		// An empty items array followed by another member.
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[],"metadata":{}}`,
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[ ] , "metadata":{},"x":1}`,
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

// TestItemStreamKeepsOversizedEvents: an event longer than the largest
// taken is kept, marked, without what made it long (its long string
// shortened); an item that is no event (not an object) is skipped.
func TestItemStreamKeepsOversizedEvents(t *testing.T) {
	big := `{"data":"` + strings.Repeat("x", 5000) + `","nested":{"s":"]}\"]}"}}`
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"a":1},` + big + `,"` + strings.Repeat("y", 5000) + `",{"b":2}]}`
	items, skipped, s, err := streamItems(body, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 || len(items) != 3 || items[0] != `{"a":1}` || items[2] != `{"b":2}` || s.truncated != 1 {
		t.Fatalf("items %q, skipped %d, truncated %d; want three items (the long one kept) and the long string skipped", items, skipped, s.truncated)
	}
	var got struct {
		Data        string            `json:"data"`
		Nested      map[string]string `json:"nested"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(items[1]), &got); err != nil || len(items[1]) >= 1000 {
		t.Fatalf("the long event: %d bytes, %v", len(items[1]), err)
	}
	if !strings.HasPrefix(got.Data, "xxx") || !strings.Contains(got.Data, "…sha256:") || got.Nested["s"] != `]}"]}` ||
		got.Annotations["audit.k8s.io/truncated"] != "true" {
		t.Errorf("the long event kept as %+v; want its string shortened, the rest whole, and the mark", got)
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
	if skipped != 0 || len(items) != 5 || items[4] != `{"small":true}` || s.truncated != 3 {
		t.Fatalf("%d items, %d skipped, %d cut, %d truncated: %q; want every item kept, 3 marked", len(items), skipped, s.cut, s.truncated, items)
	}
	// The update keeps its envelope, marked, without its body; so does the
	// deletecollection whose List's metadata alone is too long.
	for _, i := range []int{1, 2} {
		var ev struct {
			Verb           string            `json:"verb"`
			ObjectRef      map[string]string `json:"objectRef"`
			StageTimestamp string            `json:"stageTimestamp"`
			ResponseObject json.RawMessage   `json:"responseObject"`
			Annotations    map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal([]byte(items[i]), &ev); err != nil || len(items[i]) >= 2000 {
			t.Fatalf("item %d: %d bytes, %v", i, len(items[i]), err)
		}
		if ev.Verb == "" || ev.ObjectRef["resource"] != "configmaps" || ev.StageTimestamp == "" || ev.ResponseObject != nil ||
			ev.Annotations["audit.k8s.io/truncated"] != "true" {
			t.Errorf("item %d: %s; want the envelope without the body, marked", i, items[i])
		}
	}
	items = []string{items[0], items[3]}
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
		if err != nil || skipped != 0 || len(got) != 2 || got[1] != `{"sentinel":true}` {
			t.Fatalf("case %d (limit %d): %d items, %d skipped, %v", n, limit, len(got), skipped, err)
		}
		var out struct {
			Verb           string            `json:"verb"`
			Annotations    map[string]string `json:"annotations"`
			ResponseObject *struct {
				Items []struct {
					Kind     string         `json:"kind"`
					Metadata map[string]any `json:"metadata"`
				} `json:"items"`
			} `json:"responseObject"`
		}
		if err := json.Unmarshal([]byte(got[0]), &out); err != nil || int64(len(got[0])) >= limit {
			t.Fatalf("case %d: %d bytes under limit %d, %v", n, len(got[0]), limit, err)
		}
		if out.Verb != "deletecollection" {
			t.Fatalf("case %d: the envelope lost: %s", n, got[0])
		}
		if out.ResponseObject == nil {
			// Even the metadata does not fit: the event is kept without its List, marked.
			if out.Annotations["audit.k8s.io/truncated"] != "true" || int64(len(ev)) < limit-max(limit/16, 64) {
				t.Fatalf("case %d: an event of %d bytes (limit %d) kept without its List: %s", n, len(ev), limit, got[0])
			}
			continue
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

// TestItemStreamPaddedEnvelopeHoldsLittle: an event padded with megabytes
// of Audit-ID, URI and user agent is kept, its envelope whole but for
// those values, shortened and marked; reading it allocates a small
// multiple of the limit, never the padding.
func TestItemStreamPaddedEnvelopeHoldsLittle(t *testing.T) {
	pad := strings.Repeat("p", 8<<20)
	ev := `{"kind":"Event","level":"RequestResponse","auditID":"` + pad + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/prod/configmaps?x=` + pad + `",` +
		`"verb":"deletecollection","user":{"username":"mallory","groups":["system:authenticated"]},"userAgent":"` + pad + `",` +
		`"objectRef":{"resource":"configmaps","namespace":"prod","apiVersion":"v1"},"responseObject":{"kind":"ConfigMapList","apiVersion":"v1","items":[` +
		`{"metadata":{"name":"a","namespace":"prod","uid":"uid-a","resourceVersion":"7"},"data":{"v":"` + strings.Repeat("x", 2<<20) + `"}},` +
		`{"metadata":{"name":"b","namespace":"prod","uid":"uid-b","resourceVersion":"8"}}]},` +
		`"requestReceivedTimestamp":"2026-11-25T10:00:00Z","stageTimestamp":"2026-11-25T10:00:01Z","annotations":{"authorization.k8s.io/decision":"allow"}}`
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev + `]}`
	const limit = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newItemStream(strings.NewReader(body), limit)
	var b bytes.Buffer
	err := s.start()
	if err == nil {
		err = s.next(&b)
	}
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*limit {
		t.Errorf("reading a %d-byte event allocated %d bytes; want at most %d", len(ev), got, 4*limit)
	}
	var got struct {
		AuditID        string            `json:"auditID"`
		RequestURI     string            `json:"requestURI"`
		Verb           string            `json:"verb"`
		User           map[string]any    `json:"user"`
		UserAgent      string            `json:"userAgent"`
		ObjectRef      map[string]string `json:"objectRef"`
		StageTimestamp string            `json:"stageTimestamp"`
		Annotations    map[string]string `json:"annotations"`
		ResponseObject struct {
			Items []struct {
				Metadata map[string]string `json:"metadata"`
			} `json:"items"`
		} `json:"responseObject"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || b.Len() >= limit {
		t.Fatalf("kept %d bytes (limit %d): %v", b.Len(), limit, err)
	}
	for _, v := range []string{got.AuditID, got.RequestURI, got.UserAgent} {
		if len(v) > maxMetaString || !strings.HasPrefix(v, "p") && !strings.HasPrefix(v, "/api/v1/namespaces/prod/configmaps?x=p") || !strings.Contains(v, "…sha256:") {
			t.Errorf("a padded value kept as %d bytes: %.80q…; want it shortened, with its digest", len(v), v)
		}
	}
	if got.Verb != "deletecollection" || got.User["username"] != "mallory" || got.ObjectRef["namespace"] != "prod" || got.StageTimestamp == "" ||
		got.Annotations["audit.k8s.io/truncated"] != "true" || got.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("the envelope: %.500s", b.String())
	}
	if n := len(got.ResponseObject.Items); n != 2 || got.ResponseObject.Items[1].Metadata["uid"] != "uid-b" {
		t.Errorf("the List kept %d items: %+v; want both", n, got.ResponseObject.Items)
	}
}

// TestBoundedStringCutsWhereJSONAllows: a long string is cut outside an
// escape and on a character boundary, so what is kept decodes; a short one
// is kept as it is.
func TestBoundedStringCutsWhereJSONAllows(t *testing.T) {
	for _, unit := range []string{`\"`, `\\`, `\u00e9`, "é", "😀", `\ud83d\ude00`, "a"} {
		for _, n := range []int{1, 40, 200} {
			str := `"` + strings.Repeat(unit, n) + `"`
			s := newItemStream(strings.NewReader(str[1:]), -1)
			var b bytes.Buffer
			b.WriteByte('"')
			shortened, err := s.boundedString(&b, 100)
			if err != nil {
				t.Fatal(err)
			}
			var v string
			if err := json.Unmarshal(b.Bytes(), &v); err != nil {
				t.Fatalf("%q × %d: kept %q, not JSON: %v", unit, n, b.String(), err)
			}
			long := len(str)-2 > 100
			if shortened != long || long && (b.Len() > 102 || !strings.Contains(v, "…sha256:")) || !long && b.String() != str {
				t.Errorf("%q × %d: kept %q (shortened %v)", unit, n, b.String(), shortened)
			}
		}
	}
}

// FuzzItemStreamEvents: whatever the events of a streamed body, and the
// limit, each item kept from a well-formed body is JSON, an object kept
// under the limit, and an event that fits is kept as it was.
func FuzzItemStreamEvents(f *testing.F) {
	f.Add(`{"auditID":"a","verb":"deletecollection","responseObject":{"items":[{"metadata":{"uid":"u"},"data":{"v":"xxxxxxxxxxxxxxxxxxxxxxxx"}}]},"annotations":{"k":"v"}}`, uint16(200))
	f.Add(`{"auditID":"`+strings.Repeat("p", 500)+`","verb":"delete","requestObject":{"a":"\"\\\u00e9é"},"annotations":{}}`, uint16(300))
	f.Add(`{"user":{"username":"`+strings.Repeat("é", 300)+`","groups":["a","b"]},"requestURI":"/x?\u0000\ud83d\ude00","verb":"patch"}`, uint16(120))
	f.Add(`{"a":[1,2,{"b":null}],"annotations":null,"c":-1.5e3,"d":true}`, uint16(64))
	f.Fuzz(func(t *testing.T, ev string, limit uint16) {
		var in map[string]json.RawMessage
		if json.Unmarshal([]byte(ev), &in) != nil {
			return
		}
		limit = 160 + limit%8000 // room for the mark and a little
		body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev + `,{"sentinel":true}]}`
		items, skipped, s, err := streamItems(body, int64(limit))
		if err != nil || skipped != 0 || len(items) != 2 || items[1] != `{"sentinel":true}` {
			t.Fatalf("limit %d: %q, %d skipped, %v", limit, items, skipped, err)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal([]byte(items[0]), &out); err != nil {
			t.Fatalf("limit %d: kept %q: %v", limit, items[0], err)
		}
		if len(items[0]) >= int(limit) {
			t.Fatalf("limit %d: kept %d bytes", limit, len(items[0]))
		}
		if s.truncated == 0 && items[0] != ev && !strings.ContainsAny(ev, " \t\r\n") {
			t.Fatalf("limit %d: %q kept unmarked as %q", limit, ev, items[0])
		}
	})
}

// TestALongEventHoldsLittleBeyondItsLimit: an event, however long and
// however it is cut, holds less than three times MaxEventBytes at any
// moment (HandlerOptions.MaxInFlightBytes): counted in bytes held, by
// itemStream.holding, for the shapes that hold the most beside the event
// (a List cut past its half and then in full: the event, the copy compact
// makes and the metadata read aside; a long metadata kept whole; long
// members; an event marked after its bodies).
func TestALongEventHoldsLittleBeyondItsLimit(t *testing.T) {
	const limit = 64 << 10
	item := func(name string, meta, data int) string {
		return `{"metadata":{"name":"` + name + `","uid":"uid-` + name + `","annotations":{"a":"` + strings.Repeat("m", meta) + `"}},` +
			`"data":{"v":"` + strings.Repeat("x", data) + `"}}`
	}
	list := func(items ...string) string {
		return `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
	}
	event := func(resp string, tail string) string {
		return `{"kind":"Event","auditID":"a","stage":"ResponseComplete","verb":"deletecollection",` +
			`"objectRef":{"resource":"secrets","namespace":"prod"},"responseObject":` + resp + tail + `,"stageTimestamp":"2026-11-25T10:00:00Z"}`
	}
	var fill []string
	for i := range 14 {
		fill = append(fill, item(fmt.Sprint("f", i), 10, limit/16))
	}
	var metas []string // items that are mostly metadata: cutting them saves little
	for i := range 7 {
		metas = append(metas, item(fmt.Sprint("m", i), limit/16, 0))
	}
	for _, c := range []struct{ name, event string }{
		{"a List of metadata past its half cut in full", event(list(slices.Concat(fill[:7], metas, []string{item("big", limit*7/8, 10)})...), "")},
		{"a List cut past its half, then in full", event(list(slices.Concat(fill, []string{item("big", limit*7/8, 10)})...), "")},
		{"a List cut in full for a long metadata", event(list(slices.Concat(fill[:7], []string{item("big", limit*7/8, 10)})...), "")},
		{"a long metadata kept whole", event(list(item("m", limit*7/8, 10)), "")},
		{"long members", event(list(fill[:7]...), `,"userAgent":"`+strings.Repeat("u", limit/9)+`","x":"`+strings.Repeat("v", limit/9)+`"`)},
		{"marked after its bodies", `{"kind":"Event","annotations":{"a":"b"},"requestObject":` + list(fill[:10]...) + `,"responseObject":` + list(fill...) + `}`},
	} {
		body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + c.event + `]}`
		items, skipped, s, err := streamItems(body, limit)
		if err != nil || len(items)+skipped != 1 {
			t.Fatalf("%s: %d items, %d skipped, %v", c.name, len(items), skipped, err)
		}
		t.Logf("%s: held %d bytes, %.2f of the limit", c.name, s.held, float64(s.held)/limit)
		if s.held >= 3*limit {
			t.Errorf("%s: held %d bytes at a moment; want under 3 times the limit, %d", c.name, s.held, 3*limit)
		}
	}
}

// TestItemStreamMarksAnnotationsThatEvictABody: annotations that find no
// room until a body copied before them is dropped are kept, and marked,
// where they were written after the drop.
func TestItemStreamMarksAnnotationsThatEvictABody(t *testing.T) {
	ev := `{"auditID":"a","verb":"delete","requestObject":{"a":"` + strings.Repeat("x", 700) + `"},` +
		`"annotations":{"k":"` + strings.Repeat("y", 80) + `","l":"` + strings.Repeat("z", 80) + `","m":"` + strings.Repeat("w", 50) + `"}}`
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev + `,{"sentinel":true}]}`
	items, skipped, s, err := streamItems(body, 1000)
	if err != nil || skipped != 0 || len(items) != 2 || s.truncated != 1 {
		t.Fatalf("%q, %d skipped, %d truncated, %v; want the event kept, marked", items, skipped, s.truncated, err)
	}
	var got struct {
		AuditID       string            `json:"auditID"`
		RequestObject json.RawMessage   `json:"requestObject"`
		Annotations   map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(items[0]), &got); err != nil {
		t.Fatalf("kept %q: %v", items[0], err)
	}
	if got.AuditID != "a" || got.RequestObject != nil || len(got.Annotations) != 4 || got.Annotations["audit.k8s.io/truncated"] != "true" ||
		got.Annotations["m"] != strings.Repeat("w", 50) {
		t.Errorf("kept %q; want the annotations, marked, without the request's body", items[0])
	}
}
