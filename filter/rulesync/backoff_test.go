package rulesync

import (
	"testing"
	"time"

	"github.com/options-record/options-record/test/backofftest"
)

// TestRetryBackoffJitters: the waits between retries of the first LIST
// and of sharing double from 1 s to 30 s, each up to half again longer,
// and two replicas' differ (recorded with Step, not waited).
func TestRetryBackoffJitters(t *testing.T) {
	bo := retryBackoff
	if bo.Duration != time.Second || bo.Cap != 30*time.Second || bo.Factor != 2 || bo.Jitter != 0.5 {
		t.Errorf("retryBackoff: %+v, want 1 s doubling to 30 s, half of jitter", bo)
	}
	backofftest.Jittered(t, bo, 8)
}
