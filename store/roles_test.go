package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

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
// writes the record and cannot reach the restores and plans the API
// executes; the reader reads the record and writes nothing; the API's role
// keeps its restores and plans, expires them with the record (by a cutoff
// the reader reads), and can neither read nor write the record. The API
// starts first here, as it may on a fresh install.
func TestSeparateDatabaseRoles(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)

	reader, err := store.Open(ctx, store.Options{URL: r.Reader, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	api, err := store.OpenAPI(ctx, store.Options{URL: r.API}, reader)
	if err != nil {
		t.Fatalf("the API's migrations as the API role, before ingest's: %v", err)
	}
	defer api.Close()
	now := time.Now()
	if n, err := api.ExpireRestores(ctx, reader, now); err != nil || n != 0 {
		t.Fatalf("expiry before the record exists: %d, %v; want nothing, no error", n, err)
	}

	ingest, err := store.Open(ctx, store.Options{URL: r.Ingest})
	if err != nil {
		t.Fatalf("the record's migrations as the ingest role: %v", err)
	}
	defer ingest.Close()
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

	// The reader reads the record (through events' partitions and the
	// views); the API writes its own table.
	got, err := reader.Changes(ctx, store.ChangeQuery{Cluster: "c", Limit: 10})
	if err != nil || len(got) != 2 {
		t.Fatalf("the reader reads the record: %d changes, %v; want 2", len(got), err)
	}
	var deletions int
	if err := reader.Pool().QueryRow(ctx, "SELECT count(*) FROM deletions").Scan(&deletions); err != nil {
		t.Errorf("the reader reads a view: %v", err)
	}
	// How late each source is: ingest writes it, the reader reads it
	// (the APIs' lag note).
	if err := ingest.RecordProgress(ctx, "c", "webhook", now, now); err != nil {
		t.Errorf("ingest records a source's progress: %v", err)
	}
	if p, err := reader.Progress(ctx, "c"); err != nil || len(p) != 1 {
		t.Errorf("the reader reads the sources' progress: %v, %v; want one", p, err)
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

	// No credential can do another's writes, nor become another role.
	connect := func(dsn string) *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	ic, rc, ac := connect(r.Ingest), connect(r.Reader), connect(r.API)
	apiSchema := []string{
		`INSERT INTO options_record_api.restores (cluster, kind, username, request, plan, state) VALUES ('c', 'undo', 'alice', '{}', '[{"forged":true}]', 'planned')`,
		`UPDATE options_record_api.restores SET plan = '[{"forged":true}]' WHERE id = '` + planned.ID + `'`,
		`DELETE FROM options_record_api.restores`,
		`SELECT count(*) FROM options_record_api.restores`,
		`DROP TABLE options_record_api.restores`,
		`CREATE TABLE options_record_api.planted (x int)`,
		`CREATE FUNCTION options_record_api.planted() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
	}
	for _, sql := range append(apiSchema, `SET ROLE `+pgx.Identifier{r.APIRole}.Sanitize(), `SET ROLE `+pgx.Identifier{r.ReaderRole}.Sanitize()) {
		wantDenied(t, ic, "ingest", sql)
	}
	record := []string{
		`INSERT INTO public.events SELECT * FROM public.events LIMIT 1`,
		`UPDATE public.events SET username = 'someone-else'`,
		`UPDATE public.object_versions SET verb = 'create'`,
		`DELETE FROM public.object_versions`,
		`TRUNCATE public.events`,
		`DROP VIEW public.deletions`,
		`CREATE TABLE public.planted (x int)`,
		`CREATE TABLE public.events_p20990101 (x int)`,
		`UPDATE public.record_retention SET cutoff = 'infinity'`,
		`UPDATE public.source_progress SET newest_event_at = 'infinity'`,
		`DELETE FROM public.log_pending_batches`,
		`INSERT INTO public.log_pending_batches (cluster, refs, first_at, ref_count) VALUES ('c', '\x01', now(), 1)`,
		`CREATE OR REPLACE FUNCTION public.k8s_time(v text) RETURNS timestamptz LANGUAGE sql AS 'SELECT NULL::timestamptz'`,
	}
	// Unconfirmed admission observations are not part of the record: the
	// ingest role's alone (migration 00017).
	unconfirmed := []string{`SELECT count(*) FROM public.observations`, `SELECT count(*) FROM public.observation_claims`}
	for _, sql := range append(append(append(record, apiSchema...), unconfirmed...), `SET ROLE `+pgx.Identifier{r.IngestRole}.Sanitize(), `SET ROLE `+pgx.Identifier{r.APIRole}.Sanitize()) {
		wantDenied(t, rc, "reader", sql)
	}
	// The API's role may not even read the record: what the record's owner
	// attached to it would run with the API's rights.
	for _, sql := range append(append(record, unconfirmed...), `SELECT count(*) FROM public.object_versions`, `SELECT count(*) FROM public.deletions`,
		`SELECT count(*) FROM public.log_pending_rows`, `SELECT cutoff FROM public.record_retention`, `SELECT public.k8s_time('2026-01-01T00:00:00Z')`,
		`SET ROLE `+pgx.Identifier{r.IngestRole}.Sanitize(), `SET ROLE `+pgx.Identifier{r.ReaderRole}.Sanitize()) {
		wantDenied(t, ac, "api", sql)
	}
	var searchPath, rowSecurity string
	if err := api.Pool().QueryRow(ctx, "SELECT current_setting('search_path'), current_setting('row_security')").Scan(&searchPath, &rowSecurity); err != nil ||
		searchPath != store.APISchema || rowSecurity != "off" {
		t.Errorf("the API's sessions: search_path %q, row_security %q (%v); want %s, off", searchPath, rowSecurity, err, store.APISchema)
	}
	if err := rc.QueryRow(ctx, "SELECT current_setting('row_security')").Scan(&rowSecurity); err != nil || rowSecurity != "off" {
		t.Errorf("the reader's role: row_security %q (%v); want off for every session of it", rowSecurity, err)
	}

	// Retention: ingest records the cutoff, the API expires by it.
	if _, err := ingest.ApplyRetention(ctx, now, 30*24*time.Hour); err != nil {
		t.Fatalf("ingest applies retention: %v", err)
	}
	n, err := api.ExpireRestores(ctx, reader, now)
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
	oneAPI, err := store.OpenAPI(ctx, store.Options{URL: ingestURL}, one)
	if err != nil {
		t.Fatal(err)
	}
	defer oneAPI.Close()
	before, err := oneAPI.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "version", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Exec(ctx, "REVOKE CREATE ON DATABASE "+pgx.Identifier{db}.Sanitize()+" FROM "+pgx.Identifier{ic.Config().User}.Sanitize()); err != nil {
		t.Fatal(err)
	}

	// What else the single role made in the schema: each kind passes to
	// the API's role (or the API would refuse the schema); a trigger is
	// refused until an administrator drops it.
	if _, err := ic.Exec(ctx, `CREATE VIEW options_record_api.v AS SELECT id FROM options_record_api.restores;
CREATE SEQUENCE options_record_api.s;
CREATE TABLE options_record_api.t (id serial);
CREATE FUNCTION options_record_api.f() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE PROCEDURE options_record_api.p() LANGUAGE sql AS 'SELECT 1';
CREATE TYPE options_record_api.e AS ENUM ('a');
CREATE TYPE options_record_api.c AS (a int);
CREATE DOMAIN options_record_api.d AS int;
CREATE TRIGGER planted BEFORE UPDATE ON options_record_api.restores FOR EACH ROW EXECUTE FUNCTION options_record_api.f()`); err != nil {
		t.Fatal(err)
	}
	rolesSQLRun := func() ([]byte, error) {
		return exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "ingest="+names[0],
			"-v", "reader="+r.ReaderRole, "-v", "api="+names[1], "-d", admin, "-f", rolesSQL).CombinedOutput()
	}
	if out, err := rolesSQLRun(); err == nil || !strings.Contains(string(out), "trigger planted") {
		t.Fatalf("roles.sql with a trigger in the API's schema: %v\n%s; want it refused, the trigger named", err, out)
	}
	if _, err := ic.Exec(ctx, `DROP TRIGGER planted ON options_record_api.restores`); err != nil {
		t.Fatal(err)
	}

	// The operator splits the roles: roles.sql again.
	if out, err := rolesSQLRun(); err != nil {
		t.Fatalf("roles.sql on a single-role install: %v\n%s", err, out)
	}
	wantDenied(t, ic, "the former single role", `UPDATE options_record_api.restores SET plan = '[{"forged":true}]'`)
	rc, err := pgx.Connect(ctx, r.Reader)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	// roles.sql grants the reader every table, but not the unconfirmed
	// admission observations nor the notifications' work queue, even when
	// it runs after their migrations.
	wantDenied(t, rc, "reader", `SELECT count(*) FROM public.observations`)
	wantDenied(t, rc, "reader", `SELECT count(*) FROM public.notification_outbox`)
	wantDenied(t, rc, "reader", `SELECT count(*) FROM public.notification_messages`)
	reader, err := store.Open(ctx, store.Options{URL: r.Reader, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	api, err := store.OpenAPI(ctx, store.Options{URL: apiURL}, reader)
	if err != nil {
		t.Fatalf("the API's migrations after the split: %v", err)
	}
	defer api.Close()
	if _, err := api.Restore(ctx, "c", before.ID); err != nil {
		t.Fatalf("the API reads the restore made before the split: %v", err)
	}
	if _, err := api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "version", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned}); err != nil {
		t.Errorf("the API writes after the split: %v", err)
	}
}

// TestAPIMigrationKeepsTheOldRestores: restores and plans made before the
// API had a schema of its own (public.restores) are there after, copied
// through the reader (the API's role reads nothing of the record), once.
func TestAPIMigrationKeepsTheOldRestores(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	st, err := store.Open(ctx, store.Options{URL: r.Ingest})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var id string
	if err := st.Pool().QueryRow(ctx, `INSERT INTO public.restores (cluster, kind, username, request, plan, state, object_namespace, object_name)
		VALUES ('c', 'as-of', 'alice', '{"namespace":"prod"}', '[{"step":1}]', 'planned', 'prod', 'before-outage') RETURNING id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO public.restores (cluster, kind, username, request, plan, state, object_namespace, object_name)
		VALUES ('c', 'as-of', 'bob', '{}', '[]', 'running', 'prod', 'was-running'), ('c', 'as-of', 'bob', '{}', '[]', 'succeeded', 'prod', 'done')`); err != nil {
		t.Fatal(err)
	}
	reader, err := store.Open(ctx, store.Options{URL: r.Reader, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	api, err := store.OpenAPI(ctx, store.Options{URL: r.API}, reader)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	// Anyone who could write public.restores (the ingest role) could have
	// put a plan there under any name: a plan copied is never executed.
	got, err := api.RestoreNamed(ctx, "c", "alice", "", "prod", "before-outage")
	if err != nil || got.ID != id || string(got.Plan) != `[{"step": 1}]` || got.State != store.RestoreRefused ||
		!strings.Contains(string(got.Outcome), "not executed") || got.FinishedAt == nil {
		t.Fatalf("the old plan: %+v, %v; want it copied as refused, imported and not executed", got, err)
	}
	if c, err := api.ClaimRestore(ctx, "c", id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an imported plan claimed for execution: %+v, %v; want ErrNotFound", c, err)
	}
	for _, c := range []struct{ name, state, want string }{{"was-running", "running", store.RestoreRefused}, {"done", "succeeded", store.RestoreSucceeded}} {
		got, err := api.RestoreNamed(ctx, "c", "bob", "", "prod", c.name)
		if err != nil || got.State != c.want {
			t.Errorf("an old restore %s: %+v, %v; want it copied as %s", c.state, got, err, c.want)
		}
	}
	// Copied once: a row ingest adds to the old table later is not.
	if _, err := st.Pool().Exec(ctx, `INSERT INTO public.restores (cluster, kind, username, request, plan, state, object_namespace, object_name)
		VALUES ('c', 'as-of', 'alice', '{}', '[{"forged":true}]', 'planned', 'prod', 'planted')`); err != nil {
		t.Fatal(err)
	}
	again, err := store.OpenAPI(ctx, store.Options{URL: r.API}, reader)
	if err != nil {
		t.Fatalf("again: %v", err)
	}
	defer again.Close()
	if got, err := again.RestoreNamed(ctx, "c", "alice", "", "prod", "planted"); err == nil {
		t.Errorf("a row put into public.restores after the first start was copied: %+v", got)
	}
}

// plantedSQL is what a stolen ingest credential plants for the API to run:
// a function that rewrites every plan (and swallows any error, so that
// whatever calls it still succeeds).
const plantedSQL = `
CREATE FUNCTION public.rewrite_plans() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('options_record.planted_ran_as', current_user, false);
    BEGIN
        EXECUTE 'UPDATE options_record_api.restores SET plan = ''[{"forged":true}]''';
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
    RETURN true;
END
$$`

// attackFixture is a record split between the two roles, with a namespace
// emptied by the namespace controller (its deletions' cascade reads the
// deletions view, which calls k8s_time) and a plan the API keeps.
type attackFixture struct {
	r       pgtest.Roles
	reader  *store.Store
	api     *store.APIStore
	ingest  *store.Store
	ic      *pgx.Conn
	planned *store.RestoreRecord
}

func newAttackFixture(t *testing.T) *attackFixture {
	t.Helper()
	ctx := context.Background()
	f := &attackFixture{r: pgtest.NewRoles(t)}
	var err error
	if f.ingest, err = store.Open(ctx, store.Options{URL: f.r.Ingest}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.ingest.Close)
	// One connection: what the planted SQL leaves in its session (who ran
	// it) is read back on the same one.
	if f.reader, err = store.Open(ctx, store.Options{URL: f.r.Reader, Secondary: true, MaxConns: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.reader.Close)
	if f.api, err = store.OpenAPI(ctx, store.Options{URL: f.r.API}, f.reader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.api.Close)
	now := time.Now()
	b := &model.Batch{}
	add := func(e []model.Event, v []model.Version) {
		b.Events, b.Versions = append(b.Events, e...), append(b.Versions, v...)
	}
	e, v := change("cm-create", "cm", now.Add(-3*time.Hour), 10, false)
	v[0].Object = []byte(`{"kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns","creationTimestamp":"` +
		now.Add(-3*time.Hour).UTC().Format(time.RFC3339) + `"}}`)
	add(e, v)
	e, v = change("ns-delete", "ns-uid", now.Add(-2*time.Hour), 0, true)
	e[0].Resource, e[0].Namespace, e[0].Name, e[0].Verb, e[0].Username = "namespaces", "", "ns", "delete", "alice"
	v[0].Resource, v[0].Namespace, v[0].Name = "namespaces", "", "ns"
	add(e, v)
	e, v = change("cm-delete", "cm", now.Add(-time.Hour), 0, true)
	e[0].Verb, e[0].Username = "delete", "system:serviceaccount:kube-system:namespace-controller"
	add(e, v)
	if _, err := f.ingest.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	if f.planned, err = f.api.InsertRestore(ctx, &store.RestoreRecord{Cluster: "c", Kind: "as-of", Username: "alice",
		Request: []byte(`{}`), Plan: []byte(`[]`), State: store.RestorePlanned}); err != nil {
		t.Fatal(err)
	}
	if f.ic, err = pgx.Connect(ctx, f.r.Ingest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.ic.Close(context.Background()) })
	return f
}

// plant runs sql as the ingest role.
func (f *attackFixture) plant(t *testing.T, sql string) {
	t.Helper()
	if _, err := f.ic.Exec(context.Background(), sql); err != nil {
		t.Fatalf("ingest plants %s: %v", sql, err)
	}
}

// planIntact checks that the plan is as the API wrote it, read as its owner.
func (f *attackFixture) planIntact(t *testing.T) {
	t.Helper()
	got, err := f.api.Restore(context.Background(), "c", f.planned.ID)
	if err != nil {
		t.Fatalf("the plan: %v", err)
	}
	if string(got.Plan) != "[]" {
		t.Errorf("the plan the API wrote was rewritten by what ingest planted: %s", got.Plan)
	}
}

// ranAs is the role the planted SQL ran as in the reader's session (it
// records current_user there), or "" if it did not run.
func (f *attackFixture) ranAs(t *testing.T) string {
	t.Helper()
	var who *string
	if err := f.reader.Pool().QueryRow(context.Background(), "SELECT current_setting('options_record.planted_ran_as', true)").Scan(&who); err != nil {
		t.Fatal(err)
	}
	if who == nil {
		return ""
	}
	return *who
}

// deletions reads the record's deletions as the reader, as JSON.
func (f *attackFixture) deletions(t *testing.T) (string, error) {
	t.Helper()
	got, err := f.reader.Deletions(context.Background(), store.DeletionQuery{Cluster: "c", Limit: 10})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

// TestSeparateDatabaseRolesAgainstPlantedSQL: what a stolen ingest
// credential can put into what the API reads (a row-security policy, a
// function a view calls, a view) never runs with a right on the API's
// schema, and the restore log's expiry takes no cutoff from ingest beyond
// the API's own retention.
func TestSeparateDatabaseRolesAgainstPlantedSQL(t *testing.T) {
	ctx := context.Background()
	t.Run("policy", func(t *testing.T) {
		f := newAttackFixture(t)
		f.plant(t, plantedSQL)
		f.plant(t, `ALTER TABLE object_versions ENABLE ROW LEVEL SECURITY`)
		f.plant(t, `CREATE POLICY planted ON object_versions USING (public.rewrite_plans())`)
		if got, err := f.reader.Changes(ctx, store.ChangeQuery{Cluster: "c", Limit: 10}); err == nil {
			t.Errorf("a read of object_versions under a planted policy: %d changes, no error; want an error", len(got))
		}
		f.planIntact(t)
	})
	// A replaced function and a replaced view run when the reader reads
	// them, as the reader (which has no right on the API's schema): the
	// read succeeds and returns the record as it was (the planted SQL
	// swallows its failed UPDATE), and the plan is as the API wrote it.
	t.Run("function", func(t *testing.T) {
		f := newAttackFixture(t)
		before, err := f.deletions(t)
		if err != nil || before == "null" || before == "[]" {
			t.Fatalf("deletions before: %s, %v; want the namespace's", before, err)
		}
		f.plant(t, `CREATE OR REPLACE FUNCTION k8s_time(v text) RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('options_record.planted_ran_as', current_user, false);
    BEGIN
        EXECUTE 'UPDATE options_record_api.restores SET plan = ''[{"forged":true}]''';
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
    IF v !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$' THEN
        RETURN NULL;
    END IF;
    RETURN v::timestamptz;
EXCEPTION WHEN OTHERS THEN
    RETURN NULL;
END
$$`)
		after, err := f.deletions(t)
		if err != nil || after != before {
			t.Errorf("deletions through the replaced k8s_time: %s, %v; want the record unchanged: %s", after, err, before)
		}
		if who := f.ranAs(t); who != f.r.ReaderRole {
			t.Errorf("the replaced k8s_time ran as %q; want it run, as the reader %s (never as the API's role)", who, f.r.ReaderRole)
		}
		f.planIntact(t)
	})
	t.Run("view", func(t *testing.T) {
		f := newAttackFixture(t)
		before, err := f.deletions(t)
		if err != nil || before == "null" || before == "[]" {
			t.Fatalf("deletions before: %s, %v; want the namespace's", before, err)
		}
		f.plant(t, plantedSQL)
		f.plant(t, `DO $$ BEGIN
    EXECUTE 'CREATE OR REPLACE VIEW deletions AS SELECT * FROM (' || rtrim(pg_get_viewdef('deletions'), '; ') || ') d WHERE public.rewrite_plans()';
END $$`)
		after, err := f.deletions(t)
		if err != nil || after != before {
			t.Errorf("deletions through the replaced view: %s, %v; want the record unchanged: %s", after, err, before)
		}
		if who := f.ranAs(t); who != f.r.ReaderRole {
			t.Errorf("the replaced view's function ran as %q; want it run, as the reader %s (never as the API's role)", who, f.r.ReaderRole)
		}
		f.planIntact(t)
	})
	t.Run("infinite cutoff", func(t *testing.T) {
		f := newAttackFixture(t)
		f.plant(t, `INSERT INTO record_retention (cutoff) VALUES ('infinity')
ON CONFLICT (singleton) DO UPDATE SET cutoff = EXCLUDED.cutoff`)
		n, err := f.api.ExpireRestores(ctx, f.reader, time.Now().Add(-30*24*time.Hour))
		t.Logf("expiry by an infinite cutoff: %d, %v", n, err)
		if _, err := f.api.Restore(ctx, "c", f.planned.ID); err != nil {
			t.Errorf("a plan made now, after expiry by the cutoff ingest wrote: %v; want it kept", err)
		}
	})
}

// TestSquattedPartition: on a server where PUBLIC may create in public (as
// PostgreSQL 14 and older grant it), the shipped grants take that away, so
// no other role can make a table under the name of a day's partition of
// events; and a table made under that name anyway is found out: that day's
// events are refused as the database's fault (retryable: the journal or a
// 503), never dropped as invalid data.
func TestSquattedPartition(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	adm, err := pgx.Connect(ctx, r.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close(ctx)
	ingest, err := store.Open(ctx, store.Options{URL: r.Ingest})
	if err != nil {
		t.Fatal(err)
	}
	defer ingest.Close()
	at := time.Now().AddDate(0, 0, -10)
	squat := "public.events_p" + at.UTC().Format("20060102")
	ac, err := pgx.Connect(ctx, r.API)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	wantDenied(t, ac, "api", "CREATE TABLE "+squat+" (x int)")

	// An install whose database still grants it.
	if _, err := adm.Exec(ctx, "GRANT CREATE ON SCHEMA public TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Exec(ctx, "CREATE TABLE "+squat+" (x int)"); err != nil {
		t.Fatal(err)
	}
	e, v := change("squatted", "cm", at, 10, false)
	_, err = ingest.WriteBatch(ctx, &model.Batch{Events: e, Versions: v})
	if err == nil {
		t.Fatal("a batch of the squatted day was written")
	}
	if store.IsPermanent(err) {
		t.Errorf("a batch of the squatted day: %v; classified as invalid data (dropped), want the database's fault", err)
	}
	t.Logf("a batch of the squatted day: %v", err)
}

// TestAPISchemaOwnedByAnother: the API's Prepare uses options_record_api
// only if its login owns the schema and all in it, and no trigger is on
// its tables: a schema ingest made first (a role with CREATE on the
// database, as its owner often has), or a function or trigger planted in
// it, is refused with the owner named, never used.
func TestAPISchemaOwnedByAnother(t *testing.T) {
	ctx := context.Background()
	admin := func(t *testing.T, r pgtest.Roles, sql string) {
		t.Helper()
		adm, err := pgx.Connect(ctx, r.Admin)
		if err != nil {
			t.Fatal(err)
		}
		defer adm.Close(ctx)
		if _, err := adm.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	openAPI := func(t *testing.T, r pgtest.Roles) error {
		t.Helper()
		reader, err := store.Open(ctx, store.Options{URL: r.Reader, Secondary: true})
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		api, err := store.OpenAPI(ctx, store.Options{URL: r.API}, reader)
		if err == nil {
			api.Close()
		}
		return err
	}
	wantRefused := func(t *testing.T, err error, owner string) {
		t.Helper()
		if err == nil {
			t.Fatal("the API prepared a schema with what another role owns or planted; want it refused")
		}
		if !strings.Contains(err.Error(), owner) || !strings.Contains(err.Error(), "roles.sql") {
			t.Errorf("refused with %v; want the owner %s named and roles.sql pointed at", err, owner)
		}
	}
	t.Run("ingest made the schema", func(t *testing.T) {
		r := pgtest.NewRoles(t)
		// As the database's owner would: ingest may create schemas.
		admin(t, r, "DROP SCHEMA options_record_api; DO $$BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO %I', current_database(), '"+r.IngestRole+"'); END$$")
		ic, err := pgx.Connect(ctx, r.Ingest)
		if err != nil {
			t.Fatal(err)
		}
		defer ic.Close(ctx)
		if _, err := ic.Exec(ctx, "CREATE SCHEMA options_record_api; GRANT ALL ON SCHEMA options_record_api TO PUBLIC"); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, openAPI(t, r), r.IngestRole)
	})
	t.Run("function", func(t *testing.T) {
		r := pgtest.NewRoles(t)
		if err := openAPI(t, r); err != nil {
			t.Fatal(err)
		}
		admin(t, r, `CREATE FUNCTION options_record_api.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT ''-infinity''::timestamptz';
ALTER FUNCTION options_record_api.now() OWNER TO `+pgx.Identifier{r.IngestRole}.Sanitize())
		wantRefused(t, openAPI(t, r), r.IngestRole)
	})
	t.Run("trigger", func(t *testing.T) {
		r := pgtest.NewRoles(t)
		if err := openAPI(t, r); err != nil {
			t.Fatal(err)
		}
		admin(t, r, `CREATE FUNCTION public.rewrite() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.plan = '[{"forged":true}]'; RETURN NEW; END$$;
ALTER FUNCTION public.rewrite() OWNER TO `+pgx.Identifier{r.IngestRole}.Sanitize()+`;
CREATE TRIGGER planted BEFORE INSERT OR UPDATE ON options_record_api.restores FOR EACH ROW EXECUTE FUNCTION public.rewrite()`)
		wantRefused(t, openAPI(t, r), "planted")
	})
}

// TestSquattedFuturePartition: a relation of another role under the name
// of a coming day's partition does not stop ingest: Prepare makes today's
// and the other days' partitions (each day on its own), logs the squatted
// day with its owner and counts it, and retries it at the next upkeep;
// batches of other days are written, a batch with an event of that day is
// refused as the database's fault (never dropped). A squatted day up to
// today fails Prepare.
func TestSquattedFuturePartition(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	adm, err := pgx.Connect(ctx, r.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close(ctx)
	if _, err := adm.Exec(ctx, "GRANT CREATE ON SCHEMA public TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	ac, err := pgx.Connect(ctx, r.API)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close(ctx)
	now := time.Now()
	squat := func(d time.Time) string { return "public.events_p" + d.UTC().Format("20060102") }
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	// Today squatted: nothing of today can be stored, Prepare fails.
	exec(ac, "CREATE TABLE "+squat(now)+" (x int)")
	if st, err := store.Open(ctx, store.Options{URL: r.Ingest}); err == nil || !errors.Is(err, store.ErrPartitionTaken) {
		if st != nil {
			st.Close()
		}
		t.Fatalf("Prepare with today's partition squatted: %v; want ErrPartitionTaken", err)
	}
	after := now.AddDate(0, 0, 2)
	exec(adm, "DROP TABLE "+squat(now)+"; DROP TABLE IF EXISTS "+squat(after))

	// The day after tomorrow squatted: Prepare succeeds.
	exec(ac, "CREATE TABLE "+squat(after)+" (x int)")
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	ingest, err := store.Open(ctx, store.Options{URL: r.Ingest, Registerer: reg, Logger: log})
	if err != nil {
		t.Fatalf("Prepare with the day after tomorrow squatted: %v; want today's partitions made and ingest open", err)
	}
	defer ingest.Close()
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	if !strings.Contains(logged, "level=ERROR") || !strings.Contains(logged, r.APIRole) || !strings.Contains(logged, squat(after)) {
		t.Errorf("the log: %s; want an error naming the squatted table and its owner %s", logged, r.APIRole)
	}
	if n := testutil.ToFloat64(counter(t, reg, "options_record_partition_failures_total")); n < 1 {
		t.Errorf("options_record_partition_failures_total %v; want the squatted day counted", n)
	}

	write := func(id string, days ...time.Time) error {
		b := &model.Batch{}
		for i, d := range days {
			e, v := change(id+strconv.Itoa(i), "cm-"+id, d, int64(10+i), false)
			b.Events, b.Versions = append(b.Events, e...), append(b.Versions, v...)
		}
		_, err := ingest.WriteBatch(ctx, b)
		return err
	}
	if err := write("today", now); err != nil {
		t.Errorf("a batch of today: %v", err)
	}
	if err := write("tomorrow", now.AddDate(0, 0, 1)); err != nil {
		t.Errorf("a batch of tomorrow: %v", err)
	}
	if err := write("spanning", now, after); err == nil || store.IsPermanent(err) || !errors.Is(err, store.ErrPartitionTaken) {
		t.Errorf("a batch with an event of the squatted day: %v; want it refused as the database's fault (ErrPartitionTaken)", err)
	}

	// Once an administrator drops the squat, the next upkeep makes the day.
	exec(adm, "DROP TABLE "+squat(after))
	if err := ingest.EnsurePartitionsAround(ctx, now); err != nil {
		t.Fatalf("the upkeep after the squat is gone: %v", err)
	}
	if err := write("spanning", now, after); err != nil {
		t.Errorf("the batch again, once the day is made: %v", err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// counter is the registered counter named name.
func counter(t *testing.T, g prometheus.Gatherer, name string) prometheus.Collector {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: name},
				func() float64 { return mf.GetMetric()[0].GetCounter().GetValue() })
		}
	}
	t.Fatalf("no counter %s registered", name)
	return nil
}
