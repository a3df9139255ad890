package pgarray

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestEncodingIsPgx: a registered map (Register) encodes each Array, in
// the binary and the text format, to the bytes of pgx's own array codec
// (a map without Register): NULL and empty arrays, NULL elements, text
// that is not UTF-8 or holds a NUL, times at and past the edges of the
// microsecond, the epochs, other zones, a monotonic reading, and smallints
// at their bounds; and a second Register changes nothing.
func TestEncodingIsPgx(t *testing.T) {
	fast, plain := pgtype.NewMap(), pgtype.NewMap()
	Register(fast)
	Register(fast)
	texts := Array[Text]{"", "a", "\x00", "\xff\xfe", "'\"\\{},NULL", "null", " ", "é\u202e😀", Text(bytes.Repeat([]byte("x"), 70000))}
	keys := Array[Bytea]{nil, {}, {0}, []byte("key"), nil, bytes.Repeat([]byte{0xff}, 1000)}
	zone := time.FixedZone("x", -(3*3600 + 1))
	times := Array[Timestamptz]{}
	for _, tm := range []time.Time{
		{}, time.Unix(0, 0), time.Unix(0, -1), time.Unix(-1, 999), time.Unix(0, 999), time.Unix(0, 1000), time.Unix(0, 1001),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, zone), time.Date(4713, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(-9426, 0, 0),
		time.Date(294276, 12, 31, 23, 59, 59, 999999999, zone), time.Now(), time.Now().In(zone),
	} {
		times = append(times, Timestamptz(tm))
	}
	kinds := Array[Int2]{0, 1, 2, 3, -1, math.MaxInt16, math.MinInt16}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		texts, keys = append(texts, Text(b)), append(keys, b)
		times = append(times, Timestamptz(time.Unix(r.Int64N(1<<40)-1<<39, r.Int64N(1e9))))
		kinds = append(kinds, Int2(r.Uint32()))
	}
	for _, c := range []struct {
		name string
		oid  uint32
		v    []any
	}{
		{"text[]", pgtype.TextArrayOID, []any{Array[Text](nil), Array[Text]{}, texts[:1], texts}},
		{"bytea[]", pgtype.ByteaArrayOID, []any{Array[Bytea](nil), Array[Bytea]{}, keys[:1], keys[1:4], keys}},
		{"timestamptz[]", pgtype.TimestamptzArrayOID, []any{Array[Timestamptz](nil), Array[Timestamptz]{}, times}},
		{"smallint[]", pgtype.Int2ArrayOID, []any{Array[Int2](nil), Array[Int2]{}, kinds}},
	} {
		for _, v := range c.v {
			for _, format := range []int16{pgtype.BinaryFormatCode, pgtype.TextFormatCode} {
				if format == pgtype.TextFormatCode && c.oid == pgtype.TextArrayOID {
					v = v.(Array[Text])[:min(len(v.(Array[Text])), 4)] // pgx's text format refuses a NUL
				}
				want, werr := plain.Encode(c.oid, format, v, []byte("prefix"))
				got, gerr := fast.Encode(c.oid, format, v, []byte("prefix"))
				if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
					t.Errorf("%s of %d, format %d: encoded %.80x (%v), pgx %.80x (%v)", c.name, lenOf(v), format, got, gerr, want, werr)
				}
			}
		}
	}
}

func lenOf(v any) int {
	switch a := v.(type) {
	case Array[Text]:
		return len(a)
	case Array[Bytea]:
		return len(a)
	case Array[Timestamptz]:
		return len(a)
	case Array[Int2]:
		return len(a)
	}
	return -1
}

// TestRegisteredEncodingAllocatesNothing: a registered map encodes an
// Array of 10,000 elements into a buffer large enough with no allocation
// beyond pgx's plan lookup.
func TestRegisteredEncodingAllocatesNothing(t *testing.T) {
	m := pgtype.NewMap()
	Register(m)
	const n = 10000
	uids, ats := make(Array[Text], n), make(Array[Timestamptz], n)
	for i := range n {
		uids[i], ats[i] = "0b8f2c1e-5a3d-4c7b-9e21-6f4a8d2b1c3e", Timestamptz(time.Unix(int64(i), 0))
	}
	buf := make([]byte, 0, 1<<20)
	for _, c := range []struct {
		oid uint32
		v   any
	}{{pgtype.TextArrayOID, uids}, {pgtype.TimestamptzArrayOID, ats}} {
		if a := testing.AllocsPerRun(20, func() {
			if _, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.v, buf[:0]); err != nil {
				t.Fatal(err)
			}
		}); a > 2 {
			t.Errorf("oid %d: %.0f allocations", c.oid, a)
		}
	}
}

// BenchmarkEncode: a registered map's binary encoding of an Array of
// 10,000 elements ("fast") and pgx's own ("pgx").
func BenchmarkEncode(b *testing.B) {
	const n = 10000
	uids, keys, ats, kinds := make(Array[Text], n), make(Array[Bytea], n), make(Array[Timestamptz], n), make(Array[Int2], n)
	for i := range n {
		uids[i], keys[i], ats[i] = "0b8f2c1e-5a3d-4c7b-9e21-6f4a8d2b1c3e", Bytea("key-0123456789ab"), Timestamptz(time.Unix(int64(i), 0))
		kinds[i] = Int2(i%2 + 1)
	}
	fast := pgtype.NewMap()
	Register(fast)
	buf := make([]byte, 0, 1<<20)
	for _, m := range []struct {
		name string
		m    *pgtype.Map
	}{{"fast", fast}, {"pgx", pgtype.NewMap()}} {
		for _, c := range []struct {
			name string
			oid  uint32
			v    any
		}{{"text", pgtype.TextArrayOID, uids}, {"bytea", pgtype.ByteaArrayOID, keys}, {"timestamptz", pgtype.TimestamptzArrayOID, ats}, {"smallint", pgtype.Int2ArrayOID, kinds}} {
			b.Run(m.name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := m.m.Encode(c.oid, pgtype.BinaryFormatCode, c.v, buf[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
