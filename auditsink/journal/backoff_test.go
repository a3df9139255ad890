package journal

import (
	"testing"

	"github.com/options-record/options-record/test/backofftest"
)

// TestDrainBackoffJitters: the drainer's waits (the default RetryMin and
// RetryMax) double from RetryMin to RetryMax, each up to a quarter longer,
// and two replicas' sequences differ (recorded with Step, not waited).
func TestDrainBackoffJitters(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	bo := o.backoff()
	if bo.Duration != o.RetryMin || bo.Cap != o.RetryMax || bo.Factor != 2 || bo.Jitter != 0.25 {
		t.Errorf("the drainer's backoff %+v: want RetryMin doubling to RetryMax, a quarter of jitter", bo)
	}
	backofftest.Jittered(t, bo, 8)
}
