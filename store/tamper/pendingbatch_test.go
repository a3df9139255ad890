package tamper

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store/pgtest"
)

// TestPendingBatchRows: a batch's transaction writes one
// log_pending_batches row per cluster, with a reference per row it stored
// (each version's digest, no event's), and none when it stores nothing (a
// redelivery); a pass takes a batch whole, even past MaxLeaves.
func TestPendingBatchRows(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	b := e.batch("a", now, 3)
	o := e.batch("b\n/..", now, 2)
	b.Events, b.Versions = append(b.Events, o.Events...), append(b.Versions, o.Versions...)
	e.write(b)
	if n := e.count(`SELECT count(*) FROM log_pending_batches`); n != 2 {
		t.Fatalf("%d pending batch rows, want 2 (one per cluster)", n)
	}
	if n := e.count(`SELECT count(*) FROM log_pending`); n != 0 {
		t.Errorf("%d log_pending rows, want none", n)
	}
	for _, c := range []struct {
		cluster string
		rows    int
	}{{"a", 6}, {"b\n/..", 4}} {
		if n := e.count(`SELECT count(*) FROM log_pending_rows WHERE cluster = $1`, c.cluster); n != c.rows {
			t.Errorf("cluster %q: %d pending rows, want %d", c.cluster, n, c.rows)
		}
		// Every row has its digest: a version's always, an event's when the
		// sink prints its jsonb for sure, as here (TestPendingDigestIsStoredRows).
		if n := e.count(`SELECT count(*) FROM log_pending_rows WHERE cluster = $1 AND digest IS NULL`, c.cluster); n != 0 {
			t.Errorf("cluster %q: %d pending rows without a digest, want none", c.cluster, n)
		}
	}
	if rep := e.verify(false); !rep.OK() || rep.Clusters[0].Pending != 6 {
		t.Fatalf("verify with the batch pending: %+v\n%s", rep.Clusters, problems(rep))
	}
	e.write(b) // redelivered: stores nothing
	if n := e.count(`SELECT count(*) FROM log_pending_batches`); n != 2 {
		t.Errorf("%d pending batch rows after a redelivery, want 2", n)
	}
	e.in.o.MaxLeaves = 2
	n, err := e.in.Integrate(context.Background(), "a")
	if err != nil || n != 6 {
		t.Fatalf("a pass of MaxLeaves 2 took %d rows (%v), want the batch's 6", n, err)
	}
	if n := e.count(`SELECT cardinality(kinds) FROM log_segments WHERE cluster = 'a'`); n != 6 {
		t.Errorf("a segment of %d leaves, want 6", n)
	}
	e.integrate()
	if n := e.count(`SELECT count(*) FROM log_pending_batches`); n != 0 {
		t.Errorf("%d pending batch rows after the passes", n)
	}
	e.write(b)
	if n := e.count(`SELECT count(*) FROM log_pending_rows`); n != 0 {
		t.Errorf("%d pending rows after a redelivery of a logged batch, want none", n)
	}
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Rows != 6 || rep.Clusters[1].Rows != 4 {
		t.Fatalf("verify: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestCutoffAfterOlderPendingBatch: a retention cutoff is logged after the
// leaves of every pending row older than it, even when a pass does not take
// all of the pending batches (MaxLeaves): else verify, after retention
// deletes those rows, finds them missing with no cutoff logged after them.
func TestCutoffAfterOlderPendingBatch(t *testing.T) {
	e := newEnv(t) // MaxLeaves 7
	now := time.Now()
	cutoff := now.AddDate(0, 0, -8)
	e.write(e.batch("default", now, 2)) // the rows that justify the cutoff
	e.integrate()
	// Older rows, delivered late (a journal replayed).
	e.write(e.batch("default", now.AddDate(0, 0, -10), 4)) // 8 rows: a pass of its own
	e.write(e.batch("default", now.AddDate(0, 0, -9), 2))
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)`, cutoff)
	if _, err := e.in.Integrate(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM log_pending WHERE kind = 3`); n != 1 {
		t.Errorf("the first pass logged the cutoff, though a batch older than it is pending")
	}
	e.integrate()
	var at, after int
	if err := e.st.Pool().QueryRow(context.Background(), `
SELECT (SELECT max(log_index) FROM log_leaves WHERE row_table <> 'retention_cutoff' AND at < $1),
       (SELECT log_index FROM log_leaves WHERE row_table = 'retention_cutoff')`, cutoff).Scan(&at, &after); err != nil {
		t.Fatal(err)
	}
	if after < at {
		t.Errorf("the cutoff is leaf %d, before leaf %d of a row older than it", after, at)
	}
	// Retention deletes what the cutoff covers: verify accepts it.
	e.exec(`DELETE FROM events WHERE stage_at < $1`, cutoff)
	e.exec(`DELETE FROM object_versions WHERE changed_at < $1`, cutoff)
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Retained != 12 || rep.Clusters[0].Rows != 4 {
		t.Fatalf("verify after retention: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestCutoffAfterBatchCommittedMidPass: a batch committed while a pass
// runs, after it took the pending batches, holds rows older than a pending
// cutoff: the pass leaves the cutoff for the pass that logs that batch.
func TestCutoffAfterBatchCommittedMidPass(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	cutoff := now.AddDate(0, 0, -8)
	e.write(e.batch("default", now, 2)) // the rows that justify the cutoff
	e.integrate()
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)`, cutoff)
	late := e.batch("default", now.AddDate(0, 0, -9), 2)
	e.in.afterBatches = func(context.Context) { e.write(late) }
	if _, err := e.in.Integrate(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	e.in.afterBatches = nil
	if n := e.count(`SELECT count(*) FROM log_pending WHERE kind = 3`); n != 1 {
		t.Errorf("the pass logged the cutoff, though a batch older than it was committed before its drain of the cutoffs")
	}
	e.integrate()
	e.exec(`DELETE FROM events WHERE stage_at < $1`, cutoff)
	e.exec(`DELETE FROM object_versions WHERE changed_at < $1`, cutoff)
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Retained != 4 || rep.Clusters[0].Rows != 4 {
		t.Fatalf("verify after retention: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestPlantedPendingBatchStopsNothing: a log_pending_batches row with a
// NULL reference or a second dimension is refused by its CHECK; one
// planted with the CHECK dropped (its owner, the ingest role, may) is
// skipped by the integrator and by verify, which go on with the rest.
func TestPlantedPendingBatchStopsNothing(t *testing.T) {
	planted := []string{
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{2}', '{NULL}', ARRAY['\x00'::bytea], ARRAY[now()])`,
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{2}', '{u}', ARRAY['\x00'::bytea], ARRAY[NULL::timestamptz])`,
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{2}', '{u}', ARRAY[NULL::bytea], ARRAY[now()])`,
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{{2},{2}}', '{u,v}', ARRAY['\x00'::bytea,'\x01'], ARRAY[now(),now()])`,
	}
	e := newEnv(t)
	ctx := context.Background()
	for _, q := range planted {
		if _, err := e.st.Pool().Exec(ctx, q); err == nil {
			t.Errorf("the CHECK took %s", q)
		}
	}
	e.exec(`DO $$ DECLARE c text; BEGIN
		FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'log_pending_batches'::regclass AND contype = 'c' LOOP
			EXECUTE format('ALTER TABLE log_pending_batches DROP CONSTRAINT %I', c);
		END LOOP; END $$`)
	e.exec(`ALTER TABLE log_pending_batches ALTER COLUMN first_at DROP NOT NULL`) // a NULL time: no first_at (migration 00033)
	for _, q := range planted {
		e.exec(q)
	}
	// A time of infinity (refused since migration 00031, whose CHECK is
	// dropped above with the others) is no time.Time: the integrator skips
	// it too (and verify: TestVerifyInfinitePendingTime).
	e.exec(`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{2}', '{u}', ARRAY['\x00'::bytea], ARRAY['infinity'::timestamptz])`)
	e.write(e.batch("default", time.Now(), 2))
	for range 2 { // two ticks: a pass takes batches up to MaxLeaves
		if err := e.in.IntegrateAll(ctx); err != nil {
			t.Fatalf("passes with planted batch rows: %v", err)
		}
	}
	if n := e.count(`SELECT count(*) FROM log_pending_batches`); n != 0 {
		t.Errorf("%d batch rows left after the passes, want none", n)
	}
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier})
	if err != nil || !rep.OK() || rep.Clusters[0].Rows != 4 {
		t.Fatalf("verify: %v %+v\n%s", err, rep.Clusters, problems(rep))
	}
	for _, q := range planted { // pending, while verify runs
		e.exec(q)
	}
	if rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier}); err != nil || !rep.OK() {
		t.Fatalf("verify with planted batch rows pending: %v\n%s", err, problems(rep))
	}
}

// TestSimpleProtocol: with default_query_exec_mode=simple_protocol in the
// URL (what a pgbouncer in transaction mode needs), pgx encodes every
// parameter in the text format, naming no type: the batches' pending rows
// and the passes' segments (store/pgarray arrays) are written, logged and
// verified as with the extended protocol. Without the types registered
// (store.Connect), every batch failed: "unable to encode
// pgarray.Array[...Text] ... into text format for unknown type (OID 0)".
func TestSimpleProtocol(t *testing.T) {
	url := pgtest.NewDatabase(t)
	if strings.Contains(url, "://") {
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		url += sep + "default_query_exec_mode=simple_protocol"
	} else {
		url += " default_query_exec_mode=simple_protocol"
	}
	e := newEnvAt(t, url)
	b := e.batch("default", time.Now(), 3)
	b.Events[1].Annotations = []byte(`{"n":1.5}`) // no digest: a NULL element
	e.write(b)
	e.integrate()
	if n := e.count("SELECT count(*) FROM log_leaves WHERE cluster = 'default'"); n != 6 {
		t.Errorf("%d leaves; want the batch's 6 rows", n)
	}
	if rep := e.verify(true); !rep.OK() {
		t.Errorf("verify: %s", problems(rep))
	}
}
