package tamper

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randomRows are pending rows as a pass drains them: times to the
// microsecond (as PostgreSQL and refpack give them), many rows sharing a
// time (an event and its version), each kind, before 1970 and far ahead,
// and duplicates.
func randomRows(r *rand.Rand, n int) []pendingRow {
	base := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	rows := make([]pendingRow, 0, n)
	for i := range n {
		at := base.Add(time.Duration(r.IntN(2000)) * time.Microsecond)
		switch r.IntN(50) {
		case 0:
			at = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(3)) * time.Microsecond)
		case 1:
			at = time.Date(1969, 12, 31, 23, 59, 59, 999998000, time.UTC).Add(time.Duration(r.IntN(3)) * time.Microsecond)
		case 2:
			at = time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC)
		}
		row := pendingRow{Ref: Ref{Kind: Kind(1 + r.IntN(3)), Cluster: "c", UID: fmt.Sprint("uid-", r.IntN(40)), Key: []byte{byte(r.IntN(4))}, At: at}}
		binary.BigEndian.PutUint32(row.digest.d[:], uint32(i))
		row.digest.ok = true
		rows = append(rows, row)
		if r.IntN(10) == 0 {
			rows = append(rows, row) // a duplicate
		}
	}
	return rows
}

// TestSortRowsIsCompareRefs: sortRows gives the order slices.SortFunc by
// compareRefs gives (the log's order), row for row.
func TestSortRowsIsCompareRefs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, rows := range [][]pendingRow{randomRows(r, 0), randomRows(r, 1), randomRows(r, 2), randomRows(r, 3),
		randomRows(r, 10), randomRows(r, 100), randomRows(r, 1000), randomRows(r, 20000), passRows()} {
		want := slices.Clone(rows)
		slices.SortStableFunc(want, func(a, b pendingRow) int { return compareRefs(a.Ref, b.Ref) })
		sortRows(rows)
		for i := range rows {
			if compareRefs(rows[i].Ref, want[i].Ref) != 0 {
				t.Fatalf("%d rows: row %d is %s, want %s", len(rows), i, rows[i].Ref, want[i].Ref)
			}
		}
		// Every row once: the digests (each row's own) are a permutation.
		got := map[[32]byte]int{}
		for i := range rows {
			got[rows[i].digest.d]++
			got[want[i].digest.d]--
		}
		for d, c := range got {
			if c != 0 {
				t.Fatalf("%d rows: row %x appears %+d times more than it should", len(rows), d[:4], c)
			}
		}
	}
}

// passRows are a pass's rows as make bench's load gives them: 10,000
// events a few microseconds apart, each with its version at its time, in
// 25 batches of 400 sent at once by 6 apiservers.
func passRows() []pendingRow {
	base := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	var rows []pendingRow
	for batch := range 25 {
		for i := range 400 {
			at := base.Add(time.Duration(batch%6)*time.Second/6 + time.Duration(i*250+batch)*time.Microsecond)
			key := []byte(fmt.Sprint("key-", batch, "-", i))
			rows = append(rows, pendingRow{Ref: Ref{Kind: KindEvent, Cluster: "c", Key: key, At: at}})
			rows = append(rows, pendingRow{Ref: Ref{Kind: KindVersion, Cluster: "c", UID: fmt.Sprint("uid-", batch, "-", i), Key: key, At: at}})
		}
	}
	return rows
}

// BenchmarkSortRows: the sort of a pass of 20,000 rows (10,000 kept
// events and their versions).
func BenchmarkSortRows(b *testing.B) {
	src := passRows()
	rows := make([]pendingRow, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(rows, src)
		sortRows(rows)
	}
}

// BenchmarkSortRowsByRef: the same rows sorted whole by compareRefs, as
// the drain did before sortRows.
func BenchmarkSortRowsByRef(b *testing.B) {
	src := passRows()
	rows := make([]pendingRow, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(rows, src)
		slices.SortFunc(rows, func(a, b pendingRow) int { return compareRefs(a.Ref, b.Ref) })
	}
}
