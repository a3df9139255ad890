package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/store/tamper"
	"github.com/options-record/options-record/test/gen"
)

// TestVerifyCommand: a key from log-key signs the log of an import, the
// verify command passes on it, and after an UPDATE of a stored state it
// fails, naming the row.
func TestVerifyCommand(t *testing.T) {
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
	lines := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(lines, gen.Lines(
		gen.Event(gen.Namespace("prod"), gen.Name("a"), gen.Response(gen.ConfigMap("prod", "a", "uid-a", 10, map[string]string{"k": "v"}))),
		gen.Event(gen.Namespace("prod"), gen.Name("b"), gen.Response(gen.ConfigMap("prod", "b", "uid-b", 11, map[string]string{"k": "w"}))),
	), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Import(ctx, ImportOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir},
		Rules: RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"}, Files: []string{lines}, Out: &out,
		BatchSize: 10, TamperLog: true}); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	checkpoints := filepath.Join(dir, "checkpoints")
	bucket, _, err := openCheckpoints(ctx, checkpoints, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: pool, Signer: signer, Checkpoints: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	vo := VerifyOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir}, VerifierKey: strings.TrimSpace(pub.String()),
		CheckpointDir: checkpoints, Out: &out}
	out.Reset()
	if err := Verify(ctx, vo); err != nil {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `cluster "default": 4 leaves`) || !strings.Contains(out.String(), "  trusted checkpoint of 4 leaves: checked\n") {
		t.Errorf("verify printed:\n%s", out.String())
	}
	checkProofs(t, pool, strings.TrimSpace(pub.String()))
	// --require-trusted: the same log against a location without its
	// checkpoints (mistyped, or emptied) fails; against its own, passes.
	vo.RequireTrusted = true
	for _, c := range []struct {
		dir  string
		fail bool
	}{{t.TempDir(), true}, {checkpoints, false}} {
		vo.CheckpointDir = c.dir
		out.Reset()
		err := Verify(ctx, vo)
		if c.fail != errors.Is(err, ErrVerifyFailed) || c.fail != strings.Contains(out.String(), `FAIL cluster "default": its log of 4 leaves has no trusted checkpoint in `+strconv.Quote(c.dir)+" (--require-trusted)") {
			t.Errorf("verify --checkpoint-dir %s --require-trusted: %v\n%s", c.dir, err, out.String())
		}
	}
	vo.RequireTrusted = false
	// --incremental: a full check the first time, which keeps the
	// checkpoint it verified; from it the next time.
	vo.Incremental = true
	for _, want := range []string{"  checked fully: no verified checkpoint of it in ", "  checked from the verified checkpoint of 4 leaves (incremental)\n"} {
		out.Reset()
		if err := Verify(ctx, vo); err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("verify --incremental: %v; want %q in\n%s", err, want, out.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(checkpoints, "cluster=default", "verified")); err != nil || !bytes.Contains(b, []byte("\n4\n")) {
		t.Errorf("the verified checkpoint: %q, %v", b, err)
	}
	vo.Incremental = false
	if _, err := pool.Exec(ctx, `UPDATE object_versions SET object = '{}' WHERE uid = 'uid-b'`); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = Verify(ctx, vo)
	// The problem is printed as found, not kept: the summary counts it all
	// the same.
	if !errors.Is(err, ErrVerifyFailed) || !strings.HasSuffix(err.Error(), ": 1 problems") ||
		!strings.Contains(out.String(), "\n  1 problems (each a FAIL line, printed as found)\n") ||
		!strings.Contains(out.String(), `FAIL cluster "default": object_versions(cluster="default", uid="uid-b"`) {
		t.Errorf("verify after an UPDATE: %v\n%s", err, out.String())
	}
	// A cutoff planted around the retention pass: the integrator refuses
	// it, and verify prints it as pending, covering nothing.
	if _, err := pool.Exec(ctx, `INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, now())`); err != nil {
		t.Fatal(err)
	}
	if err := in.IntegrateAll(ctx); err != nil || in.RefusedCutoffs() != 1 {
		t.Fatalf("integrate: %v, %d cutoffs refused, want 1", err, in.RefusedCutoffs())
	}
	out.Reset()
	_ = Verify(ctx, vo)
	if !regexp.MustCompile(`(?m)^  retention cutoff \S+ pending, not logged: it covers nothing$`).MatchString(out.String()) {
		t.Errorf("verify did not print the pending cutoff:\n%s", out.String())
	}
}

// TestServeKeepsTheLog: serve --log-signing-key-file logs what its webhook
// stores, signs the checkpoint and writes it to --checkpoint-dir, and
// verify passes on the record with it.
func TestServeKeepsTheLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := pgtest.NewDatabase(t)
	keyFile := filepath.Join(dir, "log.key")
	var pub bytes.Buffer
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: keyFile, Out: &pub}); err != nil {
		t.Fatal(err)
	}
	checkpoints := filepath.Join(dir, "checkpoints")
	webhook, metrics := startServe(t, ServeOptions{
		Roles:       []Role{RoleIngest},
		Database:    DatabaseOptions{URL: dsn, DataDir: dir},
		Rules:       RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"},
		WebhookAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
		LogSigningKeyFile: keyFile, CheckpointDir: checkpoints, VerifyInterval: 20 * time.Millisecond,
	})
	tok, err := os.ReadFile(filepath.Join(dir, "webhook-token"))
	if err != nil {
		t.Fatal(err)
	}
	body := gen.EventList(gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name("x"),
		gen.Response(gen.ConfigMap("prod", "x", "uid-x", 5, nil))))
	req, _ := http.NewRequest(http.MethodPost, "https://"+webhook.String()+"/audit", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tlsClient(t, dir).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook answered %d", resp.StatusCode)
	}
	// The integrator's pass, about a second later: its checkpoint file.
	latest := filepath.Join(checkpoints, "cluster=default", "latest")
	for i := 0; ; i++ {
		if _, err := os.Stat(latest); err == nil {
			break
		}
		if i == 600 {
			t.Fatal("no checkpoint written within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out bytes.Buffer
	err = Verify(context.Background(), VerifyOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir},
		VerifierKey: strings.TrimSpace(pub.String()), CheckpointDir: checkpoints, Out: &out})
	// The event and its version at least; the rules' own rows (a baseline,
	// a retention cutoff) may be logged by the same or a later pass.
	m := regexp.MustCompile(`cluster "default": (\d+) leaves, root \S+; (\d+) rows verified`).FindStringSubmatch(out.String())
	if err != nil || m == nil || atoi(m[2]) < 2 {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	// The periodic verify (--verify-interval) passes on it, then finds a
	// row inserted around the ingest.
	waitMetric(t, metrics.String(), "options_record_log_verify_last_success_timestamp_seconds", func(v float64) bool { return v > 0 })
	waitMetric(t, metrics.String(), "options_record_log_verify_problems", func(v float64) bool { return v == 0 })
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), `INSERT INTO events SELECT cluster, sha256(event_key), stage_at + interval '1 hour', received_at, audit_id, stage, verb, request_uri,
		'mallory', user_uid, user_groups, user_extra, impersonated_user, impersonated_groups, source_ips, user_agent, api_group,
		api_version, resource, subresource, namespace, name, object_uid, response_code, response_reason, response_message,
		request_object, annotations, rules, secret_digested, ingested_at FROM events LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, metrics.String(), "options_record_log_verify_problems", func(v float64) bool { return v >= 1 })
	// A pending batch planted around the ingest (its packed value of an
	// unknown version) is taken out unlogged, and counted.
	if _, err := pool.Exec(context.Background(), `INSERT INTO log_pending_batches (cluster, refs, first_at, ref_count) VALUES ('default', '\x02', now(), 1)`); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, metrics.String(), "options_record_log_malformed_pending_batches_total", func(v float64) bool { return v == 1 })
}

// waitMetric waits (a minute at most) until the metric of the server at
// addr has a value ok accepts.
func waitMetric(t *testing.T, addr, name string, ok func(float64) bool) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`)
	var last string
	for i := 0; i < 600; i++ {
		r, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if m := re.FindSubmatch(b); m != nil {
			last = string(m[1])
			if v, err := strconv.ParseFloat(last, 64); err == nil && ok(v) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s is %q after a minute", name, last)
}

// TestLogVerifier: the verifier derived from a signing key file opens what
// the key signs, and another key's verifier does not.
func TestLogVerifier(t *testing.T) {
	dir := t.TempDir()
	var pub bytes.Buffer
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: filepath.Join(dir, "a.key"), Out: &pub}); err != nil {
		t.Fatal(err)
	}
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: filepath.Join(dir, "b.key"), Out: io.Discard}); err != nil {
		t.Fatal(err)
	}
	s, err := loadLogSigner(filepath.Join(dir, "a.key"))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: "checkpoint\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	a, err := logVerifier(filepath.Join(dir, "a.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(a)); err != nil {
		t.Errorf("the derived verifier: %v", err)
	}
	if want, _ := note.NewVerifier(strings.TrimSpace(pub.String())); want.KeyHash() != a.KeyHash() || want.Name() != a.Name() {
		t.Errorf("derived verifier %s/%x, log-key printed %s", a.Name(), a.KeyHash(), pub.String())
	}
	b, err := logVerifier(filepath.Join(dir, "b.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(b)); err == nil {
		t.Error("another key's verifier opened the note")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.key"), []byte("PRIVATE+KEY+x+00000000+AAAA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := logVerifier(filepath.Join(dir, "bad.key")); err == nil {
		t.Error("a malformed key gave a verifier")
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// checkProofs: the proof the API answers for a version (versionProofs),
// saved with its state as FILE.tlog-proof and FILE.json, passes verify
// --proof with the public key alone (no database); a changed state file, a
// proof cut short or checked with another key fails, naming the file.
func checkProofs(t *testing.T, pool *pgxpool.Pool, pub string) {
	t.Helper()
	ctx := context.Background()
	var key []byte
	var object string
	if err := pool.QueryRow(ctx, `SELECT version_key, object::text FROM object_versions WHERE uid = 'uid-a'`).Scan(&key, &object); err != nil {
		t.Fatal(err)
	}
	proof, err := versionProofs(pool)(ctx, "default", "uid-a", key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := versionProofs(pool)(ctx, "default", "uid-a", make([]byte, 32)); !errors.Is(err, restoreapi.ErrNotLogged) {
		t.Errorf("the proof of a version the log does not hold: %v", err)
	}
	dir := t.TempDir()
	good, cut := filepath.Join(dir, "a"), filepath.Join(dir, "cut")
	for name, data := range map[string]string{good + ProofSuffix: string(proof),
		cut + ProofSuffix: string(proof[:bytes.LastIndex(proof, []byte("\n\n"))+2])} {
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	// No database: a URL that cannot be reached is never used.
	vo := VerifyOptions{Database: DatabaseOptions{URL: "postgres://nowhere.invalid/x"}, VerifierKey: pub, Proofs: []string{good + ProofSuffix},
		WriteState: true, Out: &out}
	if err := Verify(ctx, vo); err != nil {
		t.Fatalf("verify --proof --write-state: %v\n%s", err, out.String())
	}
	if b, err := os.ReadFile(good + ".json"); err != nil || string(b) != object {
		t.Fatalf("the state written: %q, %v; want %q", b, err, object)
	}
	out.Reset()
	vo.WriteState = false
	if err := Verify(ctx, vo); err != nil || !strings.Contains(out.String(), `OK "`+good+ProofSuffix+`": object_versions(cluster="default", uid="uid-a"`) ||
		!strings.Contains(out.String(), `"`+good+`.json" is its logged state`) {
		t.Fatalf("verify --proof: %v\n%s", err, out.String())
	}
	if err := os.WriteFile(good+".json", []byte(strings.Replace(object, `"v"`, `"x"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	vo.Proofs = []string{good + ProofSuffix, cut + ProofSuffix}
	err = Verify(ctx, vo)
	if !errors.Is(err, ErrVerifyFailed) || !strings.Contains(out.String(), `FAIL "`+good+ProofSuffix+`": "`+good+`.json" is not the logged state`) ||
		!strings.Contains(out.String(), `FAIL "`+cut+ProofSuffix+`": checkpoint signature`) {
		t.Errorf("verify --proof of a changed state and a cut proof: %v\n%s", err, out.String())
	}
	var other bytes.Buffer
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: filepath.Join(dir, "other.key"), Out: &other}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	vo.VerifierKey, vo.Proofs = strings.TrimSpace(other.String()), []string{good + ProofSuffix}
	if err := Verify(ctx, vo); !errors.Is(err, ErrVerifyFailed) || !strings.Contains(out.String(), "checkpoint signature") {
		t.Errorf("verify --proof with another key: %v\n%s", err, out.String())
	}
}

// TestVerifyCheckpointDir: a --checkpoint-dir that does not exist (a
// mistyped path) or is no directory is an error naming it, with or without
// --cluster, not an empty directory that skips the trusted checks; an
// existing empty one is allowed, and verify says it found no trusted
// checkpoint there.
func TestVerifyCheckpointDir(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	ctx := context.Background()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, cc, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	if err := LogKey(LogKeyOptions{Name: "record.example/log", SigningKeyFile: filepath.Join(dir, "log.key"), Out: &pub}); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "a-file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	vo := VerifyOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir}, VerifierKey: strings.TrimSpace(pub.String()), Out: &out}
	for _, c := range []struct{ dir, cluster string }{
		{filepath.Join(dir, "checkpoints-typo"), ""}, {filepath.Join(dir, "checkpoints-typo"), "default"},
		{notDir, ""}, {notDir, "default"},
	} {
		vo.CheckpointDir, vo.Cluster = c.dir, c.cluster
		out.Reset()
		if err := Verify(ctx, vo); err == nil || !strings.Contains(err.Error(), c.dir) {
			t.Errorf("verify --checkpoint-dir %s --cluster %q: %v, want an error naming it\n%s", c.dir, c.cluster, err, out.String())
		}
	}
	vo.CheckpointDir, vo.Cluster = empty, ""
	out.Reset()
	if err := Verify(ctx, vo); err != nil || !strings.Contains(out.String(), "no trusted checkpoint found in "+strconv.Quote(empty)) {
		t.Errorf("verify --checkpoint-dir EMPTY: %v\n%s", err, out.String())
	}
	// --require-trusted: a record with no log yet has nothing to check.
	vo.RequireTrusted = true
	out.Reset()
	if err := Verify(ctx, vo); err != nil {
		t.Errorf("verify --checkpoint-dir EMPTY --require-trusted of a record without a log: %v\n%s", err, out.String())
	}
	vo.RequireTrusted = false
	// --checkpoint-url: the same for a file:// URL; a scheme no driver
	// opens, or both flags, is an error.
	for _, c := range []struct{ dir, url, want string }{
		{"", "file://" + filepath.Join(dir, "checkpoints-typo"), filepath.Join(dir, "checkpoints-typo")},
		{"", "file://" + notDir, notDir},
		{"", "nope://bucket", "nope"},
		{empty, "file://" + empty, "give one"},
	} {
		vo.CheckpointDir, vo.CheckpointURL = c.dir, c.url
		out.Reset()
		if err := Verify(ctx, vo); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("verify --checkpoint-dir %q --checkpoint-url %q: %v, want an error naming %q\n%s", c.dir, c.url, err, c.want, out.String())
		}
	}
	vo.CheckpointDir, vo.CheckpointURL = "", "file://"+empty
	out.Reset()
	if err := Verify(ctx, vo); err != nil || !strings.Contains(out.String(), "no trusted checkpoint found in "+strconv.Quote("file://"+empty)) {
		t.Errorf("verify --checkpoint-url file://EMPTY: %v\n%s", err, out.String())
	}
	vo.CheckpointURL = ""
	// --witness-key: cosignatures are checked on the trusted checkpoints,
	// so it needs --checkpoint-dir; a log's key is no witness key; the
	// quorum is at most the keys given.
	const witness = "w.example+03d0ed27+BDoByd+zBHL99I895i78y8y1N4Tu41Ul6Fr/dfsUng01"
	for _, c := range []struct {
		dir    string
		keys   []string
		quorum int
		want   string
	}{
		{"", []string{witness}, 0, "give --checkpoint-dir"},
		{empty, []string{strings.TrimSpace(pub.String())}, 0, "not a cosignature/v1 verifier key"},
		{empty, []string{witness}, 2, "--witness-quorum 2"},
		{empty, nil, 1, "--witness-quorum 1"},
		{empty, []string{witness}, 1, ""},
	} {
		vo.CheckpointDir, vo.WitnessKeys, vo.WitnessQuorum = c.dir, c.keys, c.quorum
		out.Reset()
		err := Verify(ctx, vo)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("verify --checkpoint-dir %q --witness-key %q --witness-quorum %d: %v, want %q\n%s", c.dir, c.keys, c.quorum, err, c.want, out.String())
		}
	}
}

// TestVerifyMinRetention: a retention cutoff logged two hours before the
// newest row covers a row deleted behind it when the shortest retention is
// an hour (the default), not when verify is told it was two days
// (--min-retention 48h): then it is unjustified and verify fails on the
// row; a minimum below store.MinRetention is an error.
func TestVerifyMinRetention(t *testing.T) {
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
	now := time.Now()
	lines := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(lines, gen.Lines(
		gen.Event(gen.At(now.Add(-10*time.Hour)), gen.Namespace("prod"), gen.Name("old"), gen.Response(gen.ConfigMap("prod", "old", "uid-old", 10, nil))),
		gen.Event(gen.At(now), gen.Namespace("prod"), gen.Name("new"), gen.Response(gen.ConfigMap("prod", "new", "uid-new", 11, nil))),
	), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Import(ctx, ImportOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir},
		Rules: RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"}, Files: []string{lines}, Out: &out,
		BatchSize: 10, TamperLog: true}); err != nil {
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
	if err := in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}
	// A cutoff two hours before the newest row, logged; the old row gone.
	if _, err := pool.Exec(ctx, `INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)`, now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := in.IntegrateAll(ctx); err != nil || in.RefusedCutoffs() != 0 {
		t.Fatalf("integrate: %v, %d cutoffs refused", err, in.RefusedCutoffs())
	}
	for _, q := range []string{`DELETE FROM events WHERE name = 'old'`, `DELETE FROM object_versions WHERE uid = 'uid-old'`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	vo := VerifyOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir}, VerifierKey: strings.TrimSpace(pub.String()), Out: &out}
	out.Reset()
	if err := Verify(ctx, vo); err != nil || !strings.Contains(out.String(), "2 removed by retention") {
		t.Errorf("verify with the default minimum retention: %v\n%s", err, out.String())
	}
	vo.MinRetention = 48 * time.Hour
	out.Reset()
	err = Verify(ctx, vo)
	if !errors.Is(err, ErrVerifyFailed) || !strings.Contains(out.String(), "NOT JUSTIFIED: later than that less 48h0m0s") ||
		!strings.Contains(out.String(), `FAIL cluster "default": object_versions(cluster="default", uid="uid-old"`) {
		t.Errorf("verify with a minimum retention of 48h: %v\n%s", err, out.String())
	}
	vo.MinRetention = 30 * time.Minute
	out.Reset()
	if err := Verify(ctx, vo); err == nil || !strings.Contains(err.Error(), "min-retention") {
		t.Errorf("verify with a minimum retention of 30m: %v, want an error\n%s", err, out.String())
	}
}
