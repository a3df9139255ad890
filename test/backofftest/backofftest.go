// Package backofftest checks the waits a k8s.io/apimachinery wait.Backoff
// yields, without waiting them: each within what the backoff's growth,
// cap and jitter allow, and two replicas' sequences different (jitter, so
// that replicas do not retry in lockstep). For tests only; no I/O.
package backofftest

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Bounds returns the shortest and longest the (n+1)th wait of bo may be:
// its Duration grown by Factor n times, capped at Cap, and up to Jitter
// times longer.
func Bounds(bo wait.Backoff, n int) (low, high time.Duration) {
	low = bo.Duration
	for range n {
		if bo.Factor != 0 {
			low = time.Duration(float64(low) * bo.Factor)
		}
		if bo.Cap > 0 && low > bo.Cap {
			low = bo.Cap
		}
	}
	return low, low + time.Duration(float64(low)*bo.Jitter)
}

// Jittered steps two copies of bo n times each, as two replicas would,
// and fails t if a wait is outside Bounds or both replicas wait the same.
func Jittered(t testing.TB, bo wait.Backoff, n int) {
	t.Helper()
	var seqs [2][]time.Duration
	for i := range seqs {
		b := bo
		for j := range n {
			d := b.Step()
			if low, high := Bounds(bo, j); d < low || d > high {
				t.Errorf("replica %d, wait %d: %s, want within [%s, %s]", i, j+1, d, low, high)
			}
			seqs[i] = append(seqs[i], d)
		}
	}
	if slices.Equal(seqs[0], seqs[1]) {
		t.Errorf("two replicas retry in lockstep: both wait %v", seqs[0])
	}
}
