package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/store/tamper"
	"github.com/options-record/options-record/test/gen"
)

// TestLogVerifyLoopIsIncremental: the periodic verify never checks a
// cluster fully: its first run starts from the newest checkpoint in the
// database (or the verified one in --checkpoint-dir) and reads no segment
// before it; the next reads only the segments logged since, and a row
// changed after the start is reported.
func TestLogVerifyLoopIsIncremental(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	ctx := context.Background()
	keyFile := filepath.Join(dir, "log.key")
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: keyFile, Out: io.Discard}); err != nil {
		t.Fatal(err)
	}
	signer, err := loadLogSigner(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := logVerifier(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	checkpoints, _, err := openCheckpoints(ctx, filepath.Join(dir, "checkpoints"), "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer checkpoints.Close()
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: pool, Signer: signer, Checkpoints: checkpoints})
	if err != nil {
		t.Fatal(err)
	}
	// record imports one object (an event and its version) and logs it.
	n := 0
	record := func(name string) {
		t.Helper()
		n++
		lines := filepath.Join(dir, name+".log")
		if err := os.WriteFile(lines, gen.Lines(gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name(name),
			gen.Response(gen.ConfigMap("prod", name, "uid-"+name, int64(10+n), nil)))), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Import(ctx, ImportOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir},
			Rules: RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"}, Files: []string{lines}, Out: io.Discard,
			BatchSize: 10, TamperLog: true}); err != nil {
			t.Fatal(err)
		}
		if err := in.IntegrateAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	record("a")
	record("b")
	var size int64
	if err := pool.QueryRow(ctx, `SELECT max(tree_size) FROM log_segments WHERE cluster = 'default'`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	// once runs the loop once and returns the default cluster's report.
	once := func(l *logVerifyLoop) (tamper.ClusterReport, string) {
		t.Helper()
		rep, err := l.once(ctx, pool, log)
		if err != nil || len(rep.Clusters) != 1 {
			t.Fatalf("verify: %v, %+v", err, rep)
		}
		var ps strings.Builder
		for _, p := range rep.Problems {
			ps.WriteString(p.String() + "\n")
		}
		return rep.Clusters[0], ps.String()
	}
	l, err := newLogVerifyLoop(verifier, checkpoints, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c, ps := once(l)
	if ps != "" || !c.Incremental || c.From != size || c.Size != size || c.Segments != 0 {
		t.Fatalf("first run: %+v\n%s; want incremental from the newest checkpoint (%d leaves), no segment read", c, ps, size)
	}
	record("c")
	c, ps = once(l)
	if ps != "" || !c.Incremental || c.From != size || c.Size <= size || c.Segments != 1 {
		t.Fatalf("second run: %+v\n%s; want incremental from %d leaves, the one new segment read", c, ps, size)
	}
	// A loop that starts where verify --incremental left a verified
	// checkpoint starts from it, not from the newest.
	var first []byte
	if err := pool.QueryRow(ctx, `SELECT checkpoint FROM log_segments WHERE cluster = 'default' AND tree_size = $1`, size).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if err := tamper.WriteVerified(ctx, checkpoints, "default", first); err != nil {
		t.Fatal(err)
	}
	l2, err := newLogVerifyLoop(verifier, checkpoints, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if c2, ps := once(l2); ps != "" || c2.From != size || c2.Segments != 1 || !bytes.Equal(l2.since["default"], c.Checkpoint) {
		t.Fatalf("from the verified checkpoint: %+v\n%s; want from %d leaves, the one new segment read", c2, ps, size)
	}
	// Verified checkpoints that cannot be read (an ingest identity
	// without read access; here a verified that is a link to itself: a
	// chmod does not deny root) are none: the loop warns once and starts
	// from the newest checkpoint in the database.
	verifiedFile := filepath.Join(dir, "checkpoints", "cluster=default", "verified")
	if err := os.Remove(verifiedFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("verified", verifiedFile); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	l3, err := newLogVerifyLoop(verifier, checkpoints, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rep, err := l3.once(ctx, pool, slog.New(slog.NewTextHandler(&logged, nil)))
		if err != nil || len(rep.Clusters) != 1 || !rep.OK() || rep.Clusters[0].From != c.Size {
			t.Fatalf("verified checkpoints unreadable: %v, %+v; want verified from the newest checkpoint (%d leaves)", err, rep, c.Size)
		}
	}
	if n := strings.Count(logged.String(), "level=WARN"); n != 1 || !strings.Contains(logged.String(), "verified checkpoints") {
		t.Fatalf("verified checkpoints unreadable: %d warnings, want 1:\n%s", n, logged.String())
	}
	// A tamper after the start: the row logged since, changed.
	if _, err := pool.Exec(ctx, `UPDATE object_versions SET object = '{}' WHERE uid = 'uid-c'`); err != nil {
		t.Fatal(err)
	}
	record("d")
	if _, ps := once(l); !strings.Contains(ps, `object_versions(cluster="default", uid="uid-c"`) || !strings.Contains(ps, "changed since it was logged") {
		t.Fatalf("after an UPDATE of a row logged since the start: %q", ps)
	}
}

// TestLogVerifyLoopGoesOnPastACluster: a cluster whose log holds a NULL
// planted (which no leaf has), and one whose check cannot run (a version
// whose time is infinite, which no time.Time holds), are each a problem
// of that cluster; the loop checks the others, reports their problems,
// counts them all in the problems gauge, does not set the last success,
// and moves a clean cluster's starting checkpoint on (review r4 F2).
func TestLogVerifyLoopGoesOnPastACluster(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	ctx := context.Background()
	keyFile := filepath.Join(dir, "log.key")
	var pub bytes.Buffer
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: keyFile, Out: &pub}); err != nil {
		t.Fatal(err)
	}
	signer, err := loadLogSigner(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := logVerifier(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: pool, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	n := 0
	record := func() {
		t.Helper()
		for _, cluster := range []string{"a", "b", "c", "d"} {
			n++
			name := cluster + strconv.Itoa(n)
			lines := filepath.Join(dir, name+".log")
			if err := os.WriteFile(lines, gen.Lines(gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name(name),
				gen.Response(gen.ConfigMap("prod", name, "uid-"+name, int64(10+n), nil)))), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := Import(ctx, ImportOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir}, Cluster: cluster,
				Rules: RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"}, Files: []string{lines}, Out: io.Discard,
				BatchSize: 10, TamperLog: true}); err != nil {
				t.Fatal(err)
			}
		}
		if err := in.IntegrateAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	gauge := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no metric %s", name)
		return 0
	}
	l, err := newLogVerifyLoop(verifier, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	record()
	if rep, err := l.once(ctx, pool, log); err != nil || !rep.OK() || len(rep.Clusters) != 4 {
		t.Fatalf("first run: %v, %+v", err, rep)
	}
	l.lastSuccess.Set(0) // to see whether the next run sets it
	record()
	exec(`UPDATE log_segments SET kinds[1] = NULL WHERE cluster = 'a' AND first_index = (SELECT max(first_index) FROM log_segments WHERE cluster = 'a')`)
	exec(`UPDATE object_versions SET object = '{}' WHERE cluster = 'b' AND uid = 'uid-b6'`)
	exec(`UPDATE object_versions SET changed_at = 'infinity' WHERE cluster = 'd' AND uid = 'uid-d8'`)
	var newestC []byte
	if err := pool.QueryRow(ctx, `SELECT checkpoint FROM log_segments WHERE cluster = 'c' ORDER BY first_index DESC LIMIT 1`).Scan(&newestC); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	rep, err := l.once(ctx, pool, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil || len(rep.Clusters) != 4 {
		t.Fatalf("second run: %v, %+v; want the four clusters checked", err, rep)
	}
	out := logged.String()
	if rep.Failed != 3 || !strings.Contains(out, `cluster=a row=log problem="malformed log: segment at 2 (after 2 leaves): its kinds hold a NULL (leaf 2)`) ||
		!strings.Contains(out, `cluster=b row="object_versions(cluster=\"b\", uid=\"uid-b6\"`) ||
		!strings.Contains(out, `cluster=d row=check problem="it could not be checked: `) {
		t.Errorf("second run: %d problems, logged:\n%s\nwant a's segment, b's changed version and d's check", rep.Failed, out)
	}
	if p, s := gauge("options_record_log_verify_problems"), gauge("options_record_log_verify_last_success_timestamp_seconds"); p != 3 || s != 0 {
		t.Errorf("problems gauge %v, last success %v; want 3 and 0 (not set)", p, s)
	}
	if !bytes.Equal(l.since["c"], newestC) {
		t.Errorf("cluster c starts the next run from %q, want its newest checkpoint %q", l.since["c"], newestC)
	}
	// options-record verify (full) prints a FAIL line for each, the
	// summary of each cluster, and fails counting them all.
	var printed bytes.Buffer
	err = Verify(ctx, VerifyOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir}, VerifierKey: strings.TrimSpace(pub.String()), Out: &printed})
	out = printed.String()
	for _, want := range []string{
		"FAIL cluster \"a\": log: malformed log: segment at 2 (after 2 leaves): its kinds hold a NULL (leaf 2): ",
		"FAIL cluster \"b\": object_versions(cluster=\"b\", uid=\"uid-b6\"",
		"FAIL cluster \"d\": check: it could not be checked: ",
		"cluster \"c\": 4 leaves", "cluster \"d\": ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify: %v; want %q in\n%s", err, want, out)
		}
	}
	if !errors.Is(err, ErrVerifyFailed) || !strings.HasSuffix(err.Error(), ": 3 problems") {
		t.Errorf("verify: %v; want 3 problems", err)
	}
}
