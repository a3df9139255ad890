package journal

import (
	"bytes"
	"testing"
	"time"
)

// FuzzScanSegment checks the recovery scan on arbitrary segment contents: it
// never panics, returns only intact, ordered, non-overlapping records, and
// cutting the segment where it says the intact part ends (as Open does)
// gives the same records and nothing more to cut. Records appended intact
// after the fuzzed bytes are always found.
func FuzzScanSegment(f *testing.F) {
	var seg []byte
	for _, id := range []string{"a", "b", "c"} {
		rec, err := encodeRecord(batch(id), time.Unix(1700000000, 0))
		if err != nil {
			f.Fatal(err)
		}
		seg = append(seg, rec...)
	}
	f.Add(seg)
	f.Add(seg[:len(seg)-7])              // torn tail
	f.Add(seg[:headerSize/2])            // torn header
	f.Add(append(seg[:30:30], seg...))   // damage, then intact records
	f.Add(bytes.Repeat(magicBytes, 100)) // magic without records
	f.Add([]byte{})
	tail, _ := encodeRecord(batch("tail"), time.Unix(1700000000, 0))

	f.Fuzz(func(t *testing.T, data []byte) {
		s := scanSegment(data)
		check := func(s scanned, data []byte) {
			end := int64(0)
			for _, r := range s.records {
				if r.off < end || r.off+r.size > int64(len(data)) {
					t.Fatalf("record at %d+%d overlaps or exceeds %d", r.off, r.size, len(data))
				}
				if _, _, err := parseRecord(data[r.off : r.off+r.size]); err != nil {
					t.Fatalf("record at %d: %v", r.off, err)
				}
				end = r.off + r.size
			}
			if s.validEnd != end {
				t.Fatalf("validEnd %d, last record ends at %d", s.validEnd, end)
			}
		}
		check(s, data)
		cut := scanSegment(data[:s.validEnd])
		if len(cut.records) != len(s.records) || cut.validEnd != s.validEnd {
			t.Fatalf("after cutting at %d: %d records ending at %d, before %d", s.validEnd, len(cut.records), cut.validEnd, len(s.records))
		}
		withTail := append(append([]byte(nil), data...), tail...)
		wt := scanSegment(withTail)
		check(wt, withTail)
		if n := len(wt.records); n == 0 || wt.records[n-1].off+wt.records[n-1].size != int64(len(withTail)) {
			t.Fatalf("an intact record after the fuzzed bytes was not found")
		}
	})
}
