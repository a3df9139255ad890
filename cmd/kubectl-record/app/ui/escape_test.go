package ui

import (
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/options-record/options-record/api/escape"
)

// TestPageHidesWhatTheTerminalEscapes: the page's hidden class (app.js)
// is the one rule of api/escape, checked code point by code point. Go's
// regexp has no \p{Cn}; JavaScript's \p{C} holds the unassigned code
// points, which escape.Hidden also hides, so those are not compared here.
func TestPageHidesWhatTheTerminalEscapes(t *testing.T) {
	t.Parallel()
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const hidden = /(\[.*\])/gu;$`).FindSubmatch(js)
	if m == nil {
		t.Fatal("app.js: no `const hidden = /[...]/gu;` line")
	}
	// JavaScript's \uXXXX and \u{X} are Go's \x{X}.
	class := regexp.MustCompile(`\\u\{([0-9a-fA-F]+)\}|\\u([0-9a-fA-F]{4})`).ReplaceAllString(string(m[1]), `\x{$1$2}`)
	re, err := regexp.Compile("^" + class + "$")
	if err != nil {
		t.Fatalf("app.js's class %s as Go: %v", m[1], err)
	}
	kept := func(r rune) bool { return strings.ContainsRune(" \t\n", r) } // shown() keeps these
	assigned := append(append([]*unicode.RangeTable{}, unicode.GraphicRanges...), unicode.C, unicode.Zl, unicode.Zp)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff || !unicode.In(r, assigned...) {
			continue // lone surrogates are no Go string; unassigned: see above
		}
		page := re.MatchString(string(r)) && !kept(r)
		term := escape.Hidden(r) && r != '\t' && r != '\n'
		if page != term {
			t.Errorf("%U: page hides it: %v, api/escape: %v", r, page, term)
		}
	}
}
