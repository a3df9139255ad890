package refpack

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

type ref struct {
	kind   int16
	at     time.Time
	uid    string
	key    []byte
	digest []byte
}

var digest = bytes.Repeat([]byte{0xd1}, DigestSize)

var refs = []ref{
	{KindEvent, time.UnixMicro(1_790_000_000_123_456), "", []byte{1, 2, 3}, digest},
	{KindVersion, time.UnixMicro(1_790_000_000_000_001), "0000-4000-8000", []byte("v1"), nil},
	{KindVersion, time.UnixMicro(MinMicros), strings.Repeat("\u202e", 100), []byte{}, digest}, // a length of two bytes
	{KindEvent, time.UnixMicro(math.MaxInt64), "", bytes.Repeat([]byte{0}, 300), nil},
}

func pack(rs []ref) *Builder {
	var p Builder
	for _, r := range rs {
		p.Add(r.kind, r.at, r.uid, r.key, r.digest)
	}
	return &p
}

func decode(t *testing.T, b []byte) ([]Row, int, time.Time, error) {
	t.Helper()
	var got []Row
	n, first, err := Decode(b, func(r Row) { got = append(got, r) })
	return got, n, first, err
}

// TestRoundTrip: what a Builder packs decodes to the same rows, in order,
// with their count and earliest time.
func TestRoundTrip(t *testing.T) {
	p := pack(refs)
	if p.Len() != len(refs) || !p.First().Equal(time.UnixMicro(MinMicros)) {
		t.Fatalf("Len %d, First %v", p.Len(), p.First())
	}
	got, n, first, err := decode(t, p.Bytes())
	if err != nil || n != len(refs) || len(got) != n || !first.Equal(p.First()) {
		t.Fatalf("Decode: %d rows, %v, %v", n, first, err)
	}
	for i, r := range refs {
		g := got[i]
		if g.Kind != r.kind || !g.At.Equal(r.at) || g.UID != r.uid || !bytes.Equal(g.Key, r.key) || !bytes.Equal(g.Digest, r.digest) || (g.Digest == nil) != (r.digest == nil) {
			t.Errorf("row %d: %+v, want %+v", i, g, r)
		}
	}
	var empty Builder
	if empty.Bytes() != nil || empty.Len() != 0 || !empty.First().IsZero() {
		t.Error("an empty Builder is not empty")
	}
}

// TestMalformed: a value that breaks a rule of the layout is an error,
// whichever rule, never a panic or a part of it.
func TestMalformed(t *testing.T) {
	good := pack(refs[:2]).Bytes()
	row := func(tag byte, us int64, rest ...byte) []byte {
		b := []byte{Version, tag}
		for i := 7; i >= 0; i-- {
			b = append(b, byte(uint64(us)>>(8*i)))
		}
		return append(b, rest...)
	}
	cases := map[string][]byte{
		"empty":            {},
		"version 2":        append([]byte{2}, good[1:]...),
		"truncated":        good[:len(good)-1],
		"trailing byte":    append(append([]byte{}, good...), 0),
		"tag 3":            row(3, 0, 0, 0),
		"tag 0x83":         row(0x83, 0, 0, 0),
		"tag 0x41":         row(0x41, 0, 0, 0),
		"before -4713":     row(1, MinMicros-1, 0, 0),
		"-infinity":        row(1, math.MinInt64, 0, 0),
		"truncated time":   {Version, 1, 0, 0, 0},
		"long length":      row(1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0),
		"length past end":  row(1, 0, 5, 'a', 0),
		"invalid UTF-8":    row(2, 0, 1, 0xff, 0),
		"NUL in uid":       row(2, 0, 1, 0, 0),
		"surrogate":        row(2, 0, 3, 0xed, 0xa0, 0x80, 0),
		"truncated digest": row(0x81, 0, 0, 0, 1, 2, 3),
	}
	for name, b := range cases {
		got, n, _, err := decode(t, b)
		if !errors.Is(err, ErrMalformed) || n != 0 {
			t.Errorf("%s (%x): %d rows (%d yielded), %v; want ErrMalformed", name, b, n, len(got), err)
		}
	}
	// A five-byte length is a length.
	if _, n, _, err := decode(t, row(1, 0, 0x80, 0x80, 0x80, 0x80, 0x00, 0)); err != nil || n != 1 {
		t.Errorf("a five-byte length: %d rows, %v", n, err)
	}
	// A version byte alone holds no row.
	if _, n, _, err := decode(t, []byte{Version}); err != nil || n != 0 {
		t.Errorf("no rows: %d, %v", n, err)
	}
}

// TestDecodeAllocs: Decode copies the value once, whatever its rows.
func TestDecodeAllocs(t *testing.T) {
	var rs []ref
	for i := range 400 {
		rs = append(rs, ref{KindVersion, time.UnixMicro(int64(i)), "0000-4000-8000-0000", []byte("0123456789abcdef0123456789abcdef"), digest})
	}
	b := pack(rs).Bytes()
	n := 0
	yield := func(Row) { n++ }
	if a := testing.AllocsPerRun(10, func() { Decode(b, yield) }); a > 1 {
		t.Errorf("Decode of 400 rows: %.0f allocations, want 1", a)
	}
}

// TestGrow: a Builder grown first packs the same bytes, a batch of 400
// events and their versions with one allocation.
func TestGrow(t *testing.T) {
	var g Builder
	g.Grow(len(refs))
	for _, r := range refs {
		g.Add(r.kind, r.at, r.uid, r.key, r.digest)
	}
	if !bytes.Equal(g.Bytes(), pack(refs).Bytes()) {
		t.Errorf("grown: %x, want %x", g.Bytes(), pack(refs).Bytes())
	}
	uid := "00000000-0000-4000-8000-000000000000"
	key := bytes.Repeat([]byte{1}, 32)
	allocs := testing.AllocsPerRun(10, func() {
		var p Builder
		p.Grow(800)
		for i := range 400 {
			p.Add(KindEvent, time.UnixMicro(int64(i)), "", key, digest)
			p.Add(KindVersion, time.UnixMicro(int64(i)), uid, key, digest)
		}
	})
	if allocs > 1 {
		t.Errorf("400 events and their versions: %.0f allocations, want 1", allocs)
	}
}

// FuzzDecode: Decode never panics, and a value it reads packs again to
// the same bytes (the layout has one way to write each value, lengths
// aside: a length may take more bytes than it needs).
func FuzzDecode(f *testing.F) {
	f.Add(pack(refs).Bytes())
	f.Add([]byte{Version})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Builder
		n, first, err := Decode(b, func(r Row) { p.Add(r.Kind, r.At, r.UID, r.Key, r.Digest) })
		if err != nil {
			return
		}
		if p.Len() != n || (n > 0 && !p.First().Equal(first)) {
			t.Fatalf("%d rows, first %v; packed again %d, %v", n, first, p.Len(), p.First())
		}
		if n > 0 && len(p.Bytes()) > len(b) {
			t.Fatalf("packed again longer: %x from %x", p.Bytes(), b)
		}
	})
}
