// Package journal is the sink's local durable journal: when PostgreSQL is
// unavailable, or slower than a deadline, a batch is appended to an
// append-only file, fsynced, and only then acknowledged; a drainer stores the
// journaled batches in PostgreSQL, in order, when it answers again.
//
// It owns one directory, which no other user or group may write to (Open
// refuses it otherwise: records planted there would be stored as events):
// segment files (NNNNNNNNNNNNNNNNNNNN.seg, rotated by size and deleted once
// drained), a cursor file (how far the drain got, a hint: losing it only
// re-stores batches; written aside, synced and renamed into place, never
// through a link), a lock file that keeps a second process out, and
// quarantine/ (records PostgreSQL rejected as invalid data, or of a payload
// version this release cannot read, kept for an operator instead of
// blocking the drain or being deleted).
//
// A record is a 20-byte header (magic, payload length, CRC32C of length,
// time and payload, append time) and a JSON payload: a payload version and
// the batch in the journal's own record types (batch.go), converted
// explicitly to and from model.Batch. Version 2 is written; version 1
// (model.Batch by Go field names, before the journal had its own types,
// frozen in batch_v1.go) is still read. A record whose append did not
// complete (a torn tail after a crash) is detected when the journal is
// opened and cut off; a damaged record between intact ones is skipped and
// counted.
//
// It relies on the store being idempotent: a batch stored by the drainer
// whose cursor update was lost, or stored by a write the journal abandoned at
// its deadline that committed after all, is stored again harmlessly. It must
// never acknowledge a batch before its record is on disk (fsync of the data,
// and of the directory for a new segment), never drop a journaled batch
// because PostgreSQL is down, and never panic or exit on a full or failing
// disk: those are errors the caller turns into 503.
//
// A field added to model.Event or model.Version is journaled only once it is
// added to the record types (TestRecordCarriesEveryField fails until then);
// renaming or removing a field on disk needs a new payload version, and
// testdata/ keeps the segments of older versions that must still drain.
package journal
