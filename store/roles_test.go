package store_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// wantDenied checks that sql fails for want of a privilege.
func wantDenied(t *testing.T, conn *pgx.Conn, who, sql string) {
	t.Helper()
	_, err := conn.Exec(context.Background(), sql)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("%s: %s: %v; want permission denied (42501)", who, sql, err)
	}
}

// TestSeparateDatabaseRoles: with the shipped grants, the ingest role
// writes the record and cannot write the restores and plans the API
// executes; the API role reads the record, keeps its restores and plans,
// expires them with the record, and cannot write the record. The API
// starts first here, as it may on a fresh install.
func TestSeparateDatabaseRoles(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	ingestURL, apiURL, names := r.Ingest, r.API, [2]string{r.IngestRole, r.APIRole}

	api, err := store.Open(ctx, store.Options{URL: apiURL, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	if err := api.PrepareAPI(ctx); err != nil {
		t.Fatalf("the API's migrations as the API role, before ingest's: %v", err)
	}
	if n, err := api.ExpireRestores(ctx); err != nil || n != 0 {
		t.Fatalf("expiry before the record exists: %d, %v; want nothing, no error", n, err)
	}

	ingest, err := store.Open(ctx, store.Options{URL: ingestURL})
	if err != nil {
		t.Fatalf("the record's migrations as the ingest role: %v", err)
	}
	defer ingest.Close()
	now := time.Now()
	b := &model.Batch{}
	for _, c := range []struct {
		id  string
		age time.Duration
	}{{"old", 40 * 24 * time.Hour}, {"new", time.Hour}} {
		e, v := change(c.id, "cm-"+c.id, now.Add(-c.age), 10, false)
		b.Events, b.Versions = append(b.Events, e...), append(b.Versions, v...)
	}
	if _, err := ingest.WriteBatch(ctx, b); err != nil {
		t.Fatalf("ingest writes the record: %v", err)
	}

	// The API reads the record (through events' partitions and the views)
	// and writes its own table.
	got, err := api.Changes(ctx, store.ChangeQuery{Cluster: "c", Limit: 10})
	if err != nil || len(got) != 2 {
		t.Fatalf("the API reads the record: %d changes, %v; want 2", len(got), err)
	}
	var deletions int
	if err := api.Pool().QueryRow(ctx, "SELECT count(*) FROM deletions").Scan(&deletions); err != nil {
		t.Errorf("the API reads a view: %v", err)
	}
	old, err := api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "version", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestoreSucceeded})
	if err != nil {
		t.Fatalf("the API writes a restore: %v", err)
	}
	if _, err := api.Pool().Exec(ctx, "UPDATE options_record_api.restores SET created_at = $1 WHERE id = $2",
		now.Add(-40*24*time.Hour), old.ID); err != nil {
		t.Fatal(err)
	}
	planned, err := api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "as-of", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned})
	if err != nil {
		t.Fatal(err)
	}

	// Neither credential can do the other's writes.
	ic, err := pgx.Connect(ctx, ingestURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO options_record_api.restores (cluster, kind, username, request, plan, state) VALUES ('c', 'undo', 'alice', '{}', '[{"forged":true}]', 'planned')`,
		`UPDATE options_record_api.restores SET plan = '[{"forged":true}]' WHERE id = '` + planned.ID + `'`,
		`DELETE FROM options_record_api.restores`,
		`SELECT count(*) FROM options_record_api.restores`,
		`DROP TABLE options_record_api.restores`,
		`CREATE TABLE options_record_api.planted (x int)`,
		`SET ROLE ` + pgx.Identifier{names[1]}.Sanitize(),
	} {
		wantDenied(t, ic, "ingest", sql)
	}
	ac, err := pgx.Connect(ctx, apiURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO events SELECT * FROM events LIMIT 1`,
		`UPDATE events SET username = 'someone-else'`,
		`UPDATE object_versions SET verb = 'create'`,
		`DELETE FROM object_versions`,
		`TRUNCATE events`,
		`DROP VIEW deletions`,
		`CREATE TABLE public.planted (x int)`,
		`SET ROLE ` + pgx.Identifier{names[0]}.Sanitize(),
	} {
		wantDenied(t, ac, "api", sql)
	}

	// Retention: ingest records the cutoff, the API expires by it.
	if _, err := ingest.ApplyRetention(ctx, now, 30*24*time.Hour); err != nil {
		t.Fatalf("ingest applies retention: %v", err)
	}
	n, err := api.ExpireRestores(ctx)
	if err != nil || n != 1 {
		t.Fatalf("the API expires restores: %d, %v; want the old one", n, err)
	}
	if _, err := api.Restore(ctx, "c", planned.ID); err != nil {
		t.Errorf("the recent plan: %v; want it kept", err)
	}
	var plan string
	if err := api.Pool().QueryRow(ctx, "SELECT plan::text FROM options_record_api.restores WHERE id = $1", planned.ID).Scan(&plan); err != nil || plan != "[]" {
		t.Errorf("the plan as the API wrote it: %q, %v", plan, err)
	}
}

// TestRolesOfASingleRoleInstall: an install that ran with one role (its
// owner made the API's schema too) is split by running roles.sql with that
// owner as the ingest role: the API's schema and tables pass to the API
// role, and the old owner can no longer write them.
func TestRolesOfASingleRoleInstall(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	admin, ingestURL, apiURL, names := r.Admin, r.Ingest, r.API, [2]string{r.IngestRole, r.APIRole}
	_, rolesSQL := pgtest.RolesScript()
	// Until now the ingest role made everything, the API's schema included:
	// give it, for this step only, what a single-role owner has.
	adm, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close(ctx)
	ic, err := pgx.Connect(ctx, ingestURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close(ctx)
	db := ic.Config().Database
	if _, err := adm.Exec(ctx, "DROP SCHEMA options_record_api; GRANT CREATE ON DATABASE "+pgx.Identifier{db}.Sanitize()+" TO "+pgx.Identifier{ic.Config().User}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	one, err := store.Open(ctx, store.Options{URL: ingestURL})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := one.PrepareAPI(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := one.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "version", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctx, "REVOKE CREATE ON DATABASE "+pgx.Identifier{db}.Sanitize()+" FROM "+pgx.Identifier{ic.Config().User}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	// The operator splits the roles: roles.sql again.
	cmd := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "ingest="+names[0],
		"-v", "api="+names[1], "-d", admin, "-f", rolesSQL)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("roles.sql on a single-role install: %v\n%s", err, out)
	}
	wantDenied(t, ic, "the former single role", `UPDATE options_record_api.restores SET plan = '[{"forged":true}]'`)
	api, err := store.Open(ctx, store.Options{URL: apiURL, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	if err := api.PrepareAPI(ctx); err != nil {
		t.Fatalf("the API's migrations after the split: %v", err)
	}
	if _, err := api.Restore(ctx, "c", before.ID); err != nil {
		t.Fatalf("the API reads the restore made before the split: %v", err)
	}
	if _, err := api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "version", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned}); err != nil {
		t.Errorf("the API writes after the split: %v", err)
	}
}

// TestAPIMigrationKeepsTheOldRestores: restores and plans made before the
// API had a schema of its own (public.restores) are there after.
func TestAPIMigrationKeepsTheOldRestores(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var id string
	if err := st.Pool().QueryRow(ctx, `INSERT INTO public.restores (cluster, kind, username, request, plan, state, object_namespace, object_name)
		VALUES ('c', 'as-of', 'alice', '{"namespace":"prod"}', '[{"step":1}]', 'planned', 'prod', 'before-outage') RETURNING id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := st.PrepareAPI(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.RestoreNamed(ctx, "c", "alice", "", "prod", "before-outage")
	if err != nil || got.ID != id || string(got.Plan) != `[{"step": 1}]` || got.State != store.RestorePlanned {
		t.Fatalf("the old plan: %+v, %v; want it copied as it was", got, err)
	}
	if err := st.PrepareAPI(ctx); err != nil {
		t.Fatalf("again: %v", err)
	}
}
