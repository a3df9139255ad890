// Package store owns the PostgreSQL record: it applies the embedded
// migrations, writes each webhook batch in one transaction (COPY into the
// time-partitioned events table and the object_versions table), keeps the
// partitions and retention, and serves the reads of packages history and
// restore.
//
// It must never decide what to record (package filter does) nor interpret
// audit events (package store/model turns them into rows); it stores rows
// idempotently: a redelivered batch changes nothing.
//
// Connecting is separate from migrating: Connect makes a Store without any
// I/O, Prepare applies the migrations and creates the partitions around
// today (Open does both). Until Prepare has succeeded, a primary Store
// answers every read and write with the retryable ErrNotPrepared and
// reaches nothing, so a process can start, and journal what it takes,
// while the database does not answer. A Secondary Store (another pool on a
// database the main one prepares) is usable at once.
//
// Two database roles share the record: the ingest role owns the record's
// tables (Migrate, partitions, retention, writes), and the restore API's
// role owns the schema options_record_api (MigrateAPI, PrepareAPI), where
// the restores and plans it executes live; each may read, never write,
// what the other owns (deploy/components/postgres/roles.sql).
package store
