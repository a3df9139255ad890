package pgtest

import (
	"os"
	"testing"
)

// EnvRequire names the variable that `make test` (and every make target)
// sets to 1: under it a test whose dependency cannot start fails. Without it
// (a plain `go test ./...` on a machine without the dependency) the test
// skips with one line naming the make target that provides it.
const EnvRequire = "OPTIONS_RECORD_REQUIRE_DEPS"

// Unavailable ends a test whose dependency (what) cannot be had: it fails
// the test under EnvRequire, and skips it otherwise, naming target, the
// make target that installs or builds the dependency and runs the test.
func Unavailable(t testing.TB, what, target string, err error) {
	t.Helper()
	if os.Getenv(EnvRequire) != "" {
		t.Fatalf("needs %s (required: %s is set), which is unavailable: %v", what, EnvRequire, err)
	}
	t.Skipf("needs %s, which is not available here; run `%s`, which installs or builds it (%v)", what, target, err)
}
