package pgtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	begin := time.Now()
	a := connect(t, NewDatabase(t))
	t.Logf("first NewDatabase (including the shared server's start) took %v", time.Since(begin))
	begin = time.Now()
	b := connect(t, NewDatabase(t))
	t.Logf("second NewDatabase took %v", time.Since(begin))

	var nameA, nameB string
	if err := a.QueryRow(ctx, `SELECT current_database()`).Scan(&nameA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, `SELECT current_database()`).Scan(&nameB); err != nil {
		t.Fatal(err)
	}
	if nameA == nameB {
		t.Fatalf("both databases are %s", nameA)
	}
	if _, err := a.Exec(ctx, `CREATE TABLE only_in_a (v int); INSERT INTO only_in_a VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	_, err := b.Exec(ctx, `SELECT * FROM only_in_a`)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "42P01" { // undefined_table
		t.Errorf("table of database a seen from database b: err = %v, want undefined_table", err)
	}
	var tables int
	if err := b.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("new database has %d public tables (err %v), want an empty database", tables, err)
	}
}

func TestDatabaseIsDropped(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("uses", func(t *testing.T) {
		conn := connect(t, NewDatabase(t)) // still open when the cleanup drops the database
		if err := conn.QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	srv, err := sharedServer()
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, srv.admin)
	var exists bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ dsn, want string }{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/x?sslmode=disable"},
		{"postgresql://u@h/?dbname=old&sslmode=disable", "postgresql://u@h/x?sslmode=disable"},
		{"host=/run/pg user=postgres dbname=postgres", "host=/run/pg user=postgres dbname=postgres dbname='x'"},
	} {
		got := withDatabase(tt.dsn, "x")
		if got != tt.want {
			t.Errorf("withDatabase(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
		cfg, err := pgconn.ParseConfig(got)
		if err != nil || cfg.Database != "x" {
			t.Errorf("withDatabase(%q) = %q parses to database %v (err %v), want x", tt.dsn, got, cfg, err)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	t.Parallel()
	a, b := databaseName("TestX/sub case#1"), databaseName("TestX/sub case#1")
	if a == b {
		t.Errorf("two names for one test are both %s", a)
	}
	if long := databaseName(string(make([]byte, 500))); len(long) > 63 {
		t.Errorf("name %s is %d bytes, over PostgreSQL's 63", long, len(long))
	}
	if want := "pgtest_testx_sub_case_1_"; a[:len(want)] != want {
		t.Errorf("name %s, want prefix %s", a, want)
	}
}
