// Package rowenc is the tamper-evident log's encoding of a row's values:
// each value tagged with its type and length-prefixed, the encoding whose
// SHA-256 is a row's digest (store/tamper's RowEncoding, RowDigest). It is
// a stored format: a changed byte breaks every log written.
//
// There is one encoding: store/tamper encodes a row given as values
// (RowEncoding, for the integrator and verify) with these appenders, and
// the ingest (store) encodes the rows it writes column by column with an
// Encoder, which boxes no value and allocates nothing once its buffer has
// grown.
package rowenc

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// AppendHeader appends what precedes a row's values: the encoding's
// version, the row's kind and the number of its columns.
func AppendHeader(b []byte, version, kind byte, columns int) []byte {
	return binary.AppendUvarint(append(b, version, kind), uint64(columns))
}

// AppendNull appends NULL.
func AppendNull(b []byte) []byte { return append(b, 'n') }

// AppendString appends a text value (the empty string is not NULL).
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(append(b, 's'), uint64(len(s)))
	return append(b, s...)
}

// AppendBytes appends a bytea value.
func AppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(append(b, 'b'), uint64(len(v)))
	return append(b, v...)
}

// AppendBool appends a boolean.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 'B', 1)
	}
	return append(b, 'B', 0)
}

// AppendInt appends an integer of any width.
func AppendInt(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 'i'), uint64(v))
}

// AppendTime appends a timestamp, in microseconds (as PostgreSQL stores
// it; finer is truncated).
func AppendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(append(b, 't'), uint64(t.UnixMicro()))
}

// AppendArray appends the head of an array of n elements, which follow it
// each as a value.
func AppendArray(b []byte, n int) []byte {
	return binary.AppendUvarint(append(b, 'a'), uint64(n))
}

// An Encoder encodes one row after another in a buffer it keeps: Start,
// then one method call per column in the table's order, then Sum. The zero
// Encoder is ready to use.
type Encoder struct {
	b []byte
}

// Start begins a row, forgetting the one before (see AppendHeader).
func (e *Encoder) Start(version, kind byte, columns int) {
	e.b = AppendHeader(e.b[:0], version, kind, columns)
}

// Null appends NULL.
func (e *Encoder) Null() { e.b = AppendNull(e.b) }

// String appends a text value.
func (e *Encoder) String(s string) { e.b = AppendString(e.b, s) }

// Bytes appends a bytea value, or NULL for a nil one (as pgx sends it).
func (e *Encoder) Bytes(v []byte) {
	if v == nil {
		e.Null()
		return
	}
	e.b = AppendBytes(e.b, v)
}

// SHA256 appends the SHA-256 of text as a bytea value, or NULL for a nil
// text: how a json or jsonb column is encoded (of its text).
func (e *Encoder) SHA256(text []byte) {
	if text == nil {
		e.Null()
		return
	}
	d := sha256.Sum256(text)
	e.b = AppendBytes(e.b, d[:])
}

// Bool appends a boolean.
func (e *Encoder) Bool(v bool) { e.b = AppendBool(e.b, v) }

// Int appends an integer.
func (e *Encoder) Int(v int64) { e.b = AppendInt(e.b, v) }

// Time appends a timestamp.
func (e *Encoder) Time(t time.Time) { e.b = AppendTime(e.b, t) }

// Strings appends a text[] value, or NULL for a nil one.
func (e *Encoder) Strings(a []string) {
	if a == nil {
		e.Null()
		return
	}
	e.b = AppendArray(e.b, len(a))
	for _, s := range a {
		e.b = AppendString(e.b, s)
	}
}

// Encoding is the row's encoding so far; it is the Encoder's buffer, good
// until the next call.
func (e *Encoder) Encoding() []byte { return e.b }

// Sum is the SHA-256 of the row's encoding: its digest.
func (e *Encoder) Sum() [32]byte { return sha256.Sum256(e.b) }

// Reset drops the buffer when it has grown past max bytes (an encoder kept
// for the next row should not keep a huge one).
func (e *Encoder) Reset(max int) {
	if cap(e.b) > max {
		e.b = nil
	}
	e.b = e.b[:0]
}
