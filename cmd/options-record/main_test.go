package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestCommandLine: usage errors exit 2 and say what to run; help exits 0
// and lists the commands.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "a command is required"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"import"}, 2, "requires at least 1 arg"},
		{[]string{"serve", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"serve", "extra"}, 2, `unknown command "extra"`},
		{[]string{"serve", "--log-level", "loud"}, 2, "log-level"},
		{[]string{"--help"}, 0, "serve"},
		{[]string{"import", "--help"}, 0, "--batch-size int"},
		{[]string{"completion", "bash"}, 0, "__start_options-record"},
	} {
		var out, errOut bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.want) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s%s", c.args, code, c.code, c.want, out.String(), errOut.String())
		}
	}
}

// TestImportTakesFlagsAfterTheFiles: flags go anywhere among the
// arguments, as in kubectl (import FILE --cluster x).
func TestImportTakesFlagsAfterTheFiles(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	cm := gen.ConfigMap("prod", "a", "uid-a", 10, map[string]string{"k": "v"})
	if err := os.WriteFile(log, gen.Lines(gen.Event(gen.Namespace("prod"), gen.Name("a"), gen.Response(cm))), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"import", log, "--cluster", "fleet-a", "--database-url", dsn, "--data-dir", dir,
		"--rules-file", "../../deploy/samples/record-prod.yaml"}, strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM object_versions WHERE cluster = 'fleet-a' AND name = 'a'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("versions of cluster fleet-a: %d, %v; want 1 (out: %s)", n, err, out.String())
	}
}
