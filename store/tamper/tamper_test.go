package tamper

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// problems is a report's problems, one a line.
func problems(r Report) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// TestVerifyPassesOnWrittenRecord: a record written in batches (a
// redelivery among them) and integrated verifies; rows written since the
// last pass are pending, not missing.
func TestVerifyPassesOnWrittenRecord(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	b1 := e.batch("default", now, 10)
	e.write(b1)
	e.write(e.batch("other\ncluster/..", now, 4))
	e.integrate()
	e.write(b1) // a redelivery stores nothing, and logs nothing
	e.write(e.batch("default", now, 3))
	e.integrate()
	e.write(e.batch("default", now, 2)) // not integrated yet
	rep := e.verify(true)
	if !rep.OK() {
		t.Fatalf("verify failed on an untouched record:\n%s", problems(rep))
	}
	got := map[string]ClusterReport{}
	for _, c := range rep.Clusters {
		got[c.Cluster] = c
	}
	if c := got["default"]; c.Size != 26 || c.Rows != 26 || c.Pending != 4 {
		t.Errorf("default: %d leaves, %d rows verified, %d pending; want 26, 26, 4", c.Size, c.Rows, c.Pending)
	}
	if c := got["other\ncluster/.."]; c.Size != 8 || c.Rows != 8 {
		t.Errorf("other cluster: %d leaves, %d rows; want 8, 8", c.Size, c.Rows)
	}
}

// TestVerifyNamesTheRow: each change made around the ingest fails verify,
// naming the row or the log.
func TestVerifyNamesTheRow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(e *env) // after a record of 12 rows is integrated
		want   []string     // each in some problem
	}{{
		name: "update of a stored state",
		tamper: func(e *env) {
			e.exec(`UPDATE object_versions SET object = '{"data":{"password":"changed"}}' WHERE uid LIKE 'uid-3-%'`)
		},
		want: []string{`object_versions(cluster="default", uid="uid-3-`, "changed since it was logged"},
	}, {
		name: "update of a jsonb column's key order is no change, of its value is",
		tamper: func(e *env) {
			e.exec(`UPDATE events SET annotations = '{"a":"x","b":"1"}' WHERE audit_id = (SELECT min(audit_id) FROM events)`)
		},
		want: []string{`events(cluster="default", event_key=`, "changed since it was logged"},
	}, {
		name:   "delete of one event",
		tamper: func(e *env) { e.exec(`DELETE FROM events WHERE ctid = (SELECT min(ctid) FROM events)`) },
		want:   []string{`events(cluster="default"`, "missing: logged at leaf"},
	}, {
		name: "an inserted row",
		tamper: func(e *env) {
			e.exec(`INSERT INTO events SELECT cluster, sha256(event_key), stage_at, received_at, audit_id, stage, verb, request_uri,
				'mallory', user_uid, user_groups, user_extra, impersonated_user, impersonated_groups, source_ips, user_agent, api_group,
				api_version, resource, subresource, namespace, name, object_uid, response_code, response_reason, response_message,
				request_object, annotations, rules, secret_digested, ingested_at FROM events LIMIT 1`)
		},
		want: []string{`events(cluster="default"`, "not in the log"},
	}, {
		name: "a reordered log",
		tamper: func(e *env) {
			e.exec(`UPDATE log_segments SET keys[1] = keys[2], keys[2] = keys[1], uids[1] = uids[2], uids[2] = uids[1],
				ats[1] = ats[2], ats[2] = ats[1], kinds[1] = kinds[2], kinds[2] = kinds[1],
				digests = substring(digests FROM 33 FOR 32) || substring(digests FROM 1 FOR 32) || substring(digests FROM 65)
				WHERE first_index = 0`)
		},
		want: []string{"leaf 0 does not match", "leaf 1 does not match"},
	}, {
		name: "a reordered log with its leaf hashes",
		tamper: func(e *env) {
			// Stored hashes 0 and 1 are leaves 0 and 1 (2 is their parent).
			e.exec(`UPDATE log_segments SET keys[1] = keys[2], keys[2] = keys[1], uids[1] = uids[2], uids[2] = uids[1],
				ats[1] = ats[2], ats[2] = ats[1], kinds[1] = kinds[2], kinds[2] = kinds[1],
				digests = substring(digests FROM 33 FOR 32) || substring(digests FROM 1 FOR 32) || substring(digests FROM 65),
				hashes = substring(hashes FROM 33 FOR 32) || substring(hashes FROM 1 FOR 32) || substring(hashes FROM 65)
				WHERE first_index = 0`)
		},
		want: []string{"stored hash 2 (level 1, node 0) does not match", "the signed checkpoint"},
	}, {
		name: "a log rolled back to an older checkpoint",
		tamper: func(e *env) {
			// A restored backup: the last pass's rows and segment are gone,
			// the log before them is whole and signed.
			e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
				SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= 7)`)
			e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
				SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= 7)`)
			e.exec(`DELETE FROM log_segments WHERE first_index >= 7`)
		},
		want: []string{"fewer than the 12 of the trusted checkpoint: it was rolled back"},
	}, {
		name: "a log re-signed with another key",
		tamper: func(e *env) {
			// Whoever changed a row rebuilds the whole log with a key of
			// their own, under the same name.
			e.exec(`UPDATE object_versions SET deleted = true WHERE uid LIKE 'uid-2-%'`)
			e.exec(`DELETE FROM log_segments`)
			e.exec(`INSERT INTO log_pending SELECT cluster, 1, '', event_key, stage_at FROM events`)
			e.exec(`INSERT INTO log_pending SELECT cluster, 2, uid, version_key, changed_at FROM object_versions`)
			s, _ := newKey(e.t)
			mallory := e.integrator(s)
			mallory.o.Checkpoints = nil
			if err := mallory.IntegrateAll(context.Background()); err != nil {
				e.t.Fatal(err)
			}
		},
		want: []string{"the checkpoint at size 12: checkpoint signature", "the trusted checkpoint"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now()
			e.write(e.batch("default", now, 4))
			e.integrate()
			e.write(e.batch("default", now, 2))
			e.integrate()
			if rep := e.verify(true); !rep.OK() {
				t.Fatalf("before: %s", problems(rep))
			}
			tc.tamper(e)
			rep := e.verify(true)
			got := problems(rep)
			if rep.OK() {
				t.Fatal("verify passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no problem says %q; got:\n%s", w, got)
				}
			}
		})
	}
}

// TestRetentionStaysVerifiable: retention logs its cutoff before it
// deletes, and verify then counts the rows gone as retained; a row older
// than the cutoff deleted before it was logged would not be.
func TestRetentionStaysVerifiable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	e.write(e.batch("default", now.AddDate(0, 0, -10), 3))
	e.write(e.batch("default", now.AddDate(0, 0, -9), 3))
	e.write(e.batch("default", now, 2))
	e.integrate()
	// A later state of an old object makes its old version superseded.
	old := e.batch("default", now.AddDate(0, 0, -8), 1)
	later := e.batch("default", now.AddDate(0, 0, -8), 1)
	v := later.Versions[0]
	v.UID, v.Created = old.Versions[0].UID, false
	old.Versions = append(old.Versions, v)
	old.Events = append(old.Events, later.Events...)
	e.write(old)

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { e.in.Run(runCtx) })
	res, err := e.st.ApplyRetention(ctx, now, 5*24*time.Hour)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DroppedPartitions) == 0 || res.DeletedVersions == 0 {
		t.Fatalf("retention removed nothing: %+v", res)
	}
	rep := e.verify(true)
	if !rep.OK() {
		t.Fatalf("verify after retention:\n%s", problems(rep))
	}
	c := rep.Clusters[0]
	if c.Retained == 0 || len(c.Cutoffs) != 1 {
		t.Errorf("%d rows counted as retained, cutoffs %v; want some, and one cutoff", c.Retained, c.Cutoffs)
	}
}

// TestRetentionWaitsForTheLog: with no integrator running, retention logs
// nothing, so it deletes nothing.
func TestRetentionWaitsForTheLog(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now().AddDate(0, 0, -10), 2))
	e.integrate()
	wait := 0 * time.Second
	orig := setLogCutoffWait(wait)
	defer setLogCutoffWait(orig)
	_, err := e.st.ApplyRetention(context.Background(), time.Now(), 5*24*time.Hour)
	if err == nil || !strings.Contains(err.Error(), "nothing deleted") {
		t.Fatalf("retention without an integrator: %v", err)
	}
	if n := e.count("SELECT count(*) FROM events"); n != 2 {
		t.Errorf("%d events left, want 2", n)
	}
}

// TestConcurrentIntegrators: integrators on two pools drain the same
// clusters while batches are written; the log is one, whole and verified.
func TestConcurrentIntegrators(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pool2, err := pgxpool.New(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool2.Close()
	second, err := NewIntegrator(IntegratorOptions{Pool: pool2, Signer: e.signer, MaxLeaves: 5})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	done := make(chan struct{})
	for _, in := range []*Integrator{e.in, second} {
		wg.Go(func() {
			for {
				if err := in.IntegrateAll(ctx); err != nil {
					errs <- err
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	for i := range 20 {
		e.write(e.batch([]string{"a", "b"}[i%2], time.Now(), 3))
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e.integrate()
	rep := e.verify(false)
	if !rep.OK() {
		t.Fatalf("verify:\n%s", problems(rep))
	}
	for _, c := range rep.Clusters {
		if c.Size != 60 || c.Pending != 0 {
			t.Errorf("cluster %s: %d leaves, %d pending; want 60, 0", c.Cluster, c.Size, c.Pending)
		}
	}
}

// TestIntegratorKilledMidway: a pass cancelled before it commits leaves
// the log and the pending rows as they were; the next pass logs them.
func TestIntegratorKilledMidway(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 3))
	e.integrate()
	e.write(e.batch("default", time.Now(), 2))
	ctx, cancel := context.WithCancel(context.Background())
	reached := false
	e.in.beforeCommit = func(context.Context) { reached = true; cancel() }
	_, err := e.in.Integrate(ctx, "default")
	if !reached || !errors.Is(err, context.Canceled) {
		t.Fatalf("the pass reached its commit: %v, err %v", reached, err)
	}
	if n := e.count("SELECT count(*) FROM log_segments"); n != 1 {
		t.Errorf("%d segments after the killed pass, want 1", n)
	}
	if n := e.count("SELECT count(*) FROM log_pending_rows"); n != 4 {
		t.Errorf("%d pending rows after the killed pass, want 4", n)
	}
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Pending != 4 {
		t.Fatalf("verify after the killed pass: %+v\n%s", rep.Clusters, problems(rep))
	}
	e.in.beforeCommit = nil
	e.integrate()
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Size != 10 {
		t.Fatalf("verify after the next pass: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestHostileClusterNames: a cluster's name is recorded text. Each of the
// corpus names a log whose checkpoint (its origin line escaped) signs,
// verifies, and is written under the checkpoint directory, never beside it.
func TestHostileClusterNames(t *testing.T) {
	e := newEnv(t)
	names := append([]string{"..", ".", "a/../../b", "cluster=x"}, hostile...)
	for _, c := range names {
		e.write(e.batch(c, time.Now(), 1))
	}
	e.integrate()
	rep := e.verify(true)
	if !rep.OK() || len(rep.Clusters) != len(slices.Compact(slices.Sorted(slices.Values(names)))) {
		t.Fatalf("verify: %d clusters\n%s", len(rep.Clusters), problems(rep))
	}
	for _, c := range names {
		b, err := ReadTrusted(context.Background(), e.bucket, c)
		if err != nil || b == nil {
			t.Errorf("cluster %q: no checkpoint file: %v", c, err)
		}
	}
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range entries {
		if !strings.HasPrefix(d.Name(), "cluster=") || strings.ContainsAny(d.Name()[len("cluster="):], "/\n") {
			t.Errorf("checkpoint directory entry %q", d.Name())
		}
	}
}

// TestPlantedCutoff: whoever can write the database plants a retention
// cutoff of now in log_pending and deletes recent rows. The integrator
// refuses to log a cutoff that no retention allows (it stays pending), so
// verify fails, naming the rows and the cutoff.
func TestPlantedCutoff(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now.Add(-time.Minute), 3))
	e.integrate()
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())`)
	e.integrate()
	e.integrate()
	if n := e.count("SELECT count(*) FROM log_pending WHERE kind = 3"); n != 1 || e.in.RefusedCutoffs() != 1 {
		t.Errorf("%d cutoffs pending after two passes, %d refused; want the planted one, refused once", n, e.in.RefusedCutoffs())
	}
	e.exec(`DELETE FROM events`)
	e.exec(`DELETE FROM object_versions`)
	rep := e.verify(true)
	got := problems(rep)
	if rep.OK() {
		t.Fatalf("verify passed after a planted cutoff and deletes: %+v", rep.Clusters)
	}
	for _, w := range []string{`events(cluster="default"`, `object_versions(cluster="default"`, "missing", "a retention cutoff of 20", "is pending, not logged"} {
		if !strings.Contains(got, w) {
			t.Errorf("no problem says %q; got:\n%s", w, got)
		}
	}
}

// TestPlantedCutoffSigned: a planted cutoff that an integrator logged all
// the same (one before this check, or one whose retention is set wrong) is
// later than the rows logged before it allow: verify prints it as
// unjustified, and fails on each row it would excuse, naming it.
func TestPlantedCutoffSigned(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now.AddDate(0, 0, -10), 2))
	e.write(e.batch("default", now.Add(-time.Minute), 2))
	e.integrate()
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())`)
	e.in.o.MinRetention = -100 * 365 * 24 * time.Hour // it logs any cutoff
	e.integrate()
	if n := e.count("SELECT count(*) FROM log_pending"); n != 0 {
		t.Fatalf("%d rows pending; want the cutoff logged", n)
	}
	e.exec(`DELETE FROM events`)
	e.exec(`DELETE FROM object_versions`)
	rep := e.verify(true)
	got := problems(rep)
	if rep.OK() {
		t.Fatalf("verify passed after a planted, logged cutoff and deletes: %+v", rep.Clusters)
	}
	for _, w := range []string{`events(cluster="default"`, `object_versions(cluster="default"`,
		"the retention cutoff of 20", "at leaf 8 would cover it", "planted, not written by retention"} {
		if !strings.Contains(got, w) {
			t.Errorf("no problem says %q; got:\n%s", w, got)
		}
	}
	// The rows of ten days ago: the cutoff covers them up to the newest row
	// logged before it less the minimum retention, so only the recent ones fail.
	if n := strings.Count(got, "planted"); n != 4 {
		t.Errorf("%d rows named with the planted cutoff, want the 4 recent ones:\n%s", n, got)
	}
	if c := rep.Clusters[0]; c.Retained != 4 || len(c.Cutoffs) != 1 || c.Cutoffs[0].Justified {
		t.Errorf("retained %d, cutoffs %+v; want 4 retained, one unjustified cutoff", c.Retained, c.Cutoffs)
	}
}

// TestVerifyClusterGone: every row of a cluster deleted (its events,
// versions, log and pending rows), as a backup from before it existed
// would have it: its trusted checkpoint outside the database still names
// it, and verify fails on it.
func TestVerifyClusterGone(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now, 2))
	e.write(e.batch("gone\n/..", now, 3))
	e.integrate()
	if rep := e.verify(true); !rep.OK() || len(rep.Clusters) != 2 {
		t.Fatalf("before: %d clusters\n%s", len(rep.Clusters), problems(rep))
	}
	for _, table := range []string{"events", "object_versions", "log_segments", "log_pending", "log_pending_batches"} {
		e.exec(`DELETE FROM `+table+` WHERE cluster = $1`, "gone\n/..")
	}
	rep := e.verify(true)
	got := problems(rep)
	if rep.OK() {
		t.Fatalf("verify passed with a cluster gone: %+v", rep.Clusters)
	}
	if w := `cluster "gone\n/..": log: the log has 0 leaves, fewer than the 6 of the trusted checkpoint`; !strings.Contains(got, w) {
		t.Errorf("no problem says %q; got:\n%s", w, got)
	}
	// Without the trusted checkpoints, nothing names it.
	if rep := e.verify(false); !rep.OK() || len(rep.Clusters) != 1 {
		t.Errorf("without trusted checkpoints: %d clusters\n%s", len(rep.Clusters), problems(rep))
	}
}
