package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

func key(s string) []byte { k := sha256.Sum256([]byte(s)); return k[:] }

func rv(n int64) *int64 { return &n }

// change builds an event and the version it produced.
func change(id, uid string, at time.Time, r int64, deleted bool) ([]model.Event, []model.Version) {
	e := model.Event{Cluster: "c", Key: key(id), StageAt: at, AuditID: id, Stage: "ResponseComplete", Verb: "update",
		RequestURI: "/api/v1/namespaces/ns/configmaps/" + uid, Username: "u", Resource: "configmaps", Namespace: "ns",
		Name: uid, ResponseCode: 200}
	v := model.Version{Cluster: "c", UID: uid, Key: key(id + uid), ResourceVersion: rv(r), Origin: model.OriginChange,
		Verb: "update", ChangedAt: at, EventKey: e.Key, Resource: "configmaps", Namespace: "ns", Name: uid,
		Complete: !deleted, Deleted: deleted, Object: []byte(`{"kind":"ConfigMap"}`)}
	if deleted {
		v.Verb, v.Object, v.ResourceVersion = "delete", nil, nil
	}
	return []model.Event{e}, []model.Version{v}
}

func TestRetentionDropsPartitionsAndKeepsLivePriors(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	old := now.AddDate(0, 0, -40)
	b := &model.Batch{}
	add := func(e []model.Event, v []model.Version) {
		b.Events = append(b.Events, e...)
		b.Versions = append(b.Versions, v...)
	}
	add(change("a1", "live", old, 10, false))                    // the newest state of a live object: kept as a prior
	add(change("b0", "edited", old, 9, false))                   // superseded by b1 before the cutoff: expired
	add(change("b1", "edited", old.Add(time.Minute), 11, false)) // the prior of b2, inside the window: kept
	add(change("b2", "edited", now.Add(-time.Hour), 12, false))
	add(change("c1", "gone", old, 13, false)) // the object was deleted long ago: expired
	add(change("c2", "gone", old.Add(time.Minute), 0, true))
	// Deleted yesterday by a delete answered with a Status (no object): the
	// state before it, 40 days old, is what a restore of that deletion needs.
	add(change("d1", "deleted-yesterday", old, 14, false))
	add(change("d2", "deleted-yesterday", now.AddDate(0, 0, -1), 0, true))
	if _, err := st.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	// A retention of zero (no rule known) is refused, not applied as "keep
	// nothing".
	if res, err := st.ApplyRetention(ctx, now, 0); err == nil || len(res.DroppedPartitions) > 0 || res.DeletedVersions > 0 {
		t.Fatalf("retention 0: %+v, %v; want an error and nothing deleted", res, err)
	}
	res, err := st.ApplyRetention(ctx, now, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DroppedPartitions) != 1 || res.DroppedPartitions[0] != "events_p"+old.Format("20060102") {
		t.Errorf("dropped partitions %v, want the one of %s", res.DroppedPartitions, old.Format("2006-01-02"))
	}
	var left []string
	rows, err := st.Pool().Query(ctx, `SELECT uid || ':' || coalesce(resource_version::text, 'deleted') FROM object_versions ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		left = append(left, s)
	}
	want := []string{"deleted-yesterday:14", "deleted-yesterday:deleted", "edited:11", "edited:12", "live:10"}
	if !slices.Equal(left, want) {
		t.Errorf("versions left %v, want %v", left, want)
	}
	var events int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 2 {
		t.Errorf("events left %d, want the two recent ones", events)
	}
}

// TestRetentionDoesNotBlockIngest: a long query of the record is running
// while retention removes an old partition; batches are still stored at
// once (a plain DROP would wait for the query, and every write behind it).
// A table a previous run detached without dropping it goes too.
func TestRetentionDoesNotBlockIngest(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	old := now.AddDate(0, 0, -40)
	e, v := change("old", "o", old, 1, false)
	if _, err := st.WriteBatch(ctx, &model.Batch{Events: e, Versions: v}); err != nil {
		t.Fatal(err)
	}
	orphan := "events_p" + now.AddDate(0, 0, -50).Format("20060102")
	if _, err := st.Pool().Exec(ctx, "CREATE TABLE "+orphan+" (LIKE events)"); err != nil {
		t.Fatal(err)
	}

	reader, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	var n int
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil || n != 1 {
		t.Fatalf("reader: %d %v", n, err)
	}

	done := make(chan error, 1)
	var res store.RetentionResult
	go func() {
		var err error
		res, err = st.ApplyRetention(ctx, now, 30*24*time.Hour)
		done <- err
	}()
	// Wait until retention is really at the detach, held behind the reader
	// (a sleep would pass as well if it had not started).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query LIKE 'ALTER TABLE events DETACH PARTITION%' AND wait_event_type IS NOT NULL`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("retention never reached the detach held behind the reader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The reader holds the lock until after this write: a write held
	// behind it would wait the whole minute, which only ends the test.
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	e, v = change("new", "n", now, 2, false)
	if _, err := st.WriteBatch(wctx, &model.Batch{Events: e, Versions: v}); err != nil {
		t.Fatalf("a batch written while retention runs: %v", err)
	}
	if err := reader.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{orphan, "events_p" + old.Format("20060102")}
	if !slices.Equal(res.DroppedPartitions, want) {
		t.Errorf("dropped %v, want %v", res.DroppedPartitions, want)
	}
	var left int
	if err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname = ANY($1)", want).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d of %v left: %v", left, want, err)
	}
}

// TestRetentionRunsOnOneReplicaAtATime: while another replica applies
// retention (it holds the lock), a second run does nothing rather than
// fight it over the same partitions.
func TestRetentionRunsOnOneReplicaAtATime(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	e, v := change("old", "o", now.AddDate(0, 0, -40), 1, false)
	if _, err := st.WriteBatch(ctx, &model.Batch{Events: e, Versions: v}); err != nil {
		t.Fatal(err)
	}
	other, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if _, err := other.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(0x6f72_7265_7465_6e74)); err != nil {
		t.Fatal(err)
	}
	res, err := st.ApplyRetention(ctx, now, 30*24*time.Hour)
	if err != nil || len(res.DroppedPartitions) != 0 || res.DeletedVersions != 0 {
		t.Fatalf("while another replica holds the lock: %+v, %v; want nothing done", res, err)
	}
	if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(0x6f72_7265_7465_6e74)); err != nil {
		t.Fatal(err)
	}
	if res, err = st.ApplyRetention(ctx, now, 30*24*time.Hour); err != nil || len(res.DroppedPartitions) != 1 {
		t.Errorf("once free: %+v, %v; want the old partition dropped", res, err)
	}
}

// TestRetentionExpiresRestores: restores and plans are kept as long as the
// record, not forever; one still running is never deleted under its
// executor. The ingest's retention pass records its cutoff, and the API's
// expiry deletes by it.
func TestRetentionExpiresRestores(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api, err := store.OpenAPI(ctx, store.Options{URL: st.Pool().Config().ConnString()}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	now := time.Now()
	for _, r := range []struct {
		name, state string
		age         time.Duration
	}{{"old", store.RestoreSucceeded, 40 * 24 * time.Hour}, {"old-running", store.RestoreRunning, 40 * 24 * time.Hour}, {"recent", store.RestorePlanned, time.Hour}} {
		rec, err := api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "version", Username: "alice",
			Request: []byte(`{}`), Plan: []byte(`[]`), State: r.state, ObjectNamespace: "prod", ObjectName: r.name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.Pool().Exec(ctx, `UPDATE options_record_api.restores SET created_at = $1 WHERE id = $2`, now.Add(-r.age), rec.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := api.ExpireRestores(ctx, st, now); err != nil || n != 0 {
		t.Fatalf("before any retention pass: %d deleted, %v; want none", n, err)
	}
	if _, err := st.ApplyRetention(ctx, now, 30*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	deleted, err := api.ExpireRestores(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := api.Pool().Query(ctx, `SELECT object_name FROM options_record_api.restores ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 1 || !slices.Equal(left, []string{"old-running", "recent"}) {
		t.Errorf("deleted %d, left %v; want the old finished restore gone", deleted, left)
	}
}

// TestNamedRestoresArePaged: a user's restores and plans are listed a page
// at a time, newest first, each kind and scope apart, with every row once.
func TestNamedRestoresArePaged(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	api, err := store.OpenAPI(ctx, store.Options{URL: st.Pool().Config().ConnString()}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	now := time.Now()
	insert := func(name, ns, kind string, age time.Duration) {
		t.Helper()
		rec, err := api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: kind, Username: "alice",
			Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned, ObjectNamespace: ns, ObjectName: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.Pool().Exec(ctx, `UPDATE options_record_api.restores SET created_at = $1 WHERE id = $2`, now.Add(-age), rec.ID); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 7 {
		insert(fmt.Sprintf("r%d", i), "prod", "version", time.Duration(i)*time.Minute)
	}
	insert("plan", "prod", "as-of", 0)
	insert("cluster-r", "", "version", 0)
	restores := true
	prod := "prod"
	var names []string
	q := store.NamedRestoreQuery{Cluster: "c", Username: "alice", Namespace: &prod, Restores: &restores, Namespaced: true, Limit: 3}
	for pages := 0; ; pages++ {
		recs, err := api.NamedRestores(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			names = append(names, r.ObjectName)
		}
		if len(recs) < q.Limit || pages > 5 {
			break
		}
		q.AfterAt, q.AfterID = recs[len(recs)-1].CreatedAt, recs[len(recs)-1].ID
	}
	if want := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6"}; !slices.Equal(names, want) {
		t.Errorf("restores of prod, page by page: %v, want %v", names, want)
	}
	all, err := api.NamedRestores(ctx, store.NamedRestoreQuery{Cluster: "c", Username: "alice", Namespaced: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 8 {
		t.Errorf("every namespace but the cluster scope: %d rows, want 8", len(all))
	}
}

// TestALateEventOfADayAnotherReplicaDropped: one replica's retention drops
// a day's partition (a rule's retention of hours) that another replica has
// written to and still knows; that replica's next event of the day (late,
// from a journal, say) makes the partition again rather than failing.
func TestALateEventOfADayAnotherReplicaDropped(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	a, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Now().UTC()
	yesterday := now.AddDate(0, 0, -1)
	e, v := change("late", "first", yesterday, 1, false)
	if _, err := a.WriteBatch(ctx, &model.Batch{Events: e, Versions: v}); err != nil {
		t.Fatal(err)
	}
	// b keeps two hours, and its pass runs a day later: yesterday ended
	// long before its cutoff, so its partition goes.
	if res, err := b.ApplyRetention(ctx, now.Add(24*time.Hour), 2*time.Hour); err != nil || len(res.DroppedPartitions) == 0 {
		t.Fatalf("retention: %+v, %v; want yesterday's partition dropped", res, err)
	}
	e, v = change("late", "second", yesterday.Add(time.Second), 2, false)
	if _, err := a.WriteBatch(ctx, &model.Batch{Events: e, Versions: v}); err != nil {
		t.Fatalf("a late event of the dropped day: %v", err)
	}
}
