package store

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/partitions"
	"github.com/options-record/options-record/store/pgtest"
)

// upgradedStore is a record made before migration 00021: its partitions
// of events, from 3 days ago to 2 days ahead, have no index of failed
// events by key, and hold a failed and a successful event a day. Then the
// store is prepared (migrated to the latest): the partitioned index exists,
// invalid, with no partition attached.
func upgradedStore(t *testing.T) (*Store, []string) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	migrateTo(t, dsn, 20)
	s, err := Connect(Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	now := time.Now().UTC()
	var days []time.Time
	for i := -3; i <= 2; i++ {
		days = append(days, now.AddDate(0, 0, i))
	}
	if err := s.parts.Ensure(ctx, s.pool.raw, days, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	for i, d := range days[:4] {
		writeAttempt(t, s, fmt.Sprintf("old-%d", i), d, 403)
		writeAttempt(t, s, fmt.Sprintf("ok-%d", i), d, 200)
	}
	var names []string
	for _, d := range days {
		names = append(names, "events_p"+partitions.Day(d).Format("20060102"))
	}
	if got := unattached(t, s); strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("before the build, partitions without the index: %v, want %v", got, names)
	}
	return s, names
}

// writeAttempt stores one event of the given answer.
func writeAttempt(t *testing.T, s *Store, id string, at time.Time, code int32) {
	t.Helper()
	b := &model.Batch{Events: []model.Event{{Cluster: "default", Key: digest("event", id), StageAt: at, AuditID: id,
		Stage: "ResponseComplete", Verb: "delete", RequestURI: "/api/v1/namespaces/prod/configmaps/" + id, Username: "mallory",
		APIVersion: "v1", Resource: "configmaps", Namespace: "prod", Name: id, ResponseCode: code}}}
	if _, err := s.WriteBatch(context.Background(), b); err != nil {
		t.Fatalf("write %s: %v", id, err)
	}
}

// unattached lists the partitions of events with no index attached to
// the index of failed events by key.
func unattached(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.pool.raw.Query(context.Background(), unattachedSQLForTest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

const unattachedSQLForTest = `
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'events'::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_index x JOIN pg_inherits xi ON xi.inhrelid = x.indexrelid
                  WHERE x.indrelid = c.oid AND xi.inhparent = 'events_failed_key'::regclass)
ORDER BY c.relname`

// keyIndexState is whether events_failed_key is valid, and the indexes of
// the partitions of events that are not (left by an interrupted build).
func keyIndexState(t *testing.T, s *Store) (valid bool, invalid []string) {
	t.Helper()
	ctx := context.Background()
	if err := s.pool.raw.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_failed_key'::regclass`).Scan(&valid); err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.raw.Query(ctx, `SELECT x.indexrelid::regclass::text FROM pg_index x
		JOIN pg_inherits i ON i.inhrelid = x.indrelid AND i.inhparent = 'events'::regclass WHERE NOT x.indisvalid ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if invalid, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	return valid, invalid
}

// holdSnapshot opens a transaction holding a snapshot: CREATE INDEX
// CONCURRENTLY waits for it to end before it marks an index valid, so a
// build under way stays under way until release is called.
func holdSnapshot(t *testing.T, s *Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.raw.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM object_versions"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = tx.Rollback(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

// buildWaiting waits until a CREATE INDEX CONCURRENTLY of the build is
// under way and waiting (for the held snapshot), and returns its backend.
func buildWaiting(t *testing.T, s *Store) (pid int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.pool.raw.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND query LIKE 'CREATE INDEX CONCURRENTLY%'
			  AND wait_event_type = 'Lock'`).Scan(&pid)
		if err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build never reached a CREATE INDEX CONCURRENTLY held by the snapshot: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeyIndexBuildDoesNotBlockWrites: on a record made before the index,
// the build makes each partition's index concurrently and attaches it, and
// batches are stored while a partition's index is being built (held at its
// last step by a reader's snapshot, so the writes are certainly during
// it). At the end the index is valid, every partition attached, and the
// failed events written during the build are in it.
func TestKeyIndexBuildDoesNotBlockWrites(t *testing.T) {
	s, parts := upgradedStore(t)
	ctx := context.Background()
	release := holdSnapshot(t, s)
	var steps atomic.Int32
	type result struct {
		done bool
		err  error
	}
	out := make(chan result, 1)
	go func() {
		done, err := s.buildKeyIndex(ctx, func(string) { steps.Add(1) })
		out <- result{done, err}
	}()
	pid := buildWaiting(t, s)
	// A write held behind the build would wait the whole minute, which
	// only ends the test.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	const writes = 5
	written := 0
	now := time.Now().UTC()
	for i := range writes {
		if err := wctx.Err(); err != nil {
			t.Fatal(err)
		}
		writeAttempt(t, s, fmt.Sprintf("during-%d", i), now.Add(-time.Duration(i)*time.Millisecond), 409)
		written++
	}
	// Still under way: the writes were made during the build.
	if got := buildWaiting(t, s); got != pid || steps.Load() != 0 {
		t.Fatalf("the build moved on (backend %d, %d partitions done) before the writes were checked", got, steps.Load())
	}
	if written != writes {
		t.Fatalf("%d of %d batches stored while the index was built", written, writes)
	}
	release()
	r := <-out
	if r.err != nil || !r.done {
		t.Fatalf("build: done %v, %v", r.done, r.err)
	}
	if int(steps.Load()) != len(parts) {
		t.Errorf("%d partitions built, want %d", steps.Load(), len(parts))
	}
	if valid, invalid := keyIndexState(t, s); !valid || len(invalid) > 0 || len(unattached(t, s)) > 0 {
		t.Errorf("after the build: valid %v, invalid %v, unattached %v", valid, invalid, unattached(t, s))
	}
	// The index holds every failed event, those written during the build
	// too, and no successful one.
	got := failedByIndex(t, s)
	if got != 4+writes {
		t.Errorf("the index finds %d failed events, want %d", got, 4+writes)
	}
	// Done: another upkeep has nothing to do.
	if done, err := s.BuildKeyIndex(ctx); err != nil || !done {
		t.Errorf("again: %v %v", done, err)
	}
}

// failedByIndex counts the failed events through events_failed_key's
// partitions' indexes only (an index-only plan is checked).
func failedByIndex(t *testing.T, s *Store) int {
	t.Helper()
	ctx := context.Background()
	var n int
	err := pgx.BeginFunc(ctx, s.pool.raw, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off"); err != nil {
			return err
		}
		const q = `SELECT count(*) FROM events WHERE cluster = 'default' AND event_key BETWEEN '\x00'::bytea AND '\xff'::bytea AND response_code >= 300`
		rows, err := tx.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			return err
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if p := strings.Join(plan, "\n"); strings.Contains(p, "Seq Scan") || !strings.Contains(p, "_failed_key") {
			t.Errorf("the failed events by key are not read through the index:\n%s", p)
		}
		return tx.QueryRow(ctx, q).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestKeyIndexBuildResumes: a build that stops anywhere is finished by the
// next. The sink dies (its backend ends) during a partition's CREATE
// INDEX CONCURRENTLY, which leaves that index invalid; another partition's
// index was built but not attached (a stop between the two steps). The
// next build drops and rebuilds the invalid one, attaches the other, and
// completes the index.
func TestKeyIndexBuildResumes(t *testing.T) {
	s, parts := upgradedStore(t)
	ctx := context.Background()
	last := parts[len(parts)-1]
	if _, err := s.pool.raw.Exec(ctx, "CREATE INDEX "+last+"_failed_key ON "+last+" (cluster, event_key) WHERE response_code >= 300"); err != nil {
		t.Fatal(err)
	}
	release := holdSnapshot(t, s)
	out := make(chan error, 1)
	go func() {
		_, err := s.buildKeyIndex(ctx, nil)
		out <- err
	}()
	pid := buildWaiting(t, s)
	var ok bool
	if err := s.pool.raw.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("end the build's backend: %v %v", ok, err)
	}
	if err := <-out; err == nil {
		t.Fatal("a build whose session ended reported no error")
	}
	release()
	valid, invalid := keyIndexState(t, s)
	if valid || len(invalid) != 1 || invalid[0] != parts[0]+"_failed_key" {
		t.Fatalf("after the crash: valid %v, invalid indexes %v; want the first partition's left invalid", valid, invalid)
	}
	if got := unattached(t, s); len(got) != len(parts) {
		t.Fatalf("after the crash, unattached %v", got)
	}
	var built []string
	done, err := s.buildKeyIndex(ctx, func(p string) { built = append(built, p) })
	if err != nil || !done {
		t.Fatalf("the next build: done %v, %v", done, err)
	}
	sort.Strings(built)
	if strings.Join(built, ",") != strings.Join(parts, ",") {
		t.Errorf("built %v, want %v", built, parts)
	}
	if valid, invalid := keyIndexState(t, s); !valid || len(invalid) > 0 {
		t.Errorf("after the next build: valid %v, invalid %v", valid, invalid)
	}
	if got := failedByIndex(t, s); got != 4 {
		t.Errorf("the index finds %d failed events, want 4", got)
	}
}

// TestKeyIndexBuiltByOneReplica: while another replica holds the build's
// lock, a build does nothing and says it is not done; partitions made
// after the migration have their index from the start.
func TestKeyIndexBuiltByOneReplica(t *testing.T) {
	s, parts := upgradedStore(t)
	ctx := context.Background()
	other, err := s.pool.raw.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(partitions.KeyIndexLockID)); err != nil {
		t.Fatal(err)
	}
	if done, err := s.BuildKeyIndex(ctx); err != nil || done {
		t.Fatalf("while another replica builds: done %v, %v; want not done, no error", done, err)
	}
	if got := unattached(t, s); len(got) != len(parts) {
		t.Errorf("while another replica builds, this one attached some: unattached %v", got)
	}
	if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(partitions.KeyIndexLockID)); err != nil {
		t.Fatal(err)
	}
	// A partition made now is attached at creation.
	later := time.Now().UTC().AddDate(0, 0, 9)
	if err := s.EnsurePartitionsFor(ctx, []time.Time{later}); err != nil {
		t.Fatal(err)
	}
	if got := unattached(t, s); len(got) != len(parts) {
		t.Errorf("a partition made after the migration has no index: unattached %v", got)
	}
	s.MaintainOnce(ctx, time.Now(), 0, slog.New(slog.DiscardHandler))
	if valid, invalid := keyIndexState(t, s); !valid || len(invalid) > 0 || len(unattached(t, s)) > 0 {
		t.Errorf("after an upkeep: valid %v, invalid %v, unattached %v", valid, invalid, unattached(t, s))
	}
}

// TestFailedByKeyRange reads the candidates of an attempt's short name:
// the failed events (never a successful one) whose key lies in a range,
// in key order, of a namespace and an object name as it reads in a short
// name.
func TestFailedByKeyRange(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	now := time.Now().UTC()
	for i, id := range []string{"App.Config", "web", "app-config"} {
		writeAttempt(t, s, id, now.Add(-time.Duration(i)*time.Second), 403)
	}
	writeAttempt(t, s, "done", now, 200)
	lo, hi := []byte{}, []byte(strings.Repeat("\xff", 32))
	prod, dev := "prod", "dev"
	for _, c := range []struct {
		q    EventKeyRange
		want int
	}{
		{EventKeyRange{}, 3},
		{EventKeyRange{Readable: "app-config"}, 2},
		{EventKeyRange{Readable: "app-config", Namespace: &prod}, 2},
		{EventKeyRange{Namespace: &dev}, 0},
		{EventKeyRange{Readable: "done"}, 0},
		{EventKeyRange{Limit: 1}, 1},
	} {
		c.q.Cluster, c.q.Lo, c.q.Hi = "default", lo, hi
		if c.q.Limit == 0 {
			c.q.Limit = 10
		}
		got, err := s.FailedByKeyRange(ctx, c.q)
		if err != nil || len(got) != c.want {
			t.Errorf("%+v: %d events, %v; want %d", c.q, len(got), err, c.want)
			continue
		}
		for i := range got {
			if got[i].ResponseCode < 300 || i > 0 && string(got[i-1].Key) > string(got[i].Key) {
				t.Errorf("%+v: not failed events in key order: %+v", c.q, got)
			}
		}
	}
	one := digest("event", "web")
	got, err := s.FailedByKeyRange(ctx, EventKeyRange{Cluster: "default", Lo: one[:4], Hi: append(one[:4:4], []byte(strings.Repeat("\xff", 28))...), Limit: 10})
	if err != nil || len(got) != 1 || got[0].Name != "web" {
		t.Errorf("the key range of web's event: %+v %v", got, err)
	}
	if got, err := s.FailedByKeyRange(ctx, EventKeyRange{Cluster: "other", Lo: lo, Hi: hi, Limit: 10}); err != nil || len(got) != 0 {
		t.Errorf("another cluster's events: %+v %v", got, err)
	}
}
