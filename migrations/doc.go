// Package migrations embeds the SQL migrations of the Options Record schema.
//
// The files are numbered, applied in order by goose at start-up (see package
// store) and never edited once released: a change to the schema is a new
// file. The tables, views and columns they create are the documented
// interface for SQL forensics (README "SQL forensics"), so renaming one is a
// breaking change for operators.
package migrations

import "embed"

// FS holds the *.sql migration files: those of the record at its root (the
// ingest role's, applied by store.Migrate) and those of the restore API's
// own schema under api/ (the API role's, applied by APIStore.Prepare, with
// their own goose table).
//
//go:embed *.sql api/*.sql
var FS embed.FS
