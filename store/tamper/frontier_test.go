package tamper

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// TestFrontierIsTlog: the stored hashes and roots a pass computes from
// its frontier are tlog's (StoredHashesForRecordHash, TreeHash), for a
// pass from every size of a tree of 300 leaves to every later one up to
// 70 leaves on: what a log stored and every verify recompute.
func TestFrontierIsTlog(t *testing.T) {
	const total = 300
	var stored []tlog.Hash // tlog's, index by index
	r := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x >= int64(len(stored)) {
				return nil, fmt.Errorf("no stored hash %d", x)
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	leafHash := func(n int64) tlog.Hash { return tlog.RecordHash(fmt.Appendf(nil, "leaf %d", n)) }
	roots := []tlog.Hash{{}}
	for n := int64(0); n < total; n++ {
		hs, err := tlog.StoredHashesForRecordHash(n, leafHash(n), r)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
		root, err := tlog.TreeHash(n+1, r)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
	}
	for size := int64(0); size < total; size++ {
		f, err := loadFrontier(size, r)
		if err != nil {
			t.Fatalf("frontier of %d: %v", size, err)
		}
		var hashes []byte
		for n := size; n < min(size+70, total); n++ {
			if hashes, err = f.add(n, leafHash(n), hashes); err != nil {
				t.Fatalf("from %d, leaf %d: %v", size, n, err)
			}
			var want []byte
			for _, h := range stored[tlog.StoredHashCount(size):tlog.StoredHashCount(n+1)] {
				want = append(want, h[:]...)
			}
			if !bytes.Equal(hashes, want) {
				t.Fatalf("from %d, leaf %d: stored hashes differ from tlog's", size, n)
			}
			root, err := tlog.TreeHash(n+1, f)
			if err != nil {
				t.Fatalf("from %d, root of %d: %v", size, n+1, err)
			}
			if root != roots[n+1] {
				t.Fatalf("from %d, root of %d: %x, want tlog's %x", size, n+1, root[:], roots[n+1][:])
			}
		}
	}
	// A frontier missing a hash (a log whose segments lost one) fails
	// rather than computes a wrong root.
	f, err := loadFrontier(6, r)
	if err != nil {
		t.Fatal(err)
	}
	f.n[1] = -1
	if _, err := f.add(6, sha256.Sum256(nil), nil); err != nil {
		t.Fatalf("leaf 6 needs no level-1 hash: %v", err)
	}
	if _, err := f.add(7, sha256.Sum256(nil), nil); err == nil {
		t.Error("leaf 7 without the level-1 hash of leaves 4 and 5: no error")
	}
}
