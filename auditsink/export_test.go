package auditsink

import (
	"testing"
	"time"
)

// PoisonRecycledBodies makes every recycled body read as X until the test
// ends, so that a reader the handler did not wait for reads garbage.
func PoisonRecycledBodies(t testing.TB) {
	poisonRecycled = true
	t.Cleanup(func() { poisonRecycled = false })
}

// SetLagClock makes l read the time from now.
func SetLagClock(l *SourceLag, now func() time.Time) { l.now = now }
