package tamper

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"
)

// TestCheckpointBuckets: the integrator writes its checkpoints, and
// verify reads them, through the blob API as --checkpoint-url opens it:
// a file:// bucket (the real file system) and an S3 server over HTTP
// (gofakes3 in process, through s3blob and the AWS SDK). Each holds the
// layout's objects (cluster=NAME/SIZE and latest, a hostile name
// escaped); verify trusts latest; an incremental verify keeps verified
// there and reads it back; a log rolled back to an older checkpoint fails
// against latest, and a bucket that does not exist is an error.
func TestCheckpointBuckets(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) (bucket, missing string)
	}{{
		name: "file",
		url: func(t *testing.T) (string, string) {
			dir := filepath.ToSlash(t.TempDir())
			return "file://" + dir + "?metadata=skip&no_tmp_dir=1", "file://" + dir + "/typo"
		},
	}, {
		name: "s3",
		url: func(t *testing.T) (string, string) {
			backend := s3mem.New()
			if err := backend.CreateBucket("checkpoints"); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(gofakes3.New(backend).Server())
			t.Cleanup(srv.Close)
			// The SDK's standard environment, as IRSA or a key pair sets it.
			t.Setenv("AWS_ACCESS_KEY_ID", "test")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
			q := "?region=us-east-1&use_path_style=true&endpoint=" + srv.URL
			return "s3://checkpoints" + q, "s3://no-such-bucket" + q
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			u, missing := tc.url(t)
			b, err := blob.OpenBucket(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			e.bucket = b
			e.in = e.integrator(e.signer)
			e.in.o.Interval = time.Hour // its two passes write one checkpoint
			const hostile = "a/../b\nc"
			// Two passes (MaxLeaves 7): a batch of 8 rows, then one of 4,
			// in one round: the newest checkpoint is written.
			e.write(e.batch("default", time.Now(), 4))
			e.write(e.batch("default", time.Now(), 2))
			e.write(e.batch(hostile, time.Now(), 1))
			e.integrate()

			var keys []string
			it := b.List(nil)
			for {
				obj, err := it.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, obj.Key)
			}
			want := []string{"cluster=a%2F..%2Fb%0Ac/2", "cluster=a%2F..%2Fb%0Ac/latest",
				"cluster=default/12", "cluster=default/latest"}
			if !slices.Equal(keys, want) {
				t.Errorf("objects %q, want %q", keys, want)
			}

			rep := e.verify(true)
			if !rep.OK() || len(rep.Clusters) != 2 || !rep.Clusters[1].Trusted || rep.Clusters[1].TrustedSize != 12 {
				t.Fatalf("verify: %+v\n%s", rep.Clusters, problems(rep))
			}
			for _, c := range rep.Clusters {
				if err := WriteVerified(ctx, b, c.Cluster, c.Checkpoint); err != nil {
					t.Fatal(err)
				}
			}
			since, err := ReadVerified(ctx, b)
			if err != nil || len(since) != 2 || string(since["default"]) != string(rep.Clusters[1].Checkpoint) {
				t.Fatalf("verified checkpoints read back: %q, %v", since, err)
			}
			inc, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Trusted: b, Since: since})
			if err != nil || !inc.OK() || !inc.Clusters[1].Incremental || inc.Clusters[1].From != 12 {
				t.Fatalf("incremental verify: %v %+v\n%s", err, inc.Clusters, problems(inc))
			}

			// A restored backup: the last pass's rows and segment are gone,
			// the log before them is whole and signed.
			e.exec(`DELETE FROM events WHERE (cluster, event_key, stage_at) IN (
				SELECT cluster, key, at FROM log_leaves WHERE cluster = 'default' AND row_table = 'events' AND log_index >= 8)`)
			e.exec(`DELETE FROM object_versions WHERE (cluster, uid, version_key) IN (
				SELECT cluster, uid, key FROM log_leaves WHERE cluster = 'default' AND row_table = 'object_versions' AND log_index >= 8)`)
			e.exec(`DELETE FROM log_segments WHERE cluster = 'default' AND first_index >= 8`)
			rep = e.verify(true)
			if got := problems(rep); rep.OK() || !strings.Contains(got, "fewer than the 12 of the trusted checkpoint: it was rolled back") {
				t.Errorf("verify of a rolled-back log passed or did not say so:\n%s", got)
			}

			// With or without a cluster named (one reads only its latest).
			for _, cluster := range []string{"", "default"} {
				mb, err := blob.OpenBucket(ctx, missing)
				if err == nil {
					_, err = Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Cluster: cluster, Trusted: mb})
					_ = mb.Close()
				}
				if err == nil {
					t.Errorf("verify --cluster %q against %s: no error", cluster, missing)
				}
			}
		})
	}
}

// TestCheckpointFileOncePerRound: the passes of a backlog, one after the
// other in one round (IntegrateAll), write the newest checkpoint once, not
// one per pass (each write reads latest, from the file and the database,
// and syncs two files), and at most every Interval before it, so that a
// long backlog's file does not lag its log by more; latest is the log's,
// and verify trusts it. A pass run alone (Integrate) writes its own.
func TestCheckpointFileOncePerRound(t *testing.T) {
	e := newEnv(t) // a pass takes batches, whole, until it has 7 rows or more
	backlog := func(at time.Time) {
		for i := range 5 {
			e.write(e.batch("default", at.Add(time.Duration(i)*time.Second), 3))
		}
	}
	files := func() []string {
		t.Helper()
		entries, err := os.ReadDir(filepath.Join(e.dir, clusterPrefix("default")))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range entries {
			names = append(names, d.Name())
		}
		slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
		return names
	}
	e.in.o.Interval = time.Hour // the round is shorter
	backlog(time.Now().Add(-time.Hour))
	e.integrate()
	if n := e.count(`SELECT count(*) FROM log_segments`); n != 3 {
		t.Fatalf("%d segments; want the backlog logged in 3 passes", n)
	}
	if got := files(); !slices.Equal(got, []string{"30", "latest"}) {
		t.Errorf("checkpoint files after a round of passes: %q; want the newest (30) and latest", got)
	}
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Size != 30 || rep.Clusters[0].TrustedSize != 30 {
		t.Fatalf("verify against latest: %+v\n%s", rep.Clusters, problems(rep))
	}
	e.write(e.batch("default", time.Now(), 1))
	if _, err := e.in.Integrate(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	if got := files(); !slices.Equal(got, []string{"30", "32", "latest"}) {
		t.Errorf("checkpoint files after a pass alone: %q; want 30, 32 and latest", got)
	}
	e.in.o.Interval = time.Nanosecond // every pass is an Interval after the last write
	backlog(time.Now().Add(-30 * time.Minute))
	e.integrate()
	if got := files(); !slices.Equal(got, []string{"30", "32", "44", "56", "62", "latest"}) {
		t.Errorf("checkpoint files after a round of passes an Interval apart: %q; want each pass's", got)
	}
}
