package history

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
)

// TestProofFileNames: a proof's file name is one safe name of at most 255
// bytes, whatever the object's name holds: no separator, no control or
// direction character, valid UTF-8, never "." or ".." or hidden; a short
// name too long for a file name ends with its version key.
func TestProofFileNames(t *testing.T) {
	key := strings.Repeat("3f", 32)
	long253 := strings.Repeat("é", 126) + "x"
	for _, c := range []struct{ short, long string }{
		{"app-config-3f9a2c1b", "uid-1." + key},
		{"../../etc/passwd-3f9a2c1b", "uid-2." + key},
		{"a\\b\u202e\u0007\x00%2F-3f9a2c1b", "uid\n/3." + key},
		{".hidden-3f9a2c1b", "uid-4." + key},
		{long253 + "-3f9a2c1b", "uid-5." + key},
		{strings.Repeat("/", 200) + "-3f9a2c1b", strings.Repeat("/", 200) + "." + key},
	} {
		name := proofFile(c.short, c.long)
		base, ok := strings.CutSuffix(name, cmdutil.ProofSuffix)
		if !ok || len(name) > cmdutil.MaxFileName || !utf8.ValidString(name) || base == "" || strings.HasPrefix(name, ".") ||
			strings.ContainsAny(name, "/\\\x00\a\n\u202e") {
			t.Errorf("proof file of %q: %q", c.short, name)
		}
		if len(cmdutil.FileSafe(c.short)) > cmdutil.MaxFileName-len(cmdutil.ProofSuffix) && !strings.HasSuffix(base, key) {
			t.Errorf("a long name's proof file %q does not end with the version key", name)
		}
	}
	if got := proofFile("app-config-3f9a2c1b", "x"); got != "app-config-3f9a2c1b.tlog-proof" {
		t.Errorf("proof file %q", got)
	}
}
