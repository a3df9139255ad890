package decode_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// fuzzNow is the decoder's clock: an hour after the events of test/gen and
// of the demo log.
var fuzzNow = Base.Add(time.Hour)

// fuzzSeeds are real event shapes: what test/gen builds for each kind of
// change the record distinguishes, and the demo audit log.
func fuzzSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	demo, err := os.ReadFile("../../test/fixtures/demo-audit.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	return EventListSeeds(demo)
}

// FuzzDecodeEventList checks that no body makes the decoder (or the
// conversion of what it returns into rows) panic, that it refuses exactly
// the bodies that are not audit.k8s.io/v1 EventLists, and that every item
// of an EventList is either returned as a valid event or counted as skipped.
func FuzzDecodeEventList(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	objs, err := filter.LoadFile("../testdata/rules.yaml")
	if err != nil {
		f.Fatal(err)
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	check := &checkingWriter{}
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, check, nil, nil)

	f.Fuzz(func(t *testing.T, body []byte) {
		events, skipped, err := decode.EventList(body, fuzzNow)

		// The reference: what encoding/json makes of the envelope.
		var ref struct {
			Kind       string            `json:"kind"`
			APIVersion string            `json:"apiVersion"`
			Items      []json.RawMessage `json:"items"`
		}
		refErr := json.Unmarshal(body, &ref)
		isList := refErr == nil && ref.Kind == "EventList" && ref.APIVersion == "audit.k8s.io/v1"
		if err != nil {
			if !errors.Is(err, decode.ErrBadRequest) {
				t.Fatalf("error %v is not an ErrBadRequest", err)
			}
			if isList {
				t.Fatalf("refused an EventList with %d items: %v", len(ref.Items), err)
			}
			if events != nil || skipped != nil {
				t.Fatal("events returned with an error")
			}
			return
		}
		if refErr == nil && !isList {
			t.Fatalf("accepted kind %q apiVersion %q", ref.Kind, ref.APIVersion)
		}
		n := len(events)
		for reason, k := range skipped {
			if reason == "" || k <= 0 {
				t.Fatalf("skipped %v", skipped)
			}
			n += k
		}
		if refErr == nil && n != len(ref.Items) {
			t.Fatalf("%d items: %d events and %v skipped", len(ref.Items), len(events), skipped)
		}
		if refErr == nil {
			sameAsReference(t, events, ref.Items)
		}
		for i := range events {
			ev := &events[i]
			if ev.AuditID == "" || ev.Stage == "" || ev.Verb == "" || ev.StageTimestamp.IsZero() ||
				ev.StageTimestamp.After(fuzzNow.Add(24*time.Hour)) {
				t.Fatalf("invalid event returned: %+v", ev)
			}
		}
		// What the decoder lets through must convert without panicking, into
		// rows the store can take.
		if _, err := pipe.Process(context.Background(), "default", events, skipped); err != nil {
			t.Fatalf("process: %v", err)
		}
	})
}

// sameAsReference checks the fast decoder against encoding/json: every item
// that encoding/json decodes into a valid event is returned, equal, in order.
// The fast decoder may accept more (it reads timestamps as RFC 3339 with any
// fraction of a second, where metav1.MicroTime wants six digits), never less.
func sameAsReference(t *testing.T, events []auditv1.Event, items []json.RawMessage) {
	t.Helper()
	j := 0
	for _, raw := range items {
		var want auditv1.Event
		if json.Unmarshal(raw, &want) != nil || want.AuditID == "" || want.Stage == "" || want.Verb == "" ||
			want.StageTimestamp.IsZero() || want.StageTimestamp.Time.Before(time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC)) ||
			want.StageTimestamp.Time.After(fuzzNow.Add(24*time.Hour)) ||
			want.ResponseStatus != nil && (want.ResponseStatus.Code < 0 || want.ResponseStatus.Code > 999) {
			continue
		}
		for ; j < len(events); j++ {
			// The decoder leaves invalid UTF-8 in place (equalEvents), the
			// auditID's too.
			if string(validUTF8([]byte(events[j].AuditID))) == string(want.AuditID) && equalEvents(&events[j], &want) {
				break
			}
		}
		if j == len(events) {
			t.Fatalf("item %s: encoding/json decodes it as %+v, the decoder returned no equal event", raw, want)
		}
		j++
	}
}

func equalEvents(got, want *auditv1.Event) bool {
	g, w := *got, *want
	if !g.StageTimestamp.Equal(&w.StageTimestamp) || !g.RequestReceivedTimestamp.Equal(&w.RequestReceivedTimestamp) {
		return false
	}
	g.StageTimestamp, w.StageTimestamp = metav1.MicroTime{}, metav1.MicroTime{}
	g.RequestReceivedTimestamp, w.RequestReceivedTimestamp = metav1.MicroTime{}, metav1.MicroTime{}
	// The decoder leaves invalid UTF-8 in place, for the store to replace
	// and count; encoding/json replaces it in strings, one U+FFFD per
	// byte, and leaves raw objects be. Compared with it replaced in both.
	for _, e := range []*auditv1.Event{&g, &w} {
		for _, u := range []**runtime.Unknown{&e.RequestObject, &e.ResponseObject} {
			if *u != nil {
				c := **u
				c.Raw = validUTF8(c.Raw)
				*u = &c
			}
		}
	}
	g = *validStrings(reflect.ValueOf(&g)).Interface().(*auditv1.Event)
	return reflect.DeepEqual(g, w)
}

// validStrings returns a copy of v (a pointer, struct, slice, map or
// string) with the invalid UTF-8 of its strings replaced as encoding/json
// replaces it.
func validStrings(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(string(validUTF8([]byte(v.String()))))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(validStrings(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if out.Field(i).CanSet() && v.Type().Field(i).Type != reflect.TypeFor[[]byte]() {
				out.Field(i).Set(validStrings(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(validStrings(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(validStrings(it.Key()), validStrings(it.Value()))
		}
		return out
	}
	return v
}

func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// checkingWriter checks the invariants of the batches the pipeline writes.
type checkingWriter struct{}

func (checkingWriter) WriteBatch(_ context.Context, b *model.Batch) (model.WriteResult, error) {
	for i := range b.Events {
		e := &b.Events[i]
		if e.Cluster != "default" || len(e.Key) != 32 || e.StageAt.IsZero() {
			return model.WriteResult{}, errors.New("event row without cluster, key or time")
		}
		if e.RequestObject != nil && !json.Valid(e.RequestObject) {
			return model.WriteResult{}, errors.New("request object is not JSON")
		}
	}
	for i := range b.Versions {
		v := &b.Versions[i]
		if v.UID == "" || v.Cluster == "" || len(v.Key) == 0 {
			return model.WriteResult{}, errors.New("version row without uid or key")
		}
		if v.Object != nil && !json.Valid(v.Object) {
			return model.WriteResult{}, errors.New("object is not JSON")
		}
	}
	return model.WriteResult{Events: len(b.Events)}, nil
}

func TestFuzzSeedsAreRealEventLists(t *testing.T) {
	t.Parallel()
	kept := 0
	for _, s := range fuzzSeeds(t)[:14] {
		events, skipped, err := decode.EventList(s, fuzzNow)
		if err != nil || len(skipped) > 0 || len(events) == 0 {
			t.Fatalf("seed %.200s: %d events, skipped %v, %v", s, len(events), skipped, err)
		}
		kept += len(events)
	}
	if kept != 26 {
		t.Errorf("%d events in the generated seeds, want 26", kept)
	}
}
