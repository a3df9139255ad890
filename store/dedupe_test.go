package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// TestBatchWithAnEventTwice: a batch holding the same event twice (the
// journal merges a batch with its redelivery into one write) stores it
// once, also when its version is a delete, which has no resourceVersion to
// be found by.
func TestBatchWithAnEventTwice(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	b := &model.Batch{}
	for range 2 {
		for _, c := range []struct {
			id      string
			rv      int64
			deleted bool
		}{{"upd", 5, false}, {"del", 0, true}} {
			e, v := change(c.id, "obj-"+c.id, at, c.rv, c.deleted)
			b.Events, b.Versions = append(b.Events, e...), append(b.Versions, v...)
		}
	}
	res, err := st.WriteBatch(ctx, b)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if res.Events != 2 || res.Versions != 2 || res.DuplicateEvents != 2 {
		t.Errorf("result %+v, want 2 events, 2 versions, 2 duplicates", res)
	}
}

// TestK8sTime: the deletions view reads creationTimestamp with k8s_time,
// which gives NULL for what is not a time instead of failing the query.
func TestK8sTime(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for in, want := range map[string]string{
		"2026-11-21T10:00:00Z":      "2026-11-21T10:00:00Z",
		"2026-11-21T12:00:00+02:00": "2026-11-21T10:00:00Z",
		"2026-13-01T00:00:00Z":      "", // month 13
		"2026-11-21T10:00:99Z":      "",
		"yesterday":                 "",
	} {
		var got *time.Time
		if err := st.Pool().QueryRow(ctx, "SELECT k8s_time($1)", in).Scan(&got); err != nil {
			t.Errorf("k8s_time(%q): %v", in, err)
			continue
		}
		if (got == nil) != (want == "") || got != nil && got.UTC().Format(time.RFC3339) != want {
			t.Errorf("k8s_time(%q) = %v, want %q", in, got, want)
		}
	}
}
