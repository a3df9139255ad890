// Package store owns the PostgreSQL record: it applies the embedded
// migrations, writes each webhook batch in one transaction (COPY into the
// time-partitioned events table and the object_versions table), keeps the
// partitions and retention, and serves the reads of packages history and
// restore (their queries are package store/reads', embedded in Store).
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
// Three database roles share the database: the ingest role owns the
// record's tables (Migrate, partitions, retention, writes); the reader
// reads them (a Secondary Store, the restore API's reads); and the restore
// API's own role owns the schema options_record_api (APIStore), where the
// restores and plans it executes live. The API's role never reads what the
// ingest role owns, whose policies, functions and views would run with its
// rights: what it needs from the record (the retention cutoff) is read by
// the reader and passed as a parameter (deploy/components/postgres/roles.sql).
package store
