package refpack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Version is the layout's version, its first byte.
const Version = 1

// The kinds of rows a batch references, and the tag bit of a digest.
const (
	KindEvent   = 1
	KindVersion = 2
	digestTag   = 0x80
)

// DigestSize is the size of a row's digest.
const DigestSize = 32

// MinMicros is the earliest time a row may have, in microseconds since
// 1970: PostgreSQL's earliest timestamp (4714-11-24 00:00:00 UTC BC).
// Every later int64 is one of its finite timestamps.
const MinMicros = -210866803200000000

// maxVarint is the most bytes a length takes.
const maxVarint = 5

// MaxRows and MaxBytes bound a packed value: the ingest writes a batch's
// references in values of at most MaxRows rows (a row is at most about
// 330 bytes: the record's uids are at most 253, its keys 32), and a reader
// takes a value with more rows, or more bytes, as malformed, without
// reading it whole: what the ingest role can plant costs the integrator
// at most this much memory.
const (
	MaxRows  = 1 << 16
	MaxBytes = 32 << 20
)

// MinRowBytes is the fewest bytes a row takes: its tag, its time and two
// empty lengths.
const MinRowBytes = 1 + 8 + 1 + 1

// Builder packs a batch's references. Its zero value is an empty batch.
type Builder struct {
	b     []byte
	n     int
	first int64
}

// Add appends a row's reference; digest is its DigestSize bytes (of any
// other length, nil included: none).
func (p *Builder) Add(kind int16, at time.Time, uid string, key, digest []byte) {
	if len(digest) != DigestSize {
		digest = nil
	}
	if len(p.b) == 0 {
		p.b = append(p.b, Version)
	}
	tag := byte(kind)
	if digest != nil {
		tag |= digestTag
	}
	us := at.UnixMicro()
	if p.n == 0 || us < p.first {
		p.first = us
	}
	p.n++
	p.b = binary.BigEndian.AppendUint64(append(p.b, tag), uint64(us))
	p.b = append(binary.AppendUvarint(p.b, uint64(len(uid))), uid...)
	p.b = append(binary.AppendUvarint(p.b, uint64(len(key))), key...)
	if digest != nil {
		p.b = append(p.b, digest...)
	}
}

// rowSize is about the bytes of a reference: its tag, time, a uid of 36
// bytes (a Kubernetes uid; none for an event) and a key and a digest of
// 32 each, with their lengths.
const rowSize = 1 + 8 + 1 + 18 + 1 + 32 + 32

// Grow makes room for about rows more references, so that a batch's
// value is not copied as it grows.
func (p *Builder) Grow(rows int) {
	p.b = slices.Grow(p.b, 1+rows*rowSize)
}

// Bytes is the packed value (nil when no row was added).
func (p *Builder) Bytes() []byte { return p.b }

// Len is the number of rows added.
func (p *Builder) Len() int { return p.n }

// First is the earliest time of the rows added (the zero time when none).
func (p *Builder) First() time.Time {
	if p.n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(p.first)
}

// Row is one reference of a packed value. UID and Key share the memory
// of the value Decode read (they are not copied); Digest is nil or
// DigestSize bytes of it.
type Row struct {
	Kind   int16
	At     time.Time
	UID    string
	Key    []byte
	Digest []byte
}

// ErrMalformed is the error of a value that is not of this layout.
var ErrMalformed = errors.New("malformed packed references")

// Decode calls yield with each row of a packed value, in order, and
// returns how many it has and the earliest time of them. A malformed
// value returns an error wrapping ErrMalformed, which says where; the rows
// yielded before it was found must then be dropped. Decode copies the
// value once (for the UIDs), and allocates nothing per row.
func Decode(b []byte, yield func(Row)) (n int, first time.Time, err error) {
	return DecodeAtMost(b, MaxRows, yield)
}

// DecodeAtMost is Decode of a value said to hold at most limit rows (its
// ref_count, at most MaxRows): a value of more rows, or of more than
// MaxBytes, is malformed, found so before more than limit rows are
// yielded, and before the value is copied when its size alone shows it.
func DecodeAtMost(b []byte, limit int, yield func(Row)) (n int, first time.Time, err error) {
	limit = min(limit, MaxRows)
	switch {
	case len(b) == 0 || b[0] != Version:
		return 0, time.Time{}, fmt.Errorf("%w: not version %d", ErrMalformed, Version)
	case len(b) > MaxBytes:
		return 0, time.Time{}, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(b), MaxBytes)
	}
	s := string(b) // the UIDs are substrings of it
	earliest := int64(math.MaxInt64)
	off := 1
	for off < len(b) {
		start := off
		fail := func(what string) (int, time.Time, error) {
			return 0, time.Time{}, malformed(n+1, start, what)
		}
		if n >= limit {
			return fail(fmt.Sprintf("more than %d rows", limit))
		}
		tag := b[off]
		kind := int16(tag &^ digestTag)
		if kind != KindEvent && kind != KindVersion {
			return fail(fmt.Sprintf("tag %#x", tag))
		}
		off++
		if len(b)-off < 8 {
			return fail("truncated time")
		}
		us := int64(binary.BigEndian.Uint64(b[off:]))
		if us < MinMicros {
			return fail("time before PostgreSQL's earliest")
		}
		off += 8
		var uid string
		var key []byte
		for i := range 2 {
			l, m := binary.Uvarint(b[off:])
			if m <= 0 || m > maxVarint || l > uint64(len(b)-off-m) {
				return fail("truncated or oversized length")
			}
			off += m
			if i == 0 {
				uid = s[off : off+int(l)]
			} else {
				key = b[off : off+int(l) : off+int(l)]
			}
			off += int(l)
		}
		if !utf8.ValidString(uid) || strings.IndexByte(uid, 0) >= 0 {
			return fail("uid is not UTF-8 text")
		}
		var digest []byte
		if tag&digestTag != 0 {
			if len(b)-off < DigestSize {
				return fail("truncated digest")
			}
			digest = b[off : off+DigestSize : off+DigestSize]
			off += DigestSize
		}
		earliest = min(earliest, us)
		n++
		yield(Row{Kind: kind, At: time.UnixMicro(us), UID: uid, Key: key, Digest: digest})
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	return n, time.UnixMicro(earliest), nil
}

func malformed(row, at int, what string) error {
	return fmt.Errorf("%w: row %d (byte %d): %s", ErrMalformed, row, at, what)
}
