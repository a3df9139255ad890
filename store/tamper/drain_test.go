package tamper

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/tamper/refpack"
)

// planRows is the rows every node of an EXPLAIN (ANALYZE, FORMAT JSON)
// plan produced, over all its loops: the work of a query, counted, not
// timed.
func planRows(t *testing.T, tx pgx.Tx, sql string, args ...any) float64 {
	t.Helper()
	var out []struct{ Plan json.RawMessage }
	var b []byte
	if err := tx.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&b); err != nil {
		t.Fatalf("explain %s: %v", sql, err)
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out) != 1 {
		t.Fatalf("explain %s: %v %s", sql, err, b)
	}
	type node struct {
		Rows  float64 `json:"Actual Rows"`
		Loops float64 `json:"Actual Loops"`
		Plans []json.RawMessage
	}
	var walk func(json.RawMessage) float64
	walk = func(m json.RawMessage) float64 {
		var n node
		if err := json.Unmarshal(m, &n); err != nil {
			t.Fatal(err)
		}
		sum := n.Rows * n.Loops
		for _, c := range n.Plans {
			sum += walk(c)
		}
		return sum
	}
	return walk(out[0].Plan)
}

// TestDrainReadsNoBacklog: a pass over a backlog of pending batches reads
// the batches it takes, not every pending batch's times (which made
// catching a backlog up quadratic in it): its two drains, over 200
// batches of 50 rows, produce fewer rows than 10 a batch (they unnested
// each batch's 50 times: 20000 rows). And first_at is the earliest of a
// batch's times, its NULL elements left out.
func TestDrainReadsNoBacklog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const batches, rows = 200, 50
	e.exec(`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats)
		SELECT 'default', array_fill(2::smallint, ARRAY[$2::int]), array_fill('u'::text, ARRAY[$2::int]),
			ARRAY(SELECT int8send(b * 1000 + i) FROM generate_series(1, $2::int) i),
			ARRAY(SELECT now() - interval '1 hour' + ((b * $2::int + i) % 7919) * interval '1 ms' FROM generate_series(1, $2::int) i)
		FROM generate_series(1, $1::int) b`, batches, rows)
	e.exec(`ANALYZE log_pending_batches`)
	// Batches of arrays, as an older replica writes them: the trigger of
	// migration 00033 gives them their first_at and ref_count.
	if n := e.count(`SELECT count(*) FROM log_pending_batches WHERE first_at IS DISTINCT FROM (SELECT min(a) FROM unnest(ats) a)
		OR ref_count IS DISTINCT FROM cardinality(kinds)`); n != 0 {
		t.Errorf("%d batches whose first_at is not their earliest time, or ref_count their size", n)
	}
	tx, err := e.st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	work := planRows(t, tx, drainBatchesSQL, "default", 2*rows, refpack.MaxBytes, refpack.MaxRows) +
		planRows(t, tx, drainSQL, "default", 2*rows, time.Now())
	if work >= 10*batches {
		t.Errorf("a pass taking 2 of %d pending batches of %d rows: its drains produce %.0f rows, want fewer than %d", batches, rows, work, 10*batches)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// With a NULL time among them (a batch planted with the CHECK dropped).
	e.exec(`ALTER TABLE log_pending_batches DROP CONSTRAINT log_pending_batches_check`)
	e.exec(`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('null', '{2,2}', '{u,u}', ARRAY['\x00'::bytea, '\x01'], ARRAY[NULL, '2026-01-02']::timestamptz[])`)
	if n := e.count(`SELECT count(*) FROM log_pending_batches WHERE cluster = 'null' AND first_at = '2026-01-02'`); n != 1 {
		t.Error("first_at of a batch with a NULL time is not its earliest non-NULL time")
	}
}
