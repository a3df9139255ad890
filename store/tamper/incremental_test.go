package tamper

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store/model"
)

// verifySince verifies incrementally from the checkpoints in since.
func (e *env) verifySince(since map[string][]byte) Report {
	e.t.Helper()
	rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: since})
	if err != nil {
		e.t.Fatal(err)
	}
	return rep
}

// olderAfterCheckpoint writes and logs a batch of n events ten minutes
// after an hour ago, verifies the log (the checkpoints it returns), then
// writes and logs late events of an hour ago: committed later but older,
// so that an incremental verify from those checkpoints looks the first
// batch's rows, as new as the late ones, up below its checkpoint.
func (e *env) olderAfterCheckpoint(n, late int) (first *model.Batch, since map[string][]byte) {
	e.t.Helper()
	now := time.Now().Add(-time.Hour)
	first = e.batch("default", now.Add(10*time.Minute), n)
	e.write(first)
	e.integrate()
	since = e.verified()
	e.write(e.batch("default", now, late))
	e.integrate()
	return first, since
}

// verified runs a full verify that must pass and returns the checkpoints
// it verified, by cluster.
func (e *env) verified() map[string][]byte {
	e.t.Helper()
	rep := e.verify(true)
	if !rep.OK() {
		e.t.Fatalf("full verify: %s", problems(rep))
	}
	out := map[string][]byte{}
	for _, c := range rep.Clusters {
		if c.Checkpoint == nil {
			e.t.Fatalf("cluster %q passed with no checkpoint", c.Cluster)
		}
		out[c.Cluster] = c.Checkpoint
	}
	return out
}

// TestIncrementalPassesAfterGrowth: after a full verify, the log grows and
// an incremental verify from the checkpoint it verified passes, checking
// the new leaves, and gives the newest checkpoint to start the next from.
func TestIncrementalPassesAfterGrowth(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now, 4))
	e.write(e.batch("other", now, 1))
	e.integrate()
	since := e.verified()
	rep := e.verifySince(since) // nothing new
	if !rep.OK() || rep.Clusters[0].Size != 8 {
		t.Fatalf("incremental, no growth: %+v\n%s", rep.Clusters, problems(rep))
	}
	e.write(e.batch("default", now.Add(time.Minute), 3))
	e.integrate()
	e.write(e.batch("default", now.Add(2*time.Minute), 1)) // pending
	rep = e.verifySince(since)
	if !rep.OK() {
		t.Fatalf("incremental after growth: %s", problems(rep))
	}
	c := rep.Clusters[0]
	if c.Cluster != "default" || !c.Incremental || c.From != 8 || c.Size != 14 || c.Rows < 6 || c.Pending != 2 || c.Checkpoint == nil {
		t.Fatalf("report %+v; want default, incremental from 8 to 14, at least the 6 new rows verified, 2 pending", c)
	}
	cp, err := OpenCheckpoint(c.Checkpoint, e.verifier)
	if err != nil || cp.Size != 14 {
		t.Fatalf("the verified checkpoint: %+v, %v", cp, err)
	}
	// From that one on.
	since["default"] = c.Checkpoint
	e.integrate()
	if rep := e.verifySince(since); !rep.OK() || rep.Clusters[0].From != 14 || rep.Clusters[0].Size != 16 {
		t.Fatalf("incremental again: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestIncrementalNamesTheRow: what an incremental verify finds, and what
// only a full one does.
func TestIncrementalNamesTheRow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(e *env) // after a record of 8 rows verified and 6 more logged
		want   []string     // each in some incremental problem; none: it passes
		full   []string     // each in some full problem
		latest bool         // from the checkpoint of 14 leaves, not 8
	}{{
		name: "update of a row logged after the checkpoint",
		tamper: func(e *env) {
			e.exec(`UPDATE object_versions SET object = '{"x":1}' WHERE uid LIKE 'uid-6-%'`)
		},
		want: []string{`object_versions(cluster="default", uid="uid-6-`, "changed since it was logged at leaf"},
		full: []string{`object_versions(cluster="default", uid="uid-6-`, "changed since it was logged"},
	}, {
		name:   "delete of a row logged after the checkpoint",
		tamper: func(e *env) { e.exec(`DELETE FROM object_versions WHERE uid LIKE 'uid-7-%'`) },
		want:   []string{`object_versions(cluster="default", uid="uid-7-`, "missing: logged at leaf"},
		full:   []string{`object_versions(cluster="default", uid="uid-7-`, "missing: logged at leaf"},
	}, {
		name: "a row inserted around the ingest",
		tamper: func(e *env) {
			e.exec(`INSERT INTO events SELECT cluster, sha256(event_key), stage_at + interval '1 hour', received_at, audit_id, stage, verb, request_uri,
				'mallory', user_uid, user_groups, user_extra, impersonated_user, impersonated_groups, source_ips, user_agent, api_group,
				api_version, resource, subresource, namespace, name, object_uid, response_code, response_reason, response_message,
				request_object, annotations, rules, secret_digested, ingested_at FROM events LIMIT 1`)
		},
		want: []string{`events(cluster="default"`, "not in the log, and not pending"},
		full: []string{`events(cluster="default"`, "not in the log, and not pending"},
	}, {
		name: "the log rolled back behind the verified checkpoint",
		tamper: func(e *env) {
			// A restored backup: the last pass's rows and segment are gone.
			e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
				SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= 8)`)
			e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
				SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= 8)`)
			e.exec(`DELETE FROM log_segments WHERE first_index >= 8`)
		},
		want: []string{"fewer than the 14 of the verified checkpoint: it was rolled back"},
	}, {
		name: "the cluster's whole log and rows deleted",
		tamper: func(e *env) {
			e.exec(`DELETE FROM log_segments`)
			e.exec(`DELETE FROM events`)
			e.exec(`DELETE FROM object_versions`)
		},
		want: []string{"the log has 0 leaves, fewer than the 8 of the verified checkpoint"},
	}, {
		name:   "the verified pass's times moved forward, its newest row changed and a row inserted",
		latest: true,
		tamper: func(e *env) {
			// With no leaf after the verified checkpoint (of 14), the scan
			// of the rows as new as the newest of its pass starts at the
			// time the segment stores: moved forward, the scan would see
			// neither the changed version nor the inserted event.
			e.exec(`UPDATE log_segments SET ats = array_fill('2100-01-01'::timestamptz, ARRAY[cardinality(ats)]) WHERE tree_size = 14`)
			e.exec(`UPDATE object_versions SET object = '{"x":1}' WHERE uid LIKE 'uid-7-%'`)
			e.exec(`INSERT INTO events SELECT cluster, sha256(event_key), stage_at + interval '1 minute', received_at, audit_id, stage, verb, request_uri,
				'mallory', user_uid, user_groups, user_extra, impersonated_user, impersonated_groups, source_ips, user_agent, api_group,
				api_version, resource, subresource, namespace, name, object_uid, response_code, response_reason, response_message,
				request_object, annotations, rules, secret_digested, ingested_at FROM events ORDER BY stage_at DESC LIMIT 1`)
		},
		want: []string{"as the log's segments store it does not lead to the verified checkpoint's root",
			`object_versions(cluster="default", uid="uid-7-`, "changed since it was logged at leaf",
			"not in the log, and not pending"},
		full: []string{"does not match the log's hash", `object_versions(cluster="default", uid="uid-7-`, "not in the log, and not pending"},
	}, {
		name: "the tree's hashes edited before the checkpoint",
		tamper: func(e *env) {
			// The last stored hash of the pass that ends at 8 leaves is
			// the root of the tree of 8.
			e.exec(`UPDATE log_segments SET hashes = substring(hashes FROM 1 FOR length(hashes) - 32) || sha256(hashes) WHERE tree_size = 8`)
		},
		want: []string{"do not give the root of the verified checkpoint"},
		full: []string{"does not match the leaves below it"},
	}, {
		name: "a leaf hash edited before the checkpoint: only a full verify sees it",
		tamper: func(e *env) {
			e.exec(`UPDATE log_segments SET hashes = sha256(hashes) || substring(hashes FROM 33) WHERE first_index = 0`)
		},
		full: []string{"leaf 0 does not match the log's hash"},
	}, {
		name: "update of an old row: only a full verify sees it",
		tamper: func(e *env) {
			e.exec(`UPDATE object_versions SET object = '{"x":1}' WHERE uid LIKE 'uid-1-%'`)
		},
		full: []string{`object_versions(cluster="default", uid="uid-1-`, "changed since it was logged"},
	}, {
		name: "delete of an old row: only a full verify sees it",
		tamper: func(e *env) {
			e.exec(`DELETE FROM events WHERE audit_id = (SELECT audit_id FROM events ORDER BY stage_at LIMIT 1)`)
		},
		full: []string{`events(cluster="default"`, "missing: logged at leaf 0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now().Add(-time.Hour)
			e.write(e.batch("default", now, 4))
			e.integrate()
			since := e.verified()
			e.write(e.batch("default", now.Add(time.Minute), 3))
			e.integrate()
			since14 := e.verified()
			tc.tamper(e)
			base := since
			if tc.latest || strings.Contains(tc.name, "rolled back") {
				base = since14
			}
			rep := e.verifySince(base)
			got := problems(rep)
			if len(tc.want) == 0 && !rep.OK() {
				t.Errorf("incremental failed: %s", got)
			}
			if len(tc.want) > 0 && rep.OK() {
				t.Error("incremental passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no incremental problem says %q; got:\n%s", w, got)
				}
			}
			if rep.OK() != (rep.Clusters[0].Checkpoint != nil) {
				t.Errorf("passed %v, checkpoint %q", rep.OK(), rep.Clusters[0].Checkpoint)
			}
			full := problems(e.verify(false))
			for _, w := range tc.full {
				if !strings.Contains(full, w) {
					t.Errorf("no full problem says %q; got:\n%s", w, full)
				}
			}
		})
	}
}

// TestIncrementalProvesOlderRows: a row logged before the verified
// checkpoint but as new as the newest of its pass is checked by an
// inclusion proof against the verified root: unchanged it passes,
// changed it fails, naming the row and its leaf.
func TestIncrementalProvesOlderRows(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 4))
	e.integrate()
	since := e.verified()
	rep := e.verifySince(since)
	if c := rep.Clusters[0]; !rep.OK() || c.Rows != 2 {
		t.Fatalf("incremental, nothing new: %+v %s; want the 2 newest rows (an event and its version) proven", c, problems(rep))
	}
	e.exec(`UPDATE object_versions SET object = '{"x":1}' WHERE changed_at = (SELECT max(changed_at) FROM object_versions)`)
	got := problems(e.verifySince(since))
	if !strings.Contains(got, `object_versions(cluster="default", uid="uid-4-`) || !strings.Contains(got, "changed since it was logged at leaf") {
		t.Errorf("incremental after an UPDATE of the newest row: %s", got)
	}
}

// TestIncrementalCutoffTimesProven: a retention cutoff logged after the
// verified checkpoint is justified by the newest row logged before it,
// which an incremental verify reads from the log below the checkpoint:
// there, a time moved forward (to make a planted cutoff look justified
// and excuse the rows it deletes) is a problem naming the leaf, and the
// cutoff excuses nothing.
func TestIncrementalCutoffTimesProven(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now.AddDate(0, 0, -10), 2))
	e.integrate()
	since := e.verified()
	e.write(e.batch("default", now.AddDate(0, 0, -5), 2))
	e.integrate()
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)`, now.AddDate(0, 0, -1))
	e.in.o.MinRetention = -100 * 365 * 24 * time.Hour // it logs any cutoff
	e.integrate()
	e.exec(`DELETE FROM events WHERE stage_at > $1`, now.AddDate(0, 0, -6))
	e.exec(`DELETE FROM object_versions WHERE changed_at > $1`, now.AddDate(0, 0, -6))
	// Untouched, the cutoff is later than any retention allowed.
	if got := problems(e.verifySince(since)); strings.Count(got, "planted, not written by retention") != 4 {
		t.Fatalf("incremental, a planted cutoff: want the 4 rows deleted behind it named; got:\n%s", got)
	}
	e.exec(`UPDATE log_segments SET ats = array_fill(now(), ARRAY[cardinality(ats)]) WHERE tree_size = 4`)
	rep := e.verifySince(since)
	got := problems(rep)
	if rep.OK() || !strings.Contains(got, "does not lead to the verified checkpoint's root") || strings.Count(got, "missing: logged at leaf") != 4 {
		t.Fatalf("incremental, the times before the checkpoint moved forward: want the edited leaf and the 4 rows named; got:\n%s", got)
	}
	if c := rep.Clusters[0]; c.Retained != 0 || len(c.Cutoffs) != 1 || c.Cutoffs[0].Justified {
		t.Errorf("retained %d, cutoffs %+v; want none retained, the cutoff unjustified", c.Retained, c.Cutoffs)
	}
}
