package rulesync

import (
	"slices"
	"testing"
	"time"
)

// TestRetryBackoffJitters: the waits between retries of the first LIST
// and of sharing double from 1 s to 30 s, each up to half again longer,
// and two replicas' differ (recorded with Step, not waited).
func TestRetryBackoffJitters(t *testing.T) {
	var seqs [2][]time.Duration
	for i := range seqs {
		bo := retryBackoff
		for j := range 8 {
			d := bo.Step()
			low := min(time.Second<<j, 30*time.Second)
			if d < low || d > low+low/2 {
				t.Errorf("replica %d, wait %d: %s, want within [%s, %s]", i, j+1, d, low, low+low/2)
			}
			seqs[i] = append(seqs[i], d)
		}
	}
	if slices.Equal(seqs[0], seqs[1]) {
		t.Errorf("two replicas retry in lockstep: both wait %v", seqs[0])
	}
}
