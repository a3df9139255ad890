package app

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

// TestOpenAPIStoresLogsInAsEachRole: the restore API's two pools, as
// openAPIStores wires them, log in as two roles: the reader pool as the
// reader URL's role (row_security off, the record's search_path), the
// owner pool as the API URL's role (row_security off, search_path its own
// schema alone). Handing one pool in for the other would let what the
// ingest role planted in the record run as the owner of the plans.
func TestOpenAPIStoresLogsInAsEachRole(t *testing.T) {
	ctx := context.Background()
	r := pgtest.NewRoles(t)
	ingest, err := store.Open(ctx, store.Options{URL: r.Ingest})
	if err != nil {
		t.Fatal(err)
	}
	defer ingest.Close()
	reader, owner, err := openAPIStores(ctx, &database{URL: r.Reader, APIURL: r.API}, &APIOptions{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	defer owner.Close()
	session := func(p *pgxpool.Pool) (user, rowSecurity, searchPath string) {
		t.Helper()
		if err := p.QueryRow(ctx, "SELECT current_user::text, current_setting('row_security'), current_setting('search_path')").
			Scan(&user, &rowSecurity, &searchPath); err != nil {
			t.Fatal(err)
		}
		return user, rowSecurity, searchPath
	}
	if user, rs, sp := session(reader.Pool()); user != r.ReaderRole || rs != "off" || sp != "public" {
		t.Errorf("the reader pool: current_user %q, row_security %q, search_path %q; want %s, off, public", user, rs, sp, r.ReaderRole)
	}
	// A schema named after the reader's role (any role with CREATE on the
	// database can make one) would come first in PostgreSQL's default
	// search_path, "$user", public: a table there shadows the record's.
	admin, err := pgx.Connect(ctx, r.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, sql := range []string{
		fmt.Sprintf("CREATE SCHEMA %s", pgx.Identifier{r.ReaderRole}.Sanitize()),
		fmt.Sprintf("CREATE TABLE %s.deletions (forged boolean)", pgx.Identifier{r.ReaderRole}.Sanitize()),
		fmt.Sprintf("GRANT USAGE ON SCHEMA %[1]s TO %[1]s; GRANT SELECT ON ALL TABLES IN SCHEMA %[1]s TO %[1]s", pgx.Identifier{r.ReaderRole}.Sanitize()),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var schema string
	if err := reader.Pool().QueryRow(ctx, "SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'deletions'::regclass").Scan(&schema); err != nil || schema != "public" {
		t.Errorf("the reader's deletions are in the schema %q (%v); want the record's view, public.deletions", schema, err)
	}
	if user, rs, sp := session(owner.Pool()); user != r.APIRole || rs != "off" || sp != store.APISchema {
		t.Errorf("the owner pool: current_user %q, row_security %q, search_path %q; want %s, off, %s", user, rs, sp, r.APIRole, store.APISchema)
	}
}
