package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	// mainCalled records that the test binary runs Main, which stops the shared server.
	mainCalled atomic.Bool
	// started is the shared server once it runs; Main stops it.
	started atomic.Pointer[server]
	// sharedServer starts the shared server on first use and remembers the result.
	sharedServer = sync.OnceValues(func() (*server, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		srv, err := startServer(ctx)
		if err == nil {
			started.Store(srv)
		}
		return srv, err
	})
)

// Main runs the tests of a package that uses NewDatabase and then stops the shared server, so
// that no PostgreSQL outlives `go test`. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	if srv := started.Load(); srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := srv.stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping %s: %v\n", srv.source, err)
			if code == 0 {
				code = 1
			}
		}
		cancel()
	}
	os.Exit(code)
}

// NewDatabase returns the DSN of a new, empty database that is dropped when the test ends. It
// skips the test under -short; if no PostgreSQL can be had it fails the test under `make`
// (EnvRequire) and skips it otherwise (see Unavailable).
func NewDatabase(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: integration test needs PostgreSQL; skipped with -short")
	}
	if !mainCalled.Load() {
		t.Fatal("pgtest: the package needs `func TestMain(m *testing.M) { pgtest.Main(m) }` so that the shared PostgreSQL is stopped after the tests")
	}
	srv, err := sharedServer()
	if err != nil {
		Unavailable(t, "PostgreSQL", "make test", err)
	}
	name := databaseName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: create database %s on %s: %v", name, srv.source, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s on %s: %v", name, srv.source, err)
		}
	})
	return srv.dsnFor(name)
}

// databaseName makes a database name unique across test binaries sharing a server, readable
// enough to find its test, and within PostgreSQL's 63-byte limit.
func databaseName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		if b.Len() == 30 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	return "pgtest_" + b.String() + "_" + hex.EncodeToString(suffix)
}
