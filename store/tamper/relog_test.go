package tamper

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// cutoffLeaves is how many retention cutoffs a cluster's log holds.
func (e *env) cutoffLeaves(cluster string) int {
	e.t.Helper()
	return e.count("SELECT count(*) FROM log_leaves WHERE cluster = $1 AND row_table = 'retention_cutoff'", cluster)
}

// TestLateRowsOlderThanACutoff: a batch older than the retention cutoff
// already logged (an import of old records, a retention shortened since)
// commits after the cutoff's pass, so its leaves are logged after the
// cutoff. Retention then deletes its rows, as they are older than the
// cutoff: the pass that logged them logged the cutoff again after them,
// so a full and an incremental verify count them as retained, not
// removed by someone.
func TestLateRowsOlderThanACutoff(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	e.write(e.batch("default", now.AddDate(0, 0, -10), 2))
	e.write(e.batch("default", now.Add(-time.Minute), 2))
	e.integrate()
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.in.Run(runCtx) })
	_, err := e.st.ApplyRetention(ctx, now, 5*24*time.Hour)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-5 * 24 * time.Hour)
	rep := e.verify(true)
	if !rep.OK() || len(rep.Clusters) != 1 || rep.Clusters[0].Checkpoint == nil {
		t.Fatalf("verify after retention: %+v\n%s", rep.Clusters, problems(rep))
	}
	since := rep.Clusters[0].Checkpoint

	// The late batch: rows of 8 days ago, and one of now.
	e.write(e.batch("default", now.AddDate(0, 0, -8), 3))
	e.write(e.batch("default", now, 1))
	e.integrate()
	// Retention deletes what is older than its cutoff (verify does not
	// check which of those rows it removes: a cutoff says they may be gone).
	e.exec("DELETE FROM events WHERE cluster = 'default' AND stage_at < $1", cutoff)
	e.exec("DELETE FROM object_versions WHERE cluster = 'default' AND changed_at < $1", cutoff)

	full := e.verify(true)
	if !full.OK() {
		t.Errorf("full verify after late rows older than the cutoff were deleted:\n%s", problems(full))
	}
	c := full.Clusters[0]
	// The 2 events and 2 versions of 10 days ago (retention dropped the
	// events' partition, the test deleted the versions), the 3 and 3 of 8
	// days ago.
	if c.Retained != 10 || len(c.Cutoffs) != 2 {
		t.Errorf("retained %d, cutoffs %+v; want 10, and the cutoff logged twice", c.Retained, c.Cutoffs)
	}
	for _, co := range c.Cutoffs {
		if !co.At.Equal(c.Cutoffs[0].At) || !co.Justified {
			t.Errorf("cutoff %+v: want the same cutoff, justified", co)
		}
	}
	inc, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Trusted: e.bucket, Since: map[string][]byte{"default": since}})
	if err != nil {
		t.Fatal(err)
	}
	if !inc.OK() {
		t.Fatalf("incremental verify after late rows older than the cutoff were deleted:\n%s", problems(inc))
	}
	if c := inc.Clusters[0]; !c.Incremental || c.Retained != 6 {
		t.Errorf("incremental: %v, retained %d; want incremental, the 6 late rows retained", c.Incremental, c.Retained)
	}
}

// TestRelogLooksUpOnlyForOldRows: a pass whose rows are all too new for
// any cutoff to cover makes no lookup; a pass with an older row looks up
// the newest cutoff logged (from the log size it last read: another
// replica's cutoffs too) and logs it again only when it covers a row.
func TestRelogLooksUpOnlyForOldRows(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now.Add(-time.Minute), 2))
	e.integrate()
	e.exec("INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)", now.AddDate(0, 0, -5))
	e.integrate()
	e.write(e.batch("default", now, 3))
	e.integrate()
	if n := e.in.cutoffLookups(); n != 0 {
		t.Fatalf("%d lookups of the newest cutoff for passes of new rows; want none", n)
	}
	// Older than a retention could have removed, newer than the cutoff.
	e.write(e.batch("default", now.Add(-2*time.Hour), 1))
	e.integrate()
	if n, c := e.in.cutoffLookups(), e.cutoffLeaves("default"); n != 1 || c != 1 {
		t.Fatalf("%d lookups, %d cutoffs logged; want 1 lookup, the cutoff not logged again", n, c)
	}
	// A row older than the cutoff, after a pass of new rows: the log read
	// from where the last lookup ended holds no cutoff, the one found then
	// is logged again.
	e.write(e.batch("default", now, 1))
	e.integrate()
	e.write(e.batch("default", now.AddDate(0, 0, -6), 1))
	e.integrate()
	if n, c := e.in.cutoffLookups(), e.cutoffLeaves("default"); n != 2 || c != 2 {
		t.Fatalf("%d lookups, %d cutoffs logged; want 2 lookups, the cutoff logged again", n, c)
	}
	// Another replica logs a later cutoff; a row older than it comes.
	other := e.integrator(e.signer)
	e.exec("INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)", now.AddDate(0, 0, -4))
	if _, err := other.Integrate(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	e.write(e.batch("default", now.AddDate(0, 0, -4).Add(-time.Hour), 1))
	e.integrate()
	if n, c := e.in.cutoffLookups(), e.cutoffLeaves("default"); n != 3 || c != 4 {
		t.Fatalf("%d lookups, %d cutoffs logged; want 3 lookups, the other replica's cutoff logged again", n, c)
	}
	var last time.Time
	if err := e.st.Pool().QueryRow(context.Background(),
		"SELECT at FROM log_leaves WHERE cluster = 'default' ORDER BY log_index DESC LIMIT 1").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if want := now.AddDate(0, 0, -4).Truncate(time.Microsecond); !last.Equal(want) {
		t.Errorf("the last leaf is of %s; want the cutoff of %s, logged again after the row", last, want)
	}
	rep := e.verify(true)
	if !rep.OK() {
		t.Fatalf("verify:\n%s", problems(rep))
	}
}

// TestRelogNeverLogsALaterCutoff: a cutoff later than the retention now
// allows (one an integrator logged before the check, or with its retention
// set wrong) is never logged again, however old the rows after it; one
// planted in log_pending is still refused.
func TestRelogNeverLogsALaterCutoff(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now.Add(-time.Minute), 2))
	e.integrate()
	e.exec("INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())")
	e.in.o.MinRetention = -100 * 365 * 24 * time.Hour // it logs any cutoff
	e.integrate()
	e.in.o.MinRetention = DefaultMinRetention
	if c := e.cutoffLeaves("default"); c != 1 {
		t.Fatalf("%d cutoffs logged; want the planted one", c)
	}
	e.exec("INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())")
	e.write(e.batch("default", now.AddDate(0, 0, -10), 2))
	e.integrate()
	e.integrate()
	if c, p := e.cutoffLeaves("default"), e.count("SELECT count(*) FROM log_pending WHERE kind = 3"); c != 1 || p != 1 || e.in.RefusedCutoffs() != 1 {
		t.Errorf("%d cutoffs logged, %d pending, %d refused; want the first only, the second pending and refused", c, p, e.in.RefusedCutoffs())
	}
	if n := e.in.cutoffLookups(); n == 0 {
		t.Errorf("no lookup of the newest cutoff for rows of ten days ago")
	}
}

// TestRelogLookupFailureStopsNothing: whoever writes the database edits
// the newest logged cutoff's time (NULL, infinity, or an ats array shorter
// than its kinds). The lookup for it then fails; the pass logs its rows
// without the cutoff again rather than fail, so that one edited cell
// does not stop the cluster's log (every later pass would fail on the
// same old row while new rows pile up unlogged). A full verify names the
// edited segment's leaf.
func TestRelogLookupFailureStopsNothing(t *testing.T) {
	for name, edit := range map[string]string{
		"null":     `UPDATE log_segments SET ats[array_position(kinds, 3::smallint)] = NULL WHERE cluster = 'default' AND 3::smallint = ANY(kinds)`,
		"infinity": `UPDATE log_segments SET ats[array_position(kinds, 3::smallint)] = 'infinity' WHERE cluster = 'default' AND 3::smallint = ANY(kinds)`,
		"short":    `UPDATE log_segments SET ats = ats[1:array_position(kinds, 3::smallint) - 1] WHERE cluster = 'default' AND 3::smallint = ANY(kinds)`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now()
			e.write(e.batch("default", now.Add(-time.Minute), 2))
			e.integrate()
			e.exec("INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)", now.AddDate(0, 0, -5))
			e.integrate()
			e.exec(edit)
			e.write(e.batch("default", now.AddDate(0, 0, -6), 1))
			e.write(e.batch("default", now, 1))
			if _, err := e.in.Integrate(context.Background(), "default"); err != nil {
				t.Fatalf("a pass after the newest cutoff was edited: %v", err)
			}
			if n := e.count("SELECT count(*) FROM log_pending_rows WHERE cluster = 'default'"); n != 0 {
				t.Errorf("%d rows left pending; want every row logged", n)
			}
			if n, all := e.in.relog.failures.Load(), e.in.Failures(); n != 1 || all != 1 {
				t.Errorf("%d failed lookups counted, %d failures in all; want 1, 1 (options_record_log_integration_failures_total)", n, all)
			}
			rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, Trusted: e.bucket})
			if err == nil && rep.OK() {
				t.Errorf("full verify passed on a log whose cutoff was edited")
			}
		})
	}
}

// TestIntegrationFailuresAreCounted: a pass that fails (here the segment's
// insert, refused by a constraint) is counted, and the time of the last
// run with no failure stays where it was until a run succeeds again: what
// options_record_log_integration_failures_total and
// options_record_log_integrated_timestamp_seconds show.
func TestIntegrationFailuresAreCounted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	e.write(e.batch("default", now, 2))
	if err := e.in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	first := e.in.Integrated()
	if first.IsZero() || e.in.Failures() != 0 {
		t.Fatalf("after a pass: integrated %v, %d failures; want a time, none", first, e.in.Failures())
	}
	e.exec("ALTER TABLE log_segments ADD CONSTRAINT refuse_all CHECK (false) NOT VALID")
	e.write(e.batch("default", now, 1))
	for range 2 {
		if err := e.in.IntegrateAll(ctx); err == nil {
			t.Fatal("a pass whose segment is refused did not fail")
		}
	}
	if n, at := e.in.Failures(), e.in.Integrated(); n != 2 || !at.Equal(first) {
		t.Errorf("after 2 failed runs: %d failures, integrated %v; want 2, still %v", n, at, first)
	}
	e.exec("ALTER TABLE log_segments DROP CONSTRAINT refuse_all")
	if err := e.in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	if at := e.in.Integrated(); !at.After(first) {
		t.Errorf("after a run that succeeded: integrated %v; want after %v", at, first)
	}
}

// TestPendingRowWithInfiniteTimeStopsNothing: a log_pending row whose time
// is infinity or -infinity (planted before migration 00031 refused them,
// as the constraint is NOT VALID) is taken out unlogged, and the cluster's
// other rows are logged: it stopped every pass of the cluster ("cannot
// scan Infinity into *time.Time"). The constraint refuses a new one.
func TestPendingRowWithInfiniteTimeStopsNothing(t *testing.T) {
	for name, ins := range map[string]string{
		"version at infinity": `INSERT INTO log_pending (cluster, kind, uid, key, at) VALUES ('default', 2, 'u', '\x01', 'infinity')`,
		"event at -infinity":  `INSERT INTO log_pending (cluster, kind, key, at) VALUES ('default', 1, '\x01', '-infinity')`,
		"cutoff at -infinity": `INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, '-infinity')`,
		"cutoff at infinity":  `INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, 'infinity')`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now()
			e.write(e.batch("default", now.Add(-time.Minute), 2))
			e.integrate()
			e.withoutFiniteChecks()
			e.exec(ins)
			e.exec("ALTER TABLE log_pending ADD CONSTRAINT log_pending_at_finite CHECK (isfinite(at)) NOT VALID")
			e.write(e.batch("default", now, 2))
			if _, err := e.in.Integrate(context.Background(), "default"); err != nil {
				t.Fatalf("a pass with the planted row pending: %v", err)
			}
			if n := e.count("SELECT count(*) FROM log_pending_rows WHERE cluster = 'default'"); n != 0 {
				t.Errorf("%d rows still pending; want every row logged or taken out", n)
			}
			if n := e.count("SELECT count(*) FROM log_leaves WHERE cluster = 'default'"); n != 8 {
				t.Errorf("%d leaves; want the 8 rows of the two batches", n)
			}
			_, err := e.st.Pool().Exec(context.Background(), ins)
			if err == nil {
				t.Errorf("migration 00031 took a new row at an infinite time")
			}
		})
	}
}

// TestLockHeldElsewhereIsAFailure: another session holds a cluster's
// integration lock (a stuck replica idle in its transaction, or anyone:
// pg_advisory_lock is granted to PUBLIC) and the log does not grow: after
// lockedOutAfter of passes finding it held one after the other, each
// counts as failed and the run as not done, so that the failures metric
// and the integrated time show a log that no longer logs.
func TestLockHeldElsewhereIsAFailure(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write(e.batch("default", time.Now(), 2))
	e.integrate()
	e.in.lockedOutFor = time.Hour
	conn, err := e.st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext($2))", lockClass, "default"); err != nil {
		t.Fatal(err)
	}
	e.write(e.batch("default", time.Now(), 1))
	if err := e.in.IntegrateAll(ctx); err != nil {
		t.Fatalf("the first pass that finds the lock held: %v", err)
	}
	done := e.in.Integrated()
	age := func(since, last time.Duration) { // as if the passes had found it held that long ago
		e.in.mu.Lock()
		l := e.in.lockedOutSince["default"]
		l.since, l.last = l.since.Add(-since), l.last.Add(-last)
		e.in.lockedOutSince["default"] = l
		e.in.mu.Unlock()
	}
	age(2*time.Hour, 0)
	if err := e.in.IntegrateAll(ctx); err == nil {
		t.Fatal("passes locked out for two hours, the log not grown since: no error")
	}
	if n, at := e.in.Failures(), e.in.Integrated(); n != 1 || !at.Equal(done) {
		t.Errorf("%d failures, integrated %v; want 1, still %v", n, at, done)
	}
	// The last pass that found it held was an hour ago: not one after the
	// other (the cluster had nothing pending in between), so no failure.
	age(2*time.Hour, time.Hour)
	if err := e.in.IntegrateAll(ctx); err != nil {
		t.Errorf("a pass locked out an hour after the last: %v", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1, hashtext($2))", lockClass, "default"); err != nil {
		t.Fatal(err)
	}
	if err := e.in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count("SELECT count(*) FROM log_pending_rows"); n != 0 || len(e.in.lockedOutSince) != 0 {
		t.Errorf("%d rows pending, %d clusters locked out after the lock was let go; want none", n, len(e.in.lockedOutSince))
	}
}

// TestLockedOutByAHealthyReplica: replica A's passes collide with replica
// B's, which append (two healthy replicas ticking in step on a quiet
// cluster): no failure however long ago A first collided, as the log grew
// between. (Its segment's integrated_at is when B's transaction began,
// before A's collision: the log's size, not that time, tells.)
func TestLockedOutByAHealthyReplica(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a, b := e.in, e.integrator(e.signer)
	a.lockedOutFor = time.Hour
	var aErr error
	b.beforeCommit = func(context.Context) { _, aErr = a.Integrate(ctx, "default") }
	e.write(e.batch("default", time.Now(), 2))
	if _, err := b.Integrate(ctx, "default"); err != nil || aErr != nil {
		t.Fatalf("B's pass %v, A's collision %v", err, aErr)
	}
	a.mu.Lock() // as if A had first collided two hours ago, and each tick since
	l := a.lockedOutSince["default"]
	l.since = l.since.Add(-2 * time.Hour)
	a.lockedOutSince["default"] = l
	a.mu.Unlock()
	e.write(e.batch("default", time.Now(), 1))
	if _, err := b.Integrate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if aErr != nil {
		t.Errorf("A collided with B's second pass, B having appended a segment since the first: %v", aErr)
	}
}

// TestNewestCutoffIndexed: the lookup of the newest cutoff logged
// (newestCutoffSQL) over a log of 300 segments of 2,000 leaves, one of
// which, the first, logs a cutoff, is a probe of log_segments_cutoffs
// (migration 00035) that reads the one segment it names, where without the
// index it reads (and decompresses) every segment's kinds: the rows each
// plan filters out, from EXPLAIN ANALYZE, logged with the plans.
func TestNewestCutoffIndexed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.exec(`INSERT INTO log_segments (cluster, first_index, tree_size, stored_from, kinds, uids, keys, ats, digests, hashes, checkpoint)
		SELECT 'big', p * 2000, p * 2000 + 2000, 0,
			ARRAY(SELECT CASE WHEN p = 0 AND i = 7 THEN 3 ELSE 1 + (i * 7919 + p) % 2 END::smallint FROM generate_series(0, 1999) i),
			array_fill(''::text, ARRAY[2000]), array_fill(''::bytea, ARRAY[2000]),
			ARRAY(SELECT to_timestamp(1800000000 + p * 2000 + i) FROM generate_series(0, 1999) i), '', '', ''
		FROM generate_series(0, 299) p`)
	e.exec(`ANALYZE log_segments`)
	var want time.Time
	if err := e.st.Pool().QueryRow(ctx, `SELECT to_timestamp(1800000007)`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	segmentsRead := func(name string) string {
		t.Helper()
		var at time.Time
		if err := e.st.Pool().QueryRow(ctx, newestCutoffSQL, "big", 0).Scan(&at); err != nil || !at.Equal(want) {
			t.Fatalf("%s: newest cutoff %s, %v; want %s", name, at, err, want)
		}
		plan := strings.Join(e.explain("ANALYZE", newestCutoffSQL, "big", 0), "\n")
		t.Logf("%s:\n%s", name, plan)
		return plan
	}
	if plan := segmentsRead("indexed"); !strings.Contains(plan, "Index Scan Backward using log_segments_cutoffs") || strings.Contains(plan, "Rows Removed by Filter: 299") {
		t.Errorf("the lookup does not probe log_segments_cutoffs, or reads every segment:\n%s", plan)
	}
	e.exec(`DROP INDEX log_segments_cutoffs`)
	if plan := segmentsRead("scan"); !strings.Contains(plan, "Rows Removed by Filter: 299") {
		t.Errorf("without the index, the lookup does not read the 299 other segments (the test's log is not what it thinks):\n%s", plan)
	}
}
