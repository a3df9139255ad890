// Package store owns the PostgreSQL record: it applies the embedded
// migrations, writes each webhook batch in one transaction (COPY into the
// time-partitioned events table and the object_versions table), keeps the
// partitions and retention, and serves the reads of packages history and
// restore.
//
// It must never decide what to record (package filter does) nor interpret
// audit events (package record turns them into rows); it stores rows
// idempotently: a redelivered batch changes nothing.
package store
