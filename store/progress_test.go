package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// TestProgressNeverMovesBack: a late write of an older delivery (another
// replica's) leaves the newer times; each cluster has its own.
func TestProgressNeverMovesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	writes := []struct {
		cluster, source   string
		newest, delivered time.Time
	}{
		{"c", "firehose", t0.Add(2 * time.Minute), t0.Add(5 * time.Minute)},
		{"c", "firehose", t0, t0.Add(6 * time.Minute)},                      // older events, later delivery
		{"c", "firehose", t0.Add(3 * time.Minute), t0.Add(4 * time.Minute)}, // newer events, written late
		{"c", "webhook", t0.Add(time.Minute), t0.Add(time.Minute)},
		{"other", "firehose", t0.Add(time.Hour), t0.Add(time.Hour)},
	}
	for _, w := range writes {
		if err := st.RecordProgress(ctx, w.cluster, w.source, w.newest, w.delivered); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Progress(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].NewestEventAt, got[i].DeliveredAt = got[i].NewestEventAt.UTC(), got[i].DeliveredAt.UTC()
	}
	want := []store.SourceProgress{
		{Source: "firehose", NewestEventAt: t0.Add(3 * time.Minute), DeliveredAt: t0.Add(6 * time.Minute)},
		{Source: "webhook", NewestEventAt: t0.Add(time.Minute), DeliveredAt: t0.Add(time.Minute)},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("progress of c (-want +got):\n%s", d)
	}
	if none, err := st.Progress(ctx, "unknown"); err != nil || len(none) != 0 {
		t.Errorf("progress of a cluster never delivered: %v, %v; want none", none, err)
	}
}
