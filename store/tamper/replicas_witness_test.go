package tamper

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/note"
)

// replica is a second ingest replica's integrator: its own pool (its own
// connections) to the env's database, its own checkpoint directory.
func (e *env) replica(t *testing.T, dir string, ws ...*litewitness) *Integrator {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), e.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var opts []Witness
	for _, w := range ws {
		opts = append(opts, Witness{URL: w.url, Verifier: w.verifier})
	}
	in, err := NewIntegrator(IntegratorOptions{Pool: pool, Signer: e.signer, Checkpoints: dirBucket(t, dir), MaxLeaves: 7, Witnesses: opts})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func (e *env) treeSize() int64 {
	e.t.Helper()
	return int64(e.count(`SELECT COALESCE(max(tree_size), 0) FROM log_segments WHERE cluster = 'default'`))
}

// TestWitnessTwoReplicas: two replicas take turns integrating one cluster
// (the advisory lock is per pass) and share a real witness. Each one's
// checkpoint the other already got cosigned is superseded, not a
// conflict: an honest, growing log counts none, an idle one stops being
// submitted, and each replica's latest becomes the newest cosigned. A log
// rolled back below what the witness cosigned is counted by both.
func TestWitnessTwoReplicas(t *testing.T) {
	e, ws := witnessEnv(t, 1)
	a := e.in
	bdir := t.TempDir()
	b := e.replica(t, bdir, ws[0])
	ctx := context.Background()
	for range 3 {
		e.write(e.batch("default", time.Now(), 4))
		e.integrate() // A
		e.write(e.batch("default", time.Now(), 1))
		if err := b.IntegrateAll(ctx); err != nil {
			t.Fatal(err)
		}
		b.CosignAll(ctx)
		a.CosignAll(ctx) // A's checkpoint is older than the witness's
	}
	for range 3 { // idle
		a.CosignAll(ctx)
		b.CosignAll(ctx)
	}
	if ca, cb := a.WitnessConflicts(), b.WitnessConflicts(); ca != 0 || cb != 0 {
		t.Fatalf("an honest, growing log: %d and %d witness conflicts, want 0", ca, cb)
	}
	for name, in := range map[string]*Integrator{"A": a, "B": b} {
		if n := len(in.unwitnessed); n != 0 {
			t.Errorf("replica %s still submits %d checkpoints of an idle log", name, n)
		}
	}
	size := e.treeSize()
	vs := []note.Verifier{ws[0].verifier}
	for name, dir := range map[string]string{"A": e.dir, "B": bdir} {
		rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Trusted: dirBucket(t, dir), Witnesses: vs, WitnessQuorum: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Clusters[0].TrustedSize != size || rep.Clusters[0].Cosigned != 1 {
			t.Errorf("replica %s's latest: trusted %d leaves of %d, cosigned %d: %s",
				name, rep.Clusters[0].TrustedSize, size, rep.Clusters[0].Cosigned, problems(rep))
		}
	}

	// A restored backup: every row after the first pass and its segments
	// are gone; the log grows a little, below what the witness cosigned.
	first := e.count(`SELECT min(first_index) FROM log_segments WHERE first_index > 0`)
	e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
		SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= $1)`, first)
	e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
		SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= $1)`, first)
	e.exec(`DELETE FROM log_segments WHERE first_index >= $1`, first)
	e.write(e.batch("default", time.Now(), 1))
	e.integrate()
	if got := e.treeSize(); got >= size {
		t.Fatalf("rolled back to %d leaves, not below the %d cosigned", got, size)
	}
	if err := b.LoadUnwitnessed(ctx); err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]*Integrator{"A": a, "B": b} {
		in.CosignAll(ctx)
		if c := in.WitnessConflicts(); c != 1 {
			t.Errorf("replica %s: %d witness conflicts after a rollback, want 1", name, c)
		}
	}
}

// TestLatestOnlyAdvances: two replicas write one shared checkpoint
// directory (no witnesses). A replica slower to write its older
// checkpoint does not replace the newer latest, and a log rewritten after
// latest was written (rolled back, then grown past it) does not replace
// it either: verify still holds the log to it.
func TestLatestOnlyAdvances(t *testing.T) {
	e := newEnv(t)
	a, b := e.in, e.replica(t, e.dir)
	ctx := context.Background()
	e.write(e.batch("default", time.Now(), 4))
	e.integrate()
	older, err := a.newestCheckpoint(ctx, "default")
	if err != nil || older.size == 0 {
		t.Fatalf("A's checkpoint: %d leaves, %v", older.size, err)
	}
	e.write(e.batch("default", time.Now(), 1))
	if err := b.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	newer := latest(t, e)
	a.writeCheckpoint(ctx, "default", older.size, older.signed, true) // A, late
	if got := latest(t, e); !bytes.Equal(got, newer) {
		t.Fatalf("latest went back to a checkpoint of %d leaves:\n%s", older.size, got)
	}
	if got, _ := os.ReadFile(filepath.Join(e.dir, clusterPrefix("default")+strconv.FormatInt(older.size, 10))); !bytes.Equal(got, older.signed) {
		t.Fatalf("the checkpoint of %d leaves is not kept by its size: %q", older.size, got)
	}
	size := e.treeSize()

	// Rewritten: rolled back to the first pass, then grown past latest.
	first := e.count(`SELECT min(first_index) FROM log_segments WHERE first_index > 0`)
	e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
		SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= $1)`, first)
	e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
		SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= $1)`, first)
	e.exec(`DELETE FROM log_segments WHERE first_index >= $1`, first)
	e.write(e.batch("default", time.Now(), 6))
	e.integrate()
	if got := e.treeSize(); got <= size {
		t.Fatalf("regrown to %d leaves, not past latest's %d", got, size)
	}
	if got := latest(t, e); !bytes.Equal(got, newer) {
		t.Fatalf("latest replaced by a checkpoint of a rewritten log:\n%s", got)
	}
	if got := problems(e.verify(true)); !strings.Contains(got, fmt.Sprintf("does not extend the trusted checkpoint of %d", size)) {
		t.Fatalf("verify: %s", got)
	}
}

// TestWitnessTwoReplicasFork: a replica's stale checkpoint superseded by a
// rewritten log does not pass: the database's newest checkpoint goes to
// the witness with a proof from what it cosigned, which it rejects (422):
// counted, and no latest is written.
func TestWitnessTwoReplicasFork(t *testing.T) {
	e, ws := witnessEnv(t, 1)
	a, b := e.in, e.replica(t, t.TempDir(), ws[0])
	ctx := context.Background()
	e.write(e.batch("default", time.Now(), 4))
	e.integrate() // A: 8 leaves, not yet cosigned
	e.write(e.batch("default", time.Now(), 4))
	if err := b.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	b.CosignAll(ctx) // the witness: 16
	cosigned := e.treeSize()
	first := e.count(`SELECT min(first_index) FROM log_segments WHERE first_index > 0`)
	e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
		SELECT cluster, key, at FROM log_leaves WHERE row_table = 'events' AND log_index >= $1)`, first)
	e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
		SELECT cluster, uid, key FROM log_leaves WHERE row_table = 'object_versions' AND log_index >= $1)`, first)
	e.exec(`DELETE FROM log_segments WHERE first_index >= $1`, first)
	e.write(e.batch("default", time.Now(), 6))
	if err := b.IntegrateAll(ctx); err != nil { // past what the witness cosigned
		t.Fatal(err)
	}
	if got := e.treeSize(); got <= cosigned {
		t.Fatalf("regrown to %d leaves, not past the %d cosigned", got, cosigned)
	}
	a.CosignAll(ctx)
	if c := a.WitnessConflicts(); c != 1 {
		t.Errorf("%d witness conflicts, want 1", c)
	}
	if b, err := ReadTrusted(context.Background(), e.bucket, "default"); b != nil || err != nil {
		t.Fatalf("latest written for a rewritten log: %q, %v", b, err)
	}
}
