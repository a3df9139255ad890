package decode

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/model/jsonfast"
	"github.com/options-record/options-record/test/gen"
)

// TestWireEventMirrorsEvent keeps the fast path's event type in step with
// auditv1.Event: the same JSON fields, in the same order, so a field added
// by a k8s.io/apiserver upgrade is not silently dropped.
func TestWireEventMirrorsEvent(t *testing.T) {
	ev, wire := reflect.TypeFor[auditv1.Event](), reflect.TypeFor[wireEvent]()
	if ev.NumField() != wire.NumField() {
		t.Fatalf("auditv1.Event has %d fields, wireEvent %d", ev.NumField(), wire.NumField())
	}
	for i := range ev.NumField() {
		e, w := ev.Field(i), wire.Field(i)
		if e.Name != w.Name || e.Tag.Get("json") != w.Tag.Get("json") {
			t.Errorf("field %d: auditv1.Event has %s `json:%q`, wireEvent %s `json:%q`",
				i, e.Name, e.Tag.Get("json"), w.Name, w.Tag.Get("json"))
		}
	}
}

// TestWireKeepsObjectsInTheBody checks what makes the fast path cheap: an
// object is a slice of the body, not a copy.
func TestWireKeepsObjectsInTheBody(t *testing.T) {
	body := []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` +
		`{"auditID":"a","stage":"ResponseComplete","verb":"create","stageTimestamp":"2026-11-21T10:00:00.000001Z",` +
		`"requestObject":null,"responseObject":{"kind":"ConfigMap","data":{"k":"v"}}}]}`)
	wl, err := decodeWire(body)
	if err != nil {
		t.Fatal(err)
	}
	ev := wl.Items[0].event()
	if ev.RequestObject != nil {
		t.Errorf("requestObject null decoded as %q", ev.RequestObject.Raw)
	}
	raw := ev.ResponseObject.Raw
	if string(raw) != `{"kind":"ConfigMap","data":{"k":"v"}}` {
		t.Fatalf("responseObject %q", raw)
	}
	start, p := uintptr(unsafe.Pointer(&body[0])), uintptr(unsafe.Pointer(&raw[0]))
	if p < start || p >= start+uintptr(len(body)) {
		t.Error("responseObject was copied out of the body")
	}
	if got := ev.StageTimestamp.UTC().Format("2006-01-02T15:04:05.000000Z"); got != "2026-11-21T10:00:00.000001Z" {
		t.Errorf("stageTimestamp %s", got)
	}
}

// TestWirePathsAgree runs the same EventLists through the webhook's decode
// on sonic and on its encoding/json fallback (jsonfast.Std, what runs where
// sonic does not) and compares the events. They differ only as
// jsonfast.DecodeInPlace says: sonic leaves invalid UTF-8 for the store's
// sanitizer (encoding/json replaces each byte), and skips an object
// without validating it (encoding/json refuses the body, which is then
// decoded event by event).
func TestWirePathsAgree(t *testing.T) {
	cm := gen.ConfigMap("prod", "app", "uid-1", 11, map[string]string{"k": "v"}, gen.Labels("app", "web"))
	good := string(gen.EventList(
		gen.Event(gen.Namespace("prod"), gen.Name("app"), gen.Response(cm)),
		gen.Event(gen.Verb("patch"), gen.Namespace("prod"), gen.Name("app"), gen.Request([]any{gen.Obj{"op": "replace", "path": "/data/k", "value": "w"}}), gen.Response(cm)),
		gen.Event(gen.Verb("deletecollection"), gen.Namespace("team-a"), gen.Response(gen.List("v1", "ConfigMapList", 20, gen.ConfigMap("team-a", "f", "uid-3", 19, nil)))),
		gen.Event(gen.Verb("delete"), gen.Namespace("prod"), gen.Name("app"), gen.Impersonating("dave", "devs"), gen.Failed(403, metav1.StatusReasonForbidden, "forbidden")),
		gen.Event(gen.Stage(auditv1.StageRequestReceived), gen.Namespace("prod"), gen.Name("app")),
	))
	one := func(item string) string {
		return `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + item + `]}`
	}
	const ev = `"auditID":"a1","stage":"ResponseComplete","verb":"update","stageTimestamp":"2026-11-21T10:00:00.000001Z",` +
		`"objectRef":{"resource":"configmaps","namespace":"prod","name":"a","apiVersion":"v1"}`
	for _, tt := range []struct {
		name, body                   string
		invalidUTF8, malformedObject bool
	}{
		{name: "events of each kind", body: good},
		{name: "hostile strings", body: one(`{` + ev + `,"user":{"username":"\u202eevil\u2066\u0000","groups":["\ud800","\ud83d\ude00","a\"b\\c"]},` +
			`"annotations":{"\u00a0":"\u200b","k":"\/\b\f\n\r\t"},"userAgent":"` + strings.Repeat("é", 5000) + `"}`)},
		{name: "a raw control character", body: one(`{` + ev + ",\"user\":{\"username\":\"a\x01b\"}}")},
		{name: "a raw DEL", body: one(`{` + ev + ",\"user\":{\"username\":\"a\x7fb\"}}")},
		{name: "invalid UTF-8", body: one(`{` + ev + ",\"user\":{\"username\":\"a\xffb\xfe\",\"groups\":[\"\xed\xa0\x80\"]},\"annotations\":{\"k\xc3\":\"v\"}}"),
			invalidUTF8: true},
		{name: "invalid UTF-8 in an object", body: one(`{` + ev + ",\"responseObject\":{\"data\":{\"k\":\"\xff\"}}}")},
		{name: "duplicate keys", body: one(`{` + ev + `,"verb":"delete","annotations":{"k":"1","k":"2"},"objectRef":{"name":"b"}}`)},
		{name: "keys in another case", body: one(`{` + ev + `,"Verb":"patch","USER":{"Username":"bob"}}`)},
		{name: "an escaped kind", body: `{"kind":"Event\u004cist","apiVersion":"audit.k8s.io/v1","items":[{` + ev + `}]}`},
		{name: "a code over int32", body: one(`{` + ev + `,"responseStatus":{"code":4294967497}}`)},
		{name: "a code with a fraction", body: one(`{` + ev + `,"responseStatus":{"code":201.5}}`)},
		{name: "a code as a string", body: one(`{` + ev + `,"responseStatus":{"code":"201"}}`)},
		{name: "a huge code", body: one(`{` + ev + `,"responseStatus":{"code":1e400}}`)},
		{name: "a timestamp with an offset", body: one(`{` + ev + `,"requestReceivedTimestamp":"2026-11-21T12:00:00.5+02:00"}`)},
		{name: "a timestamp that is not one", body: one(`{` + ev + `,"requestReceivedTimestamp":"yesterday"}`)},
		{name: "null objects", body: one(`{` + ev + `,"requestObject":null,"responseObject":null,"annotations":null}`)},
		{name: "objects of every type", body: one(`{` + ev + `,"requestObject":[1,"a"],"responseObject":"s"}`)},
		{name: "a malformed object", body: one(`{` + ev + `,"responseObject":{"a":}}`), malformedObject: true},
		{name: "a control character in an object", body: one(`{` + ev + ",\"responseObject\":{\"a\":\"\x01\"}}"), malformedObject: true},
		{name: "trailing data", body: good + `{}`},
		{name: "truncated", body: good[:len(good)-1]},
		{name: "not a list", body: `[]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, serr := decodeWireWith(jsonfast.Sonic, []byte(tt.body))
			j, jerr := decodeWireWith(jsonfast.Std, []byte(tt.body))
			if jsonfast.Native && tt.malformedObject {
				if serr != nil || jerr == nil {
					t.Fatalf("sonic error %v (want none), encoding/json error %v (want one)", serr, jerr)
				}
				return
			}
			if (serr == nil) != (jerr == nil) {
				t.Fatalf("sonic error %v, encoding/json error %v", serr, jerr)
			}
			if serr != nil {
				return
			}
			sevs, jevs := events(s), events(j)
			if jsonfast.Native && tt.invalidUTF8 {
				if utf8.ValidString(sevs[0].User.Username) {
					t.Errorf("sonic replaced the invalid UTF-8 (%q): the store's sanitizer would not count it", sevs[0].User.Username)
				}
				sevs = replaceInvalidUTF8(t, sevs)
			}
			if d := cmp.Diff(jevs, sevs); d != "" {
				t.Errorf("events (-encoding/json +sonic):\n%s", d)
			}
		})
	}
}

func events(wl *wireList) []auditv1.Event {
	evs := make([]auditv1.Event, len(wl.Items))
	for i := range wl.Items {
		evs[i] = wl.Items[i].event()
	}
	return evs
}

// replaceInvalidUTF8 replaces each invalid byte in the strings of evs with
// U+FFFD, as encoding/json does: marshalled (which replaces them) and
// decoded again.
func replaceInvalidUTF8(t *testing.T, evs []auditv1.Event) []auditv1.Event {
	t.Helper()
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditv1.Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
