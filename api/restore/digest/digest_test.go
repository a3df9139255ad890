package digest

import (
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	// sha256 of the empty string.
	const empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := Of(nil); got != empty {
		t.Errorf("Of(nil) = %s, want %s", got, empty)
	}
	a, b := Of([]byte(`{"data":{"v":"alice"}}`)), Of([]byte(`{"data":{"v":"mallory"}}`))
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 || a == b {
		t.Errorf("digests %q %q", a, b)
	}
	if !Equal(a, a) || Equal(a, b) || Equal(a, a[:len(a)-1]) {
		t.Error("Equal does not tell digests apart")
	}
}
