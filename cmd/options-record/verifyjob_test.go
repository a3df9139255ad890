package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"gocloud.dev/blob/fileblob"
	"golang.org/x/mod/sumdb/note"

	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/store/tamper"
	"github.com/options-record/options-record/test/gen"
)

// TestVerifyAsTheScheduledJob runs verify as the chart's CronJob
// options-record-verify does (tamperLog.verify; test/chart checks the
// args): the log's public key from a file, the trusted checkpoints from
// --checkpoint-url, no --incremental, and the database login of the
// record's reader from OPTIONS_RECORD_DATABASE_URL. As the reader it passes
// on a record the ingest role wrote and logged; once a stored state is
// changed it exits 1, which fails the Job, naming the row.
func TestVerifyAsTheScheduledJob(t *testing.T) {
	r := pgtest.NewRoles(t)
	ctx := context.Background()
	dir := t.TempDir()
	exec := func(args ...string) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return code, out.String() + errOut.String()
	}

	keyFile := filepath.Join(dir, "log.key")
	code, pub := exec("log-key", "--name", "record.example/log", "--log-signing-key-file", keyFile)
	if code != 0 {
		t.Fatalf("log-key: exit %d: %s", code, pub)
	}
	// The ConfigMap's key, as mounted at /etc/options-record/log-verifier.
	verifierFile := filepath.Join(dir, "log-verifier", "key")
	if err := os.MkdirAll(filepath.Dir(verifierFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(verifierFile, []byte(pub), 0o444); err != nil {
		t.Fatal(err)
	}

	// The ingest role writes the record and its pending log rows...
	lines := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(lines, gen.Lines(
		gen.Event(gen.Namespace("prod"), gen.Name("a"), gen.Response(gen.ConfigMap("prod", "a", "uid-a", 10, map[string]string{"k": "v"}))),
		gen.Event(gen.Namespace("prod"), gen.Name("b"), gen.Response(gen.ConfigMap("prod", "b", "uid-b", 11, map[string]string{"k": "w"}))),
	), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := exec("import", lines, "--tamper-log", "--database-url", r.Ingest, "--data-dir", dir,
		"--rules-file", "../../deploy/samples/record-prod.yaml"); code != 0 {
		t.Fatalf("import: exit %d:\n%s", code, out)
	}
	// ...and its integrator logs them, writing the checkpoints to the
	// bucket.
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(key)))
	if err != nil {
		t.Fatal(err)
	}
	checkpoints := filepath.Join(dir, "bucket")
	bucket, err := fileblob.OpenBucket(checkpoints, &fileblob.Options{Metadata: fileblob.MetadataDontWrite, NoTempDir: true, CreateDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	ingest, err := pgxpool.New(ctx, r.Ingest)
	if err != nil {
		t.Fatal(err)
	}
	defer ingest.Close()
	in, err := tamper.NewIntegrator(tamper.IntegratorOptions{Pool: ingest, Signer: signer, Checkpoints: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.IntegrateAll(ctx); err != nil {
		t.Fatal(err)
	}

	// The Job: the reader's login in the environment (secretKeyRef
	// reader-url), no --database-url.
	t.Setenv("OPTIONS_RECORD_DATABASE_URL", r.Reader)
	job := []string{"verify", "--log-verifier-key-file=" + verifierFile, "--checkpoint-url=file://" + checkpoints, "--require-trusted"}
	code, out := exec(job...)
	if code != 0 || !strings.Contains(out, "  trusted checkpoint of 4 leaves: checked\n") {
		t.Fatalf("verify as the reader: exit %d, want 0 and the trusted checkpoint checked:\n%s", code, out)
	}
	if _, err := ingest.Exec(ctx, `UPDATE object_versions SET object = '{}' WHERE uid = 'uid-b'`); err != nil {
		t.Fatal(err)
	}
	code, out = exec(job...)
	if code != 1 || !strings.Contains(out, `FAIL cluster "default": object_versions(cluster="default", uid="uid-b"`) {
		t.Errorf("verify after an UPDATE: exit %d, want 1 naming the row:\n%s", code, out)
	}
}
