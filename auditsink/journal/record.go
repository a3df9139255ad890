package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/options-record/options-record/store/model"
)

// Record layout, little-endian:
//
//	0  magic      uint32  "ORJ1"
//	4  length     uint32  payload bytes
//	8  crc        uint32  CRC32C of bytes 4..8 and 12..end (length, time, payload)
//	12 appendedAt int64   Unix nanoseconds
//	20 payload
const (
	headerSize = 20
	magic      = 0x314a524f // "ORJ1" on disk
	// maxPayload bounds the length a header may claim: a larger one is damage,
	// not a record (a batch is at most the webhook's body limit, re-encoded).
	maxPayload = 1 << 30
	// payloadVersion is the version of the payload written: {"v": 2,
	// "batch": batchRecord}. Records of payloadV1 ({"v": 1, "batch":
	// model.Batch by Go field names}, written before the journal had its own
	// record types) are read too.
	payloadVersion = 2
	payloadV1      = 1
)

var (
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
	magicBytes  = binary.LittleEndian.AppendUint32(nil, magic)
	errBadCRC   = errors.New("checksum mismatch")
	errTruncate = errors.New("record extends past the end of the segment")
	// errDecode marks an intact record whose payload this version cannot read.
	errDecode = errors.New("undecodable journal payload")
	// errUnreadable is a record the disk does not give back (an I/O error).
	errUnreadable = errors.New("journal record unreadable")
)

// envelope is a record's payload as written: the payload version and the
// batch in the journal's own record types (batchRecord).
type envelope struct {
	V     int          `json:"v"`
	Batch *batchRecord `json:"batch"`
}

// encodeRecord returns the record of b appended at at.
func encodeRecord(b *model.Batch, at time.Time) ([]byte, error) {
	payload, err := json.Marshal(envelope{V: payloadVersion, Batch: toRecord(b)})
	if err != nil {
		return nil, fmt.Errorf("journal: encode batch: %w", err)
	}
	return frame(payload, at)
}

// frame returns the record of payload appended at at.
func frame(payload []byte, at time.Time) ([]byte, error) {
	if len(payload) > maxPayload {
		return nil, fmt.Errorf("journal: batch of %d bytes exceeds the record limit", len(payload))
	}
	rec := make([]byte, headerSize, headerSize+len(payload))
	binary.LittleEndian.PutUint32(rec[0:], magic)
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(rec[12:], uint64(at.UnixNano()))
	rec = append(rec, payload...)
	binary.LittleEndian.PutUint32(rec[8:], checksum(rec))
	return rec, nil
}

func checksum(rec []byte) uint32 {
	c := crc32.Update(0, castagnoli, rec[4:8])
	return crc32.Update(c, castagnoli, rec[12:])
}

// parseRecord checks the record at the start of data and returns its total
// size and append time.
func parseRecord(data []byte) (size int, at time.Time, err error) {
	if len(data) < headerSize {
		return 0, time.Time{}, errTruncate
	}
	if binary.LittleEndian.Uint32(data[0:]) != magic {
		return 0, time.Time{}, errors.New("bad magic")
	}
	n := binary.LittleEndian.Uint32(data[4:])
	if n > maxPayload {
		return 0, time.Time{}, fmt.Errorf("implausible length %d", n)
	}
	size = headerSize + int(n)
	if size > len(data) {
		return 0, time.Time{}, errTruncate
	}
	if checksum(data[:size]) != binary.LittleEndian.Uint32(data[8:]) {
		return 0, time.Time{}, errBadCRC
	}
	return size, time.Unix(0, int64(binary.LittleEndian.Uint64(data[12:]))), nil
}

// decodePayload decodes the batch of a checked record, of any payload
// version this one reads.
func decodePayload(rec []byte) (*model.Batch, error) {
	var env struct {
		V     int             `json:"v"`
		Batch json.RawMessage `json:"batch"`
	}
	if err := json.Unmarshal(rec[headerSize:], &env); err != nil {
		return nil, fmt.Errorf("%w: %v", errDecode, err)
	}
	var b interface{ batch() *model.Batch }
	switch env.V {
	case payloadVersion:
		b = new(batchRecord)
	case payloadV1:
		b = new(batchV1)
	default:
		return nil, fmt.Errorf("%w: payload version %d, want %d or %d", errDecode, env.V, payloadV1, payloadVersion)
	}
	if len(env.Batch) == 0 || string(env.Batch) == "null" {
		return nil, fmt.Errorf("%w: payload version %d without a batch", errDecode, env.V)
	}
	if err := json.Unmarshal(env.Batch, b); err != nil {
		return nil, fmt.Errorf("%w: payload version %d: %v", errDecode, env.V, err)
	}
	return b.batch(), nil
}

// scanned is what a segment holds.
type scanned struct {
	records  []span // intact records, in order
	corrupt  int    // damaged regions skipped between intact records
	validEnd int64  // end of the last intact record: the rest is a torn tail
}

// span locates one record in its segment.
type span struct {
	off, size int64
	at        time.Time
}

// scanSegment finds the intact records of a segment. After a damaged record
// it resynchronises on the next offset holding an intact record; damage with
// no intact record after it is a torn tail, left out of validEnd.
func scanSegment(data []byte) scanned {
	var s scanned
	off := 0
	for off < len(data) {
		size, at, err := parseRecord(data[off:])
		if err == nil {
			s.records = append(s.records, span{off: int64(off), size: int64(size), at: at})
			off += size
			s.validEnd = int64(off)
			continue
		}
		next := resync(data, off+1)
		if next < 0 {
			break // torn tail
		}
		s.corrupt++
		off = next
	}
	return s
}

// resync returns the first offset at or after from where an intact record
// starts, or -1.
func resync(data []byte, from int) int {
	for from < len(data) {
		i := bytes.Index(data[from:], magicBytes)
		if i < 0 {
			return -1
		}
		p := from + i
		if _, _, err := parseRecord(data[p:]); err == nil {
			return p
		}
		from = p + 1
	}
	return -1
}
