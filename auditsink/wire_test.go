package auditsink

import (
	"reflect"
	"testing"
	"unsafe"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
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
