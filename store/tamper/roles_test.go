package tamper

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// TestRoles: with the roles of roles.sql, the ingest role writes the
// record and integrates its log, and the reader role, which cannot write,
// verifies it.
func TestRoles(t *testing.T) {
	r := pgtest.NewRoles(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: r.Ingest, TamperLog: true, VersionDigest: VersionDigest, EventDigest: EventDigest})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := &env{t: t, url: r.Ingest, st: st, dir: t.TempDir()}
	e.signer, e.verifier = newKey(t)
	e.in = e.integrator(e.signer)
	e.write(e.batch("default", time.Now(), 3))
	e.integrate()
	e.write(e.batch("default", time.Now(), 1)) // pending: the reader unpacks it (log_pending_refs)
	reader, err := pgxpool.New(ctx, r.Reader)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	rep, err := Verify(ctx, reader, VerifyOptions{Verifier: e.verifier, Trusted: e.bucket})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Clusters[0].Rows != 6 || rep.Clusters[0].Pending != 2 {
		t.Fatalf("verify as the reader: %+v\n%s", rep.Clusters, problems(rep))
	}
	// Incrementally too: it reads log_version_seconds (and
	// log_leaf_index) for the rows logged before the checkpoint.
	rep, err = Verify(ctx, reader, VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": rep.Clusters[0].Checkpoint}})
	if err != nil || !rep.OK() || !rep.Clusters[0].Incremental || rep.Clusters[0].Rows == 0 {
		t.Fatalf("incremental verify as the reader: %v %+v\n%s", err, rep.Clusters, problems(rep))
	}
	for _, table := range []string{"log_leaf_index", "log_version_seconds"} {
		if _, err := reader.Exec(ctx, "DELETE FROM "+table); err == nil {
			t.Errorf("the reader role deleted %s", table)
		}
	}
	if _, err := reader.Exec(ctx, "DELETE FROM log_segments"); err == nil {
		t.Error("the reader role deleted the log")
	}
}
