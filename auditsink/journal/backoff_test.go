package journal

import (
	"slices"
	"testing"
	"time"
)

// TestDrainBackoffJitters: the drainer's waits (the default RetryMin and
// RetryMax) double from RetryMin to RetryMax, each up to a quarter longer,
// and two replicas' sequences differ (recorded with Step, not waited).
func TestDrainBackoffJitters(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var seqs [2][]time.Duration
	for i := range seqs {
		bo := o.backoff()
		for j := range 8 {
			d := bo.Step()
			low := min(o.RetryMin<<j, o.RetryMax)
			if d < low || d > low+low/4 {
				t.Errorf("replica %d, wait %d: %s, want within [%s, %s]", i, j+1, d, low, low+low/4)
			}
			seqs[i] = append(seqs[i], d)
		}
	}
	if slices.Equal(seqs[0], seqs[1]) {
		t.Errorf("two replicas' drainers retry in lockstep: both wait %v", seqs[0])
	}
}
