package store

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/options-record/options-record/migrations"
	"github.com/options-record/options-record/store/pgtest"
)

// migrateTo applies the migrations up to version on the database at dsn.
func migrateTo(t *testing.T, dsn string, version int64) {
	t.Helper()
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cc)
	defer func(db *sql.DB) { _ = db.Close() }(db)
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), version); err != nil {
		t.Fatalf("migrate to %d: %v", version, err)
	}
}

// Rows recorded from a namespace cascade before the sink typed the List's
// items are repaired by migration 00008, the ones it cannot type left alone.
func TestMigrationTypesCascadeItems(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	migrateTo(t, dsn, 7)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	type row struct {
		uid, verb, group, resource, kind, object string
	}
	item := func(name string) string {
		return `{"metadata":{"name":"` + name + `","namespace":"shop","uid":"u-` + name + `","resourceVersion":"9"},"data":{"k":"v"}}`
	}
	rows := []row{
		// Its create names the kind.
		{"u-a", "create", "", "configmaps", "ConfigMap", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop","uid":"u-a","resourceVersion":"1"}}`},
		{"u-a", "deletecollection", "", "configmaps", "", item("a")},
		// Another object of the resource in the namespace names it.
		{"u-w", "baseline", "example.com", "widgets", "Widget", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"shop","uid":"u-w","resourceVersion":"2"}}`},
		{"u-x", "deletecollection", "example.com", "widgets", "", item("x")},
		// Nothing recorded: the built-in kind.
		{"u-s", "deletecollection", "", "secrets", "", item("s")},
		// Nothing anywhere: left as it is.
		{"u-g", "deletecollection", "example.com", "gadgets", "", item("g")},
		// Unreadable as jsonb (a lone surrogate, stored before the sink
		// replaced them): left as it is, the migration still succeeds.
		{"u-l", "deletecollection", "", "configmaps", "", `{"metadata":{"name":"l\ud800","namespace":"shop","uid":"u-l","resourceVersion":"9"}}`},
	}
	for i, r := range rows {
		_, err := conn.Exec(ctx, `INSERT INTO object_versions (cluster, uid, version_key, resource_version, origin, verb, changed_at,
			api_group, api_version, kind, resource, namespace, name, complete, deleted, object)
			VALUES ('default', $1, $2, $3, CASE WHEN $4 = 'baseline' THEN 'baseline' ELSE 'change' END, $4, now(),
			$5, 'v1', $6, $7, 'shop', 'n', true, $4 = 'deletecollection', $8::json)`,
			r.uid, []byte{byte(i)}, i+1, r.verb, r.group, r.kind, r.resource, r.object)
		if err != nil {
			t.Fatalf("insert %s: %v", r.uid, err)
		}
	}

	migrateTo(t, dsn, 8)

	want := map[string][3]string{ // uid -> kind column, object apiVersion, object kind
		"u-a": {"ConfigMap", "v1", "ConfigMap"},
		"u-x": {"Widget", "example.com/v1", "Widget"},
		"u-s": {"Secret", "v1", "Secret"},
		"u-g": {"", "", ""},
	}
	for uid, w := range want {
		var kind, apiVersion, objKind string
		var data string
		err := conn.QueryRow(ctx, `SELECT kind, coalesce(object->>'apiVersion', ''), coalesce(object->>'kind', ''),
			coalesce(object::jsonb->'data'->>'k', '')
			FROM object_versions WHERE uid = $1 AND verb = 'deletecollection'`, uid).Scan(&kind, &apiVersion, &objKind, &data)
		if err != nil {
			t.Fatalf("%s: %v", uid, err)
		}
		if got := [3]string{kind, apiVersion, objKind}; got != w || data != "v" {
			t.Errorf("%s after the migration: kind, apiVersion, object kind = %q (data.k %q), want %q", uid, got, data, w)
		}
	}
	var body string
	if err := conn.QueryRow(ctx, `SELECT object::text FROM object_versions WHERE uid = 'u-l'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if body != rows[len(rows)-1].object {
		t.Errorf("the unreadable row was changed: %s", body)
	}
}

// TestAPIMigrationAtEachRecordVersion: the API's first migration meets the
// record at whatever version ingest's migrations have reached (they run at
// the same time on a new install or an upgrade): it succeeds at each, and
// copies the restores an older release kept, whichever columns they had.
func TestAPIMigrationAtEachRecordVersion(t *testing.T) {
	ctx := context.Background()
	for v := int64(0); v <= 14; v++ {
		dsn := pgtest.NewDatabase(t)
		if v > 0 {
			migrateTo(t, dsn, v)
		}
		if v >= 3 {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, `INSERT INTO restores (cluster, kind, username, request, plan, state)
				VALUES ('c', 'undo', 'alice', '{}', '[{"step":1}]', 'succeeded')`); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
		}
		reader, err := Open(ctx, Options{URL: dsn, Secondary: true})
		if err != nil {
			t.Fatal(err)
		}
		api, err := OpenAPI(ctx, Options{URL: dsn}, reader)
		if err != nil {
			t.Errorf("record at version %d: %v", v, err)
			reader.Close()
			continue
		}
		var n int
		if err := api.Pool().QueryRow(ctx, "SELECT count(*) FROM restores WHERE plan = '[{\"step\":1}]'").Scan(&n); err != nil || n != min(1, int(v/3)) {
			t.Errorf("record at version %d: %d old restores copied (%v)", v, n, err)
		}
		api.Close()
		reader.Close()
	}
}

// TestOldRestoresCopiedAfterAnInterruptedFirstStart: the API's first start
// on this release is cut off between its migration and the copy of the
// restores an older release kept (simulated by a start without the
// record's reader); the next start copies them, once.
func TestOldRestoresCopiedAfterAnInterruptedFirstStart(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	migrateTo(t, dsn, 14)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO restores (cluster, kind, username, request, plan, state)
		VALUES ('c', 'undo', 'alice', '{}', '[{"step":1}]', 'succeeded')`); err != nil {
		t.Fatal(err)
	}
	first, err := OpenAPI(ctx, Options{URL: dsn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	reader, err := Open(ctx, Options{URL: dsn, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	count := func(when string, want int) {
		t.Helper()
		api, err := OpenAPI(ctx, Options{URL: dsn}, reader)
		if err != nil {
			t.Fatal(err)
		}
		defer api.Close()
		var n int
		if err := api.Pool().QueryRow(ctx, "SELECT count(*) FROM restores WHERE plan = '[{\"step\":1}]'").Scan(&n); err != nil || n != want {
			t.Errorf("%s: %d old restores copied (%v), want %d", when, n, err, want)
		}
	}
	count("the start after the interrupted one", 1)
	// Rows put into public.restores after the copy (the ingest role can
	// write that table) are never copied.
	if _, err := conn.Exec(ctx, `INSERT INTO restores (cluster, kind, username, request, plan, state)
		VALUES ('c', 'undo', 'mallory', '{}', '[{"step":1}]', 'planned')`); err != nil {
		t.Fatal(err)
	}
	count("a later start", 1)
}

// Migration 00033 keeps the pending batches of arrays (their ref_count
// computed), and drops those planted with no time or no reference (00027's
// CHECK dropped), which name nothing to log and would fail its NOT NULL.
func TestPackedPendingMigrationKeepsBatches(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	migrateTo(t, dsn, 31)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('c', '{1,2}', '{"",u}', ARRAY['\x01'::bytea, '\x02'], ARRAY['2026-11-27 10:00:00+00', '2026-11-27 09:00:00+00']::timestamptz[])`,
		`ALTER TABLE log_pending_batches DROP CONSTRAINT log_pending_batches_check`,
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('c', '{2}', '{u}', ARRAY['\x03'::bytea], ARRAY[NULL::timestamptz])`,
		`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats) VALUES ('c', '{}', '{}', '{}', '{}')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	migrateTo(t, dsn, 33)
	var n, count int
	var first bool
	if err := conn.QueryRow(ctx, `SELECT count(*), min(ref_count), min(first_at) = '2026-11-27 09:00:00+00' FROM log_pending_batches`).Scan(&n, &count, &first); err != nil ||
		n != 1 || count != 2 || !first {
		t.Errorf("after 00033: %d batches, ref_count %d, first_at its earliest time %v (%v); want the one of arrays, 2, true", n, count, first, err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM log_pending_rows`).Scan(&n); err != nil || n != 2 {
		t.Errorf("log_pending_rows: %d rows (%v), want 2", n, err)
	}
}
