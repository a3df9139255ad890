package tamper

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/options-record/options-record/store/tamper/rowenc"
)

// Kind is what a leaf commits to: a row of a record table or a control
// entry. Its numbers are stored (log_pending.kind, log_segments.kinds).
type Kind int16

const (
	KindEvent   Kind = 1 // a row of events
	KindVersion Kind = 2 // a row of object_versions
	KindCutoff  Kind = 3 // a retention cutoff, logged before retention deletes
)

func (k Kind) String() string {
	switch k {
	case KindEvent:
		return "events"
	case KindVersion:
		return "object_versions"
	case KindCutoff:
		return "retention cutoff"
	}
	return fmt.Sprintf("kind %d", int16(k))
}

// Ref names the row a leaf commits to: its table and primary key (events:
// cluster, key = event_key, at = stage_at; object_versions: cluster, uid,
// key = version_key, with at = changed_at; a cutoff: cluster and at).
type Ref struct {
	Kind    Kind
	Cluster string
	UID     string
	Key     []byte
	At      time.Time
}

func (r Ref) String() string {
	switch r.Kind {
	case KindEvent:
		return fmt.Sprintf("events(cluster=%q, event_key=%x, stage_at=%s)", r.Cluster, r.Key, r.At.UTC().Format(time.RFC3339Nano))
	case KindVersion:
		return fmt.Sprintf("object_versions(cluster=%q, uid=%q, version_key=%x, changed_at=%s)", r.Cluster, r.UID, r.Key, r.At.UTC().Format(time.RFC3339Nano))
	case KindCutoff:
		return fmt.Sprintf("retention cutoff(cluster=%q, cutoff=%s)", r.Cluster, r.At.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s(cluster=%q, uid=%q, key=%x)", r.Kind, r.Cluster, r.UID, r.Key)
}

// id is the map key of a row: its table and primary key.
func (r Ref) id() string {
	b := make([]byte, 0, 3*binary.MaxVarintLen64+4+len(r.Cluster)+len(r.UID)+len(r.Key)+8)
	return string(r.appendID(b))
}

// encodingVersion is the first byte of every encoding below: a change of
// the columns, their order or their encoding takes a new version, and the
// old one stays readable.
const encodingVersion = 1

// RowDigest is the SHA-256 of a row's encoding: the version, the kind and
// each column in the table's fixed order (eventColumns, versionColumns), each
// value tagged with its type and length-prefixed. Values are as PostgreSQL
// stores them: json by the SHA-256 of its exact text, jsonb by that of its
// text as PostgreSQL prints it (keys sorted), timestamps in microseconds,
// arrays element by element, NULL apart from the empty string.
func RowDigest(k Kind, values []any) ([32]byte, error) {
	bp := encodingBuffers.Get().(*[]byte)
	defer encodingBuffers.Put(bp)
	b, err := appendRowEncoding((*bp)[:0], k, values)
	if cap(b) <= 1<<20 { // keep a buffer for the next row, not a huge one
		*bp = b
	}
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// encodingBuffers are RowDigest's buffers: the integrator and verify
// encode row after row, each about a kilobyte, which grew a new buffer
// for each (a fifth of what an integration pass allocated).
var encodingBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// VersionDigest begins the encoding of an object_versions row in e: the
// encoding's version, the kind and the number of columns. It is
// store.Options.VersionDigest: a batch then encodes each version's columns
// with e (rowenc, the encoding of RowEncoding) and writes its digest, e's
// Sum, equal to RowDigest of the row's values, in the version's pending
// row.
func VersionDigest(e *rowenc.Encoder, columns int) {
	e.Start(encodingVersion, byte(KindVersion), columns)
}

// EventDigest is VersionDigest for an events row (store.Options.EventDigest).
func EventDigest(e *rowenc.Encoder, columns int) {
	e.Start(encodingVersion, byte(KindEvent), columns)
}

// RowEncoding is the encoding whose SHA-256 is RowDigest: what an
// inclusion proof carries so that a verifier recomputes the leaf.
func RowEncoding(k Kind, values []any) ([]byte, error) {
	return appendRowEncoding(nil, k, values)
}

func appendRowEncoding(b []byte, k Kind, values []any) ([]byte, error) {
	b = rowenc.AppendHeader(b, encodingVersion, byte(k), len(values))
	for i, v := range values {
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, fmt.Errorf("column %d: %w", i, err)
		}
	}
	return b, nil
}

// appendValue appends a value of a row, by its type, with rowenc's
// appenders: the one encoding, which the ingest's digests use too.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return rowenc.AppendNull(b), nil
	case string:
		return rowenc.AppendString(b, v), nil
	case []byte:
		return rowenc.AppendBytes(b, v), nil
	case bool:
		return rowenc.AppendBool(b, v), nil
	case int16:
		return rowenc.AppendInt(b, int64(v)), nil
	case int32:
		return rowenc.AppendInt(b, int64(v)), nil
	case int64:
		return rowenc.AppendInt(b, v), nil
	case time.Time:
		return rowenc.AppendTime(b, v), nil
	case []any:
		b = rowenc.AppendArray(b, len(v))
		for _, e := range v {
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("no encoding of %T", v)
}

// cutoffDigest is the row digest of a retention cutoff: its cluster and time.
func cutoffDigest(r Ref) [32]byte {
	d, _ := RowDigest(KindCutoff, []any{r.Cluster, r.At})
	return d
}

// LeafHash is the RFC 6962 leaf hash of a leaf: the encoding of its
// reference and of its row's digest. A leaf names its row, so a row gone
// from the record is still known by what the log signed (its time, which
// says whether a retention cutoff covers it).
func LeafHash(r Ref, digest [32]byte) tlog.Hash {
	// The encoding is appendValue's of (Cluster, UID, Key, At, digest[:])
	// (TestLeafHashEncoding), written without boxing each value in an
	// interface: verify and every integration pass hash leaf after leaf.
	// The leading 0 is RFC 6962's leaf prefix (tlog.RecordHash).
	var buf [256]byte
	b := append(buf[:0], 0, encodingVersion, byte(r.Kind))
	b = appendTagged(b, 's', r.Cluster)
	b = appendTagged(b, 's', r.UID)
	b = appendTagged(b, 'b', r.Key)
	b = binary.BigEndian.AppendUint64(append(b, 't'), uint64(r.At.UnixMicro()))
	b = appendTagged(b, 'b', digest[:])
	return tlog.Hash(sha256.Sum256(b))
}

// appendTagged is appendValue of a string or []byte, without its
// interface: the tag ('s' or 'b'), the length and the bytes.
func appendTagged[T string | []byte](b []byte, tag byte, v T) []byte {
	b = binary.AppendUvarint(append(b, tag), uint64(len(v)))
	return append(b, v...)
}

// appendID appends what id returns: the kind, then appendValue's encoding
// of the cluster, uid and key, then, but for a version, at in
// microseconds.
func (r Ref) appendID(b []byte) []byte {
	b = append(b, byte(r.Kind))
	b = appendTagged(b, 's', r.Cluster)
	b = appendTagged(b, 's', r.UID)
	b = appendTagged(b, 'b', r.Key)
	if r.Kind != KindVersion { // changed_at is not part of a version's key
		b = binary.BigEndian.AppendUint64(b, uint64(r.At.UnixMicro()))
	}
	return b
}

var errMalformed = errors.New("malformed log")

func isMalformed(err error) bool { return errors.Is(err, errMalformed) }
