package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Roles is a new database whose record is split between the database
// roles the deploy ships (deploy/components/postgres/roles.sql), made by
// the demo database's own init script.
type Roles struct {
	// Admin is the superuser's DSN of the database.
	Admin string
	// Ingest, Reader and API log in as each role: ingest owns the record,
	// the reader reads it for the restore API, and the API's role owns the
	// schema options_record_api.
	Ingest, Reader, API string
	// IngestRole, ReaderRole and APIRole are the roles' names, unique per
	// test (roles belong to the whole server).
	IngestRole, ReaderRole, APIRole string
}

// RolesScript is the shipped init script that creates the roles, and
// RolesSQL the grants it runs.
func RolesScript() (script, sql string) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "components", "postgres")
	return filepath.Join(dir, "10-roles.sh"), filepath.Join(dir, "roles.sql")
}

// NewRoles returns a new, empty database with the ingest, reader and API
// roles of the shipped grants. Before they are made, PUBLIC may create in
// the schema public, as on PostgreSQL 14 and older (and many managed
// services): the grants must take that away. The database and the roles
// are dropped when the test ends. It needs psql, as the init script does.
func NewRoles(t testing.TB) Roles {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		Unavailable(t, "psql", "make test", err)
	}
	// Roles outlive databases: they are dropped after the record's
	// database (cleanups run last-registered first), from another one.
	keep := NewDatabase(t)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	r := Roles{IngestRole: "or_ingest_" + hex.EncodeToString(suffix), ReaderRole: "or_reader_" + hex.EncodeToString(suffix),
		APIRole: "or_api_" + hex.EncodeToString(suffix)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, keep)
		if err != nil {
			t.Errorf("pgtest: drop roles: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, role := range []string{r.IngestRole, r.ReaderRole, r.APIRole} {
			if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()); err != nil {
				t.Errorf("pgtest: drop role %s: %v", role, err)
			}
		}
	})
	r.Admin = NewDatabase(t)
	if out, err := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", r.Admin,
		"-c", "GRANT CREATE ON SCHEMA public TO PUBLIC").CombinedOutput(); err != nil {
		t.Fatalf("pgtest: grant CREATE on public to PUBLIC, as PostgreSQL 14 does: %v\n%s", err, out)
	}
	script, sql := RolesScript()
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(), "POSTGRES_DB="+r.Admin, "OPTIONS_RECORD_ROLES_SQL="+sql,
		"OPTIONS_RECORD_INGEST_ROLE="+r.IngestRole, "OPTIONS_RECORD_READER_ROLE="+r.ReaderRole,
		"OPTIONS_RECORD_API_ROLE="+r.APIRole,
		"INGEST_PASSWORD=ingest-pw", "READER_PASSWORD=reader-pw", "API_PASSWORD=api-pw")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: %s: %v\n%s", script, err, out)
	}
	r.Ingest = AsRole(t, r.Admin, r.IngestRole, "ingest-pw")
	r.Reader = AsRole(t, r.Admin, r.ReaderRole, "reader-pw")
	r.API = AsRole(t, r.Admin, r.APIRole, "api-pw")
	return r
}

// AsRole returns dsn (a URL or keyword/value string) logging in as user
// with password.
func AsRole(t testing.TB, dsn, user, password string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(user, password)
		return u.String()
	}
	// In keyword/value strings the last occurrence of a keyword wins.
	q := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return dsn + " user='" + q.Replace(user) + "' password='" + q.Replace(password) + "'"
}
