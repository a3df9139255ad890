package tamper

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestVerifyNullSegmentElement: a NULL (or infinite time) planted in a
// segment's arrays, which cardinality counts, is a malformed segment: a
// problem naming the segment and the array, full or incremental, not an
// error that stops the check.
func TestVerifyNullSegmentElement(t *testing.T) {
	for _, c := range []struct{ set, what string }{
		{"kinds[2] = NULL", "kinds hold a NULL (leaf 7)"}, {"uids[2] = NULL", "uids hold a NULL (leaf 7)"},
		{"keys[2] = NULL", "keys hold a NULL (leaf 7)"}, {"ats[2] = NULL", "ats hold a NULL (leaf 7)"},
		{"ats[6] = 'infinity'", "ats hold an infinite time (leaf 11)"}, {"ats[2] = '-infinity'", "ats hold an infinite time (leaf 7)"},
		// The same with the arrays' subscripts from 0 (the 2nd element, [1]).
		{"kinds = '[0:5]={1,NULL,1,2,1,2}'", "kinds hold a NULL (leaf 7)"},
		{"kinds = ARRAY[kinds[1:3], kinds[4:6]]", "kinds, uids, keys or ats have more than one dimension"},
	} {
		t.Run(c.set, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			now := time.Now()
			e.write(e.batch("default", now.Add(-time.Hour), 3))
			e.integrate()
			since := e.verify(false).Clusters[0].Checkpoint
			e.write(e.batch("default", now.Add(-time.Minute), 3))
			e.integrate()
			e.exec(`UPDATE log_segments SET ` + c.set + ` WHERE cluster = 'default' AND first_index = 6`)
			want := `cluster "default": log: malformed log: segment at 6 (after 6 leaves): its ` + c.what + `: `
			for _, o := range []VerifyOptions{{}, {Since: map[string][]byte{"default": since}}} {
				var found []string
				o.Verifier, o.KeepProblems = e.verifier, -1
				o.OnProblem = func(p Problem) { found = append(found, p.String()) }
				rep, err := Verify(ctx, e.st.Pool(), o)
				if err != nil || len(rep.Clusters) != 1 || rep.Failed != 1 || rep.OK() || len(found) != 1 || !strings.Contains(found[0], want) {
					t.Fatalf("incremental %v: %v, %d problems %q; want one, %q", o.Since != nil, err, rep.Failed, found, want)
				}
			}
		})
	}
}

// TestVerifyClusterErrorGoesOn: a cluster whose check cannot run (here a
// row whose time is infinite, which no time.Time holds) is a problem of
// that cluster, and the other clusters are checked: one cluster's planted
// row does not hide another's tampering.
func TestVerifyClusterErrorGoesOn(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	e.write(e.batch("a", now.Add(-time.Hour), 2))
	e.write(e.batch("b", now.Add(-time.Hour), 2))
	e.write(e.batch("c", now.Add(-time.Hour), 2))
	e.integrate()
	e.exec(`UPDATE object_versions SET verb = 'delete' WHERE cluster = 'b'`)
	e.exec(`UPDATE object_versions SET changed_at = 'infinity' WHERE cluster = 'a'`)
	var found []string
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, KeepProblems: -1,
		OnProblem: func(p Problem) { found = append(found, p.String()) }})
	if err != nil || len(rep.Clusters) != 3 {
		t.Fatalf("verify: %v, %d clusters; want the three checked\n%s", err, len(rep.Clusters), strings.Join(found, "\n"))
	}
	by := map[string]ClusterReport{}
	for _, c := range rep.Clusters {
		by[c.Cluster] = c
	}
	if a := by["a"]; a.Problems != 1 || a.Checkpoint != nil || len(found) == 0 ||
		!strings.HasPrefix(found[0], `cluster "a": check: it could not be checked: `) {
		t.Errorf("cluster a: %+v; want one problem, the check that could not run:\n%s", a, strings.Join(found, "\n"))
	}
	if b := by["b"]; b.Problems != 2 || strings.Count(strings.Join(found, "\n"), `cluster "b": object_versions`) != 2 {
		t.Errorf("cluster b: %+v; want its two changed versions:\n%s", b, strings.Join(found, "\n"))
	}
	if c := by["c"]; c.Problems != 0 || c.Checkpoint == nil || c.Rows != 4 {
		t.Errorf("cluster c: %+v; want verified", c)
	}
	if rep.Failed != 3 || len(found) != 3 || rep.OK() {
		t.Errorf("%d problems, %d reported; want 3:\n%s", rep.Failed, len(found), strings.Join(found, "\n"))
	}
	// Stopped (a deadline, a signal): an error, not a problem per cluster.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Verify(stopped, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Cluster: "c"}); err == nil {
		t.Errorf("verify with its context done: no error")
	}
}

// TestVerifyNullHidesNoOtherCluster: a NULL planted in cluster a's
// segment is reported as a's malformed segment, and cluster b's edited
// versions are reported too (review r4 F2).
func TestVerifyNullHidesNoOtherCluster(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("a", now.Add(-time.Hour), 2))
	e.write(e.batch("b", now.Add(-time.Hour), 2))
	e.integrate()
	e.exec(`UPDATE object_versions SET verb = 'delete' WHERE cluster = 'b'`)
	e.exec(`UPDATE log_segments SET kinds[1] = NULL WHERE cluster = 'a'`)
	var found []string
	rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, KeepProblems: -1,
		OnProblem: func(p Problem) { found = append(found, p.String()) }})
	all := strings.Join(found, "\n")
	if err != nil || len(rep.Clusters) != 2 || rep.Failed != 3 || !strings.Contains(all, `cluster "a": log: malformed log: segment at 0 (after 0 leaves): its kinds hold a NULL`) ||
		strings.Count(all, `cluster "b": object_versions`) != 2 {
		t.Fatalf("verify: %v, %d clusters, %d problems:\n%s\nwant a's segment and b's two versions", err, len(rep.Clusters), rep.Failed, all)
	}
}

// TestVerifyInfinitePendingTime: a pending row whose time is infinite
// (planted before migration 00031 refused it; the integrator skips it)
// names no row: verify skips it, as it does a NULL one, and goes on.
func TestVerifyInfinitePendingTime(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	e.write(e.batch("default", now.Add(-time.Hour), 2))
	e.integrate()
	since := e.verify(false).Clusters[0].Checkpoint
	e.write(e.batch("default", now.Add(-time.Minute), 1)) // pending
	e.withoutFiniteChecks()
	e.exec(`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{2}', '{u}', ARRAY['\x00'::bytea], ARRAY['infinity'::timestamptz])`)
	e.exec(`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('default', '{1}', '{""}', ARRAY['\x01'::bytea], ARRAY['-infinity'::timestamptz])`)
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, 'infinity')`)
	for _, o := range []VerifyOptions{{}, {Since: map[string][]byte{"default": since}}} {
		o.Verifier = e.verifier
		rep, err := Verify(ctx, e.st.Pool(), o)
		if err != nil || !rep.OK() || rep.Clusters[0].Pending != 2 || len(rep.Clusters[0].PendingCutoffs) != 0 {
			t.Fatalf("incremental %v: %v %+v\n%s; want OK, the batch's two rows pending", o.Since != nil, err, rep.Clusters, problems(rep))
		}
	}
}
