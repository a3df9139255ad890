// Package refpack is the layout of a pending batch's references
// (log_pending_batches.refs, migration 00033): the rows a batch stored,
// packed into one bytea value that the ingest writes (Builder) and the
// tamper-evident log's integrator reads (Decode), so that a batch's
// INSERT does no work per row in PostgreSQL. It is a stored format: the
// SQL function log_pending_refs (the view log_pending_rows) reads it too,
// and must accept exactly the values Decode accepts.
//
// Version 1, every integer big-endian:
//
//	value  = version row...           version: the byte 1
//	row    = tag at uid key [digest]
//	tag    = 1 byte: the kind (1 an events row, 2 an object_versions row),
//	         plus 0x80 when a digest follows the key
//	at     = 8 bytes: the row's time, signed microseconds since
//	         1970-01-01 UTC, within PostgreSQL's finite timestamps
//	uid    = a length and that many bytes of UTF-8 without NUL
//	         (object_versions.uid, empty for events)
//	key    = a length and that many bytes (event_key or version_key)
//	digest = 32 bytes: the row's digest (rowenc), as the ingest computed it
//	length = an unsigned LEB128 varint (encoding/binary's uvarint) of at
//	         most 5 bytes
//
// The value holds nothing else, ends after its last row, and is read
// whole or not at all: a value that breaks any rule is malformed (only
// whoever writes the database by hand writes one), and none of its rows
// is read. It never decides what is evidence: the integrator makes each
// leaf from the stored row or from the digest, and verify checks them.
package refpack
