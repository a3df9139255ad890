package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/options-record/options-record/store/model"
)

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fill sets every exported field under v, recursively, to a value that is
// not zero and differs from the others (n counts them), so that a field the
// journal does not carry, or carries into another, shows in a diff.
func fill(t *testing.T, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, *n, *n*1001, time.UTC)))
		return
	case v.Type() == rawType, v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		// Bytes that are also JSON: the store keeps some as json columns.
		v.SetBytes(fmt.Appendf(nil, `{"field":%q,"n":%d}`, path, *n))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", path, *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path, n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), fmt.Sprintf("%s[%d]", path, i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+".key", n)
		fill(t, e, path+".value", n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				t.Fatalf("%s.%s: cannot fill an unexported field; teach fill this type", path, f.Name)
			}
			fill(t, v.Field(i), path+"."+f.Name, n)
		}
	default:
		t.Fatalf("%s: cannot fill a %s; teach fill this kind", path, v.Type())
	}
}

// fullBatch is a batch with every field of every event and version set.
func fullBatch(t *testing.T) *model.Batch {
	t.Helper()
	var b model.Batch
	n := 0
	fill(t, reflect.ValueOf(&b).Elem(), "Batch", &n)
	b.Retained = false // the writers' bookkeeping, not data to journal
	return &b
}

// TestRecordCarriesEveryField journals a batch with every field of
// model.Batch, model.Event and model.Version set and drains it: what the
// store gets must be what was written. A field added to the store's types
// and not to batchRecord and its conversions fails here.
func TestRecordCarriesEveryField(t *testing.T) {
	t.Parallel()
	want := fullBatch(t)

	rec, err := encodeRecord(want, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePayload(rec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("record round trip (-want +got):\n%s", diff)
	}

	c := &capture{}
	sw := &switchable{Writer: c}
	sw.down.Store(true)
	j := open(t, t.TempDir(), sw, Options{RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if _, err := j.WriteBatch(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	if j.Backlog() != 1 {
		t.Fatalf("backlog %d, want the batch journaled", j.Backlog())
	}
	sw.down.Store(false)
	run(t, j)
	waitDrained(t, j)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.batches) != 1 {
		t.Fatalf("drained %d batches, want 1", len(c.batches))
	}
	if diff := cmp.Diff(want, c.batches[0]); diff != "" {
		t.Errorf("journaled and drained (-want +got):\n%s", diff)
	}
}

// TestRecordFieldsHaveTags: every field of the record types is named on
// disk by its tag, never by its Go name.
func TestRecordFieldsHaveTags(t *testing.T) {
	t.Parallel()
	for _, typ := range []reflect.Type{
		reflect.TypeFor[batchRecord](), reflect.TypeFor[eventRecord](), reflect.TypeFor[versionRecord](),
		reflect.TypeFor[batchV1](), reflect.TypeFor[eventV1](), reflect.TypeFor[versionV1](),
	} {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Errorf("%s.%s has no JSON name", typ.Name(), f.Name)
			}
		}
	}
}
