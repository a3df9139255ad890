package tamper

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/options-record/options-record/store/tamper/rowenc"
)

// pinnedEncoding is RowEncoding of pinnedRow as encodingVersion 1 wrote it
// before rowenc (the appendValue of c0ae5ea): every log stored holds it.
const pinnedEncoding = "01020e6e730073096b0022c3a9f09f9880620062c801000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" +
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f" +
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f" +
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c74201420069fffffffffffffffe6900000000000000c869ff" +
	"ffff0000000000740006613d3b10da40610061037301617300738201000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223" +
	"2425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f60616263" +
	"6465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f80816e"

// pinnedRow has a value of each type the encoding has, NULLs and empty
// ones, and lengths past one byte of varint.
func pinnedRow() (at time.Time, long []byte, values []any) {
	at = time.Date(2026, 11, 27, 7, 44, 32, 123456789, time.UTC)
	long = make([]byte, 200)
	for i := range long {
		long[i] = byte(i)
	}
	return at, long, []any{nil, "", "k\x00\"é😀", []byte{}, long, true, false, int16(-2), int32(200), int64(-1 << 40), at,
		[]any{}, []any{"a", "", string(long[:130])}, nil}
}

// TestRowEncodingIsPinned: RowEncoding, and rowenc's Encoder with which
// the ingest encodes a row column by column, write encodingVersion 1 byte
// for byte as it was first written (a changed byte would break every
// stored log), and RowDigest and Sum are its SHA-256.
func TestRowEncodingIsPinned(t *testing.T) {
	at, long, values := pinnedRow()
	got, err := RowEncoding(KindVersion, values)
	if err != nil {
		t.Fatal(err)
	}
	if h := hex.EncodeToString(got); h != pinnedEncoding {
		t.Errorf("RowEncoding:\n %s\nwant\n %s", h, pinnedEncoding)
	}
	var e rowenc.Encoder
	e.Start(encodingVersion, byte(KindVersion), len(values))
	e.Null()
	e.String("")
	e.String("k\x00\"é😀")
	e.Bytes([]byte{})
	e.Bytes(long)
	e.Bool(true)
	e.Bool(false)
	e.Int(-2)
	e.Int(200)
	e.Int(-1 << 40)
	e.Time(at)
	e.Strings([]string{})
	e.Strings([]string{"a", "", string(long[:130])})
	e.Strings(nil)
	if h := hex.EncodeToString(e.Encoding()); h != pinnedEncoding {
		t.Errorf("rowenc.Encoder:\n %s\nwant\n %s", h, pinnedEncoding)
	}
	d, err := RowDigest(KindVersion, values)
	if err != nil {
		t.Fatal(err)
	}
	if e.Sum() != d {
		t.Errorf("Sum %x, RowDigest %x", e.Sum(), d)
	}
}
