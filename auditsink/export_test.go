package auditsink

import "testing"

// PoisonRecycledBodies makes every recycled body read as X until the test
// ends, so that a reader the handler did not wait for reads garbage.
func PoisonRecycledBodies(t testing.TB) {
	poisonRecycled = true
	t.Cleanup(func() { poisonRecycled = false })
}
