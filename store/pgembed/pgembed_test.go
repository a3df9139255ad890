package pgembed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// dataDir returns a fresh data directory. t.TempDir's directories are 0700 and owned by the
// caller; open them so that the postgres account can reach them when the test runs as root.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "data")
}

func start(t *testing.T, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v", time.Since(begin))
	t.Cleanup(func() { stop(t, s) })
	return s
}

func stop(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestStartStopRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	t.Parallel()
	ctx := context.Background()
	opts := Options{DataDir: dataDir(t)}

	s := start(t, opts)
	conn := connect(t, s.ConnString())
	var db, compression string
	if err := conn.QueryRow(ctx, `SELECT current_database(), current_setting('default_toast_compression')`).Scan(&db, &compression); err != nil {
		t.Fatal(err)
	}
	if db != DefaultDatabase || compression != "lz4" {
		t.Errorf("database %q, default_toast_compression %q; want %q, lz4", db, compression, DefaultDatabase)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('survives')`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	_, err := Start(ctx, opts)
	if !errors.Is(err, ErrAlreadyRunning) || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("second Start on a running data dir: got %v, want ErrAlreadyRunning naming --data-dir", err)
	}

	stop(t, s)
	stop(t, s) // idempotent
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after Stop = %v, want nil", err)
	}

	s = start(t, opts)
	var v string
	if err := connect(t, s.ConnString()).QueryRow(ctx, `SELECT v FROM kept`).Scan(&v); err != nil || v != "survives" {
		t.Fatalf("after restart: v=%q err=%v; want survives", v, err)
	}
}

func TestServerDeath(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	t.Parallel()
	s := start(t, Options{DataDir: dataDir(t), Database: "postgres"})
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after postgres died")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "exited unexpectedly") {
		t.Errorf("Err = %v, want an unexpected exit", err)
	}
}

func TestLongDataDirUsesShortSocketDir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	t.Parallel()
	dir := dataDir(t)
	long := filepath.Join(dir, strings.Repeat("d", 100))
	s := start(t, Options{DataDir: long, Database: "postgres"})
	if !s.tempDir || len(filepath.Join(s.socketDir, socketFile)) > maxSocketPath {
		t.Errorf("socket dir %s (temp %v) for data dir %s", s.socketDir, s.tempDir, long)
	}
	connect(t, s.ConnString())
	stop(t, s)
	if _, err := os.Stat(s.socketDir); !os.IsNotExist(err) {
		t.Errorf("temporary socket dir %s left after Stop: %v", s.socketDir, err)
	}
}

func TestStartRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       func(t *testing.T) Options
		rootNeeded bool
		want       string
	}{
		{"no data dir", func(*testing.T) Options { return Options{} }, false, "DataDir is required"},
		{"owned setting", func(t *testing.T) Options {
			return Options{DataDir: dataDir(t), Settings: map[string]string{"listen_addresses": "*"}}
		}, false, "owned by pgembed"},
		{"bad setting name", func(t *testing.T) Options {
			return Options{DataDir: dataDir(t), Settings: map[string]string{"a=b": "c"}}
		}, false, "not a valid parameter name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rootNeeded && os.Geteuid() != 0 {
				t.Skip("only root runs the server as another account")
			}
			_, err := Start(context.Background(), tt.opts(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestUnreachableDataDirIsRelocated: as root, a DataDir under a directory the
// postgres account cannot enter (a private home, t.TempDir()) keeps its
// cluster under /var/lib/options-record, found again on the next start.
func TestUnreachableDataDirIsRelocated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another account")
	}
	dir := filepath.Join(t.TempDir(), "data") // parent is 0700 root
	s := start(t, Options{DataDir: dir})
	moved := s.dataDir
	if !strings.HasPrefix(moved, relocatedRoot) {
		t.Fatalf("cluster in %s, want it under %s", moved, relocatedRoot)
	}
	t.Cleanup(func() { os.RemoveAll(moved) })
	conn := connect(t, s.ConnString())
	if _, err := conn.Exec(context.Background(), "CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	stop(t, s)
	note, err := os.ReadFile(filepath.Join(dir, locationFile))
	if err != nil || !strings.Contains(string(note), moved) {
		t.Errorf("no note of the cluster's location in %s: %v %q", dir, err, note)
	}
	s = start(t, Options{DataDir: dir})
	defer stop(t, s)
	if s.dataDir != moved {
		t.Fatalf("second start used %s, want %s", s.dataDir, moved)
	}
	var x int
	conn = connect(t, s.ConnString())
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), "SELECT x FROM kept").Scan(&x); err != nil || x != 7 {
		t.Errorf("data not kept across restarts: %v %d", err, x)
	}
}

func TestSocketDirFits(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]bool{
		"/var/lib/options-record/run": true,
		"/" + strings.Repeat("x", 92): true, // 93 + len("/.s.PGSQL.5432") = 107
		"/" + strings.Repeat("x", 93): false,
		"/tmp/with space/run":         false,
		"/tmp/with,comma/run":         false,
	} {
		if got := socketDirFits(dir); got != want {
			t.Errorf("socketDirFits(%q) = %v, want %v", dir, got, want)
		}
	}
}

func TestDSNValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres": "postgres",
		"":         "''",
		"a b":      `'a b'`,
		`it's\`:    `'it\'s\\'`,
	} {
		if got := dsnValue(in); got != want {
			t.Errorf("dsnValue(%q) = %s, want %s", in, got, want)
		}
	}
}
