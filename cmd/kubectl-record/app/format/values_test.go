package format

import (
	"strings"
	"testing"

	"github.com/options-record/options-record/api/escape"
)

// TestEscapeTextLeavesNoControlToTheTerminal: C1 controls (U+009B is a
// CSI on some terminals), bidirectional overrides and zero-width
// characters, which JSON leaves raw, are escaped; readable text is not.
func TestEscapeTextLeavesNoControlToTheTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, naïve 日本":  "plain text, naïve 日本",
		"a\u009b2Jb":            `a\u009b2Jb`,
		"evil\u202etxt":         `evil\u202etxt`,
		"zero\u200bwidth":       `zero\u200bwidth`,
		"tab\tnew\nline\x1b[0m": `tab\tnew\nline\x1b[0m`,
		"no\u00a0break":         `no\u00a0break`,
		"bad\xffutf8":           `bad\xffutf8`,
	} {
		if got := escape.Line(in); got != want {
			t.Errorf("escape.Line(%q) = %s, want %s", in, got, want)
		}
	}
	for _, l := range ValueLines(map[string]any{"k": "x\u009by\u202ez"}) {
		if strings.ContainsAny(l, "\u009b\u202e") {
			t.Errorf("a diff line carries a control character: %q", l)
		}
	}
	for _, l := range ValueLines("x\u009by") {
		if strings.ContainsRune(l, '\u009b') {
			t.Errorf("a scalar diff line carries U+009B: %q", l)
		}
	}
}
