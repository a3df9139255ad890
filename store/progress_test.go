package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

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

// TestProgressNeverAheadOfDelivery: an event stamped in the future (a
// skewed clock, or a forged delivery) counts as delivered when it was, not
// when it claims: otherwise, as the time never moves back, the source
// would look current for ever. A row an older release wrote that way heals
// on read and at the next write.
func TestProgressNeverAheadOfDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	st, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	future := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	newest := func(cluster string) time.Time {
		t.Helper()
		ps, err := st.Progress(ctx, cluster)
		if err != nil || len(ps) != 1 {
			t.Fatalf("progress of %s: %v, %v; want one row", cluster, ps, err)
		}
		return ps[0].NewestEventAt.UTC()
	}
	if err := st.RecordProgress(ctx, "c", "firehose", future, t0); err != nil {
		t.Fatal(err)
	}
	if got := newest("c"); !got.Equal(t0) {
		t.Errorf("an event stamped %v delivered at %v: newest %v; want %v", future, t0, got, t0)
	}
	if err := st.RecordProgress(ctx, "c", "firehose", t0.Add(time.Minute), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := newest("c"); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("after a true delivery: newest %v; want %v", got, t0.Add(time.Minute))
	}

	// A row as an older release wrote it: the future time kept.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO source_progress (cluster, source, newest_event_at, delivered_at)
		VALUES ('old', 'pubsub', $1, $2)`, future, t0); err != nil {
		t.Fatal(err)
	}
	if got := newest("old"); !got.Equal(t0) {
		t.Errorf("a row stamped in the future, read: newest %v; want its delivery %v", got, t0)
	}
	if err := st.RecordProgress(ctx, "old", "pubsub", t0.Add(time.Minute), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := newest("old"); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("a row stamped in the future, written again: newest %v; want %v", got, t0.Add(time.Minute))
	}
}
