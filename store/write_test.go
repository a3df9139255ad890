package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store/model"
)

// TestDuplicateLookupPrunesPartitions: every batch looks up its events
// before storing them. With 40 days of partitions kept, that lookup must be
// planned over the partitions of the batch's days only, not all of them.
func TestDuplicateLookupPrunesPartitions(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var days []time.Time
	for i := range 40 {
		days = append(days, now.AddDate(0, 0, -i))
	}
	if err := s.EnsurePartitionsFor(ctx, days); err != nil {
		t.Fatal(err)
	}
	var events []model.Event
	for i := range 50 {
		k := sha256.Sum256(fmt.Append(nil, i))
		events = append(events, model.Event{Cluster: "default", Key: k[:], StageAt: now.Add(-time.Duration(i) * time.Millisecond)})
	}
	// The lookup's own statement and arguments, explained.
	var plan []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		plan, err = explainExistingEvents(ctx, tx, events)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[string]bool{}
	for _, line := range plan {
		for f := range strings.FieldsSeq(line) {
			if strings.HasPrefix(f, "events_p") {
				scanned[f] = true
			}
		}
	}
	if len(scanned) == 0 || len(scanned) > 2 {
		t.Errorf("the lookup of a batch of one day touches %d partitions, want 1 or 2:\n%s", len(scanned), strings.Join(plan, "\n"))
	}
	// And it still finds what is stored.
	b := &model.Batch{Events: events[:3]}
	for i := range b.Events {
		b.Events[i].Verb, b.Events[i].Stage, b.Events[i].AuditID = "create", "ResponseComplete", fmt.Sprint(i)
	}
	if _, err := s.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	res, err := s.WriteBatch(ctx, &model.Batch{Events: events[:5]})
	if err != nil {
		t.Fatal(err)
	}
	if res.DuplicateEvents != 3 || res.Events != 2 {
		t.Errorf("redelivery of 3 stored events and 2 new: %+v", res)
	}
}

// explainExistingEvents is the plan of existingEvents' statement for events.
func explainExistingEvents(ctx context.Context, tx pgx.Tx, events []model.Event) ([]string, error) {
	rows, err := tx.Query(ctx, "EXPLAIN "+existingEventsSQL, existingEventsArgs(events)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// TestCopyRowsWritesWhatWriteBatchWrites: the benchmark's reference writer
// stores with CopyRows, and is only a fair floor if its rows are the
// sink's. They are, column for column; and only WriteBatch takes a
// redelivery.
func TestCopyRowsWritesWhatWriteBatchWrites(t *testing.T) {
	ctx := context.Background()
	sink, ref := openStore(t), openStore(t)
	// What the pipeline writes: changes (baselines go through WriteBaseline).
	var changes []change
	for _, c := range lifecycle {
		if !c.baseline {
			changes = append(changes, c)
		}
	}
	b := batchOf(changes...)
	if err := sink.EnsurePartitionsAround(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if err := ref.EnsurePartitionsAround(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	copyOnce := func() {
		t.Helper()
		b := batchOf(changes...)
		if err := pgx.BeginFunc(ctx, ref.pool, func(tx pgx.Tx) error {
			_, _, err := CopyRows(ctx, tx, &b)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	copyOnce()
	const rowsSQL = `
SELECT coalesce(array_agg(r ORDER BY r), '{}') FROM (
  SELECT (to_jsonb(e) - 'ingested_at')::text AS r FROM events e
  UNION ALL
  SELECT to_jsonb(v)::text FROM object_versions v) rows`
	rows := func(s *Store) []string {
		t.Helper()
		var out []string
		if err := s.Pool().QueryRow(ctx, rowsSQL).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := rows(sink)
	if len(want) < len(changes) {
		t.Fatalf("the sink stored %d rows for %d changes", len(want), len(changes))
	}
	if got := rows(ref); !slices.Equal(got, want) {
		t.Errorf("CopyRows stored other rows than WriteBatch:\n got %q\nwant %q", got, want)
	}
	// A redelivery: WriteBatch stores nothing more; CopyRows fails on the
	// primary key.
	again := batchOf(changes...)
	if _, err := sink.WriteBatch(ctx, &again); err != nil {
		t.Fatal(err)
	}
	if got := rows(sink); len(got) != len(want) {
		t.Errorf("WriteBatch of a redelivery: %d rows, want %d", len(got), len(want))
	}
	b = batchOf(changes...)
	err := pgx.BeginFunc(ctx, ref.pool, func(tx pgx.Tx) error {
		_, _, err := CopyRows(ctx, tx, &b)
		return err
	})
	if !isConflict(err) {
		t.Errorf("CopyRows of a redelivery: %v, want a unique violation (it does not look up what is stored)", err)
	}
	if got := rows(ref); len(got) != len(want) {
		t.Errorf("after CopyRows of a redelivery: %d rows, want %d", len(got), len(want))
	}
}

// TestABaselineStateIsReadableAndExact: a listed object holding a NUL (a
// ConfigMap made from a file) is stored as a baseline that every query
// reads as jsonb, and given back to the restore exactly as listed.
func TestABaselineStateIsReadableAndExact(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	raw := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-file","namespace":"prod","uid":"u-ff","resourceVersion":"42"},"data":{"k":"a\u0000b"}}`)
	v, err := model.BaselineVersion(model.BaselineObject{Cluster: "default", Resource: "configmaps", APIVersion: "v1", Raw: raw,
		ObservedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.WriteBaseline(ctx, []model.Version{v}); err != nil || n != 1 {
		t.Fatalf("write baseline: %d %v", n, err)
	}
	var k string
	if err := s.Pool().QueryRow(ctx, `SELECT object::jsonb->'data'->>'k' FROM object_versions WHERE uid = 'u-ff'`).Scan(&k); err != nil || k != "a\uFFFDb" {
		t.Errorf("the baseline read as jsonb: %q %v", k, err)
	}
	got, err := s.Objects(ctx, "default", []string{"u-ff"}, [][]byte{v.Key})
	if err != nil {
		t.Fatal(err)
	}
	if state := got[ObjectID("u-ff", v.Key)]; !strings.Contains(string(state), `"k":"a\u0000b"`) {
		t.Errorf("the state given back: %s", state)
	}
}

// TestIngestedAtIsTheTransactionTime: the batch writes each event's
// ingested_at itself (the tamper-evident log's digest covers it), and it
// is what the column's default gave: the transaction's now(), for
// WriteBatch's write and for CopyRows.
func TestIngestedAtIsTheTransactionTime(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	if err := s.EnsurePartitionsAround(ctx, t0); err != nil {
		t.Fatal(err)
	}
	var changes []change
	for _, c := range lifecycle {
		if !c.baseline {
			changes = append(changes, c)
		}
	}
	for name, write := range map[string]func(pgx.Tx, *model.Batch) error{
		"WriteBatch": func(tx pgx.Tx, b *model.Batch) error {
			_, err := writeBatch(ctx, tx, b, false, rowDigests{}, s.log)
			return err
		},
		"CopyRows": func(tx pgx.Tx, b *model.Batch) error {
			_, _, err := CopyRows(ctx, tx, b)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := batchOf(changes...)
			tx, err := s.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if err := write(tx, &b); err != nil {
				t.Fatal(err)
			}
			var n int
			var same bool
			err = tx.QueryRow(ctx, "SELECT count(*), bool_and(ingested_at = now()) FROM events").Scan(&n, &same)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b.Events) || n == 0 || !same {
				t.Errorf("%d events (want %d), all ingested at the transaction's now(): %v", n, len(b.Events), same)
			}
		})
	}
}
