package format

import (
	"testing"
)

// TestCellsAreOneLineOfText: recorded strings cannot break a table or
// drive the terminal.
func TestCellsAreOneLineOfText(t *testing.T) {
	for in, want := range map[string]string{
		"app-config":            "app-config",
		"":                      "<none>",
		"a\nb":                  `"a\nb"`,
		"tab\there":             `"tab\there"`,
		"\x1b[31mred":           `"\x1b[31mred"`,
		"evil\u202etxt.exe":     `"evil\u202etxt.exe"`,
		"naïve-日本":              "naïve-日本",
		"<script>x</script>":    "<script>x</script>", // a terminal shows markup as text
		"carriage\rreturn":      `"carriage\rreturn"`,
		"nul\x00byte":           `"nul\x00byte"`,
		"zero\u200bwidth space": `"zero\u200bwidth space"`,
		"no\u00a0break":         `"no\u00a0break"`, // issue 31: sql quoted it, the plugin did not
		"hangul\u3164filler":    `"hangul\u3164filler"`,
	} {
		if got := Cell(in); got != want {
			t.Errorf("Cell(%q) = %s, want %s", in, got, want)
		}
	}
}
