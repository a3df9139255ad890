package filter

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// A glob is a compiled pattern of the selectors' glob syntax: `*` matches
// any run of characters (including none, and unlike path.Match including
// `/`), `?` matches exactly one character, and every other character matches
// itself. `[`, `]` and `\` are reserved so that character classes or escapes
// can be added later without changing the meaning of existing rules.
//
// Most patterns in practice are literals, prefixes or suffixes; those are
// matched with a single string comparison.
type glob struct {
	kind globKind
	lit  string // the literal part, for every kind but globAny and globGeneral
	pat  string // the whole pattern
}

type globKind uint8

const (
	globExact    globKind = iota // "prod"
	globAny                      // "*"
	globPrefix                   // "payments-*"
	globSuffix                   // "*-prod"
	globContains                 // "*prod*"
	globGeneral                  // anything else with * or ?
)

var (
	errGlobEmpty    = errors.New("must not be empty")
	errGlobReserved = errors.New(`must not contain '[', ']' or '\'`)
	errGlobUTF8     = errors.New("must be valid UTF-8")
)

func compileGlob(pattern string) (glob, error) {
	switch {
	case pattern == "":
		return glob{}, errGlobEmpty
	case strings.ContainsAny(pattern, `[]\`):
		return glob{}, errGlobReserved
	case !utf8.ValidString(pattern):
		return glob{}, errGlobUTF8
	}
	g := glob{pat: pattern, kind: globGeneral}
	if strings.Trim(pattern, "*") == "" {
		g.kind = globAny
		return g, nil
	}
	if strings.IndexByte(pattern, '?') >= 0 {
		return g, nil
	}
	inner := strings.Trim(pattern, "*")
	if strings.IndexByte(inner, '*') >= 0 {
		return g, nil
	}
	g.lit = inner
	lead, trail := pattern[0] == '*', pattern[len(pattern)-1] == '*'
	switch {
	case lead && trail:
		g.kind = globContains
	case lead:
		g.kind = globSuffix
	case trail:
		g.kind = globPrefix
	default:
		g.kind = globExact
	}
	return g, nil
}

func (g *glob) match(s string) bool {
	switch g.kind {
	case globExact:
		return s == g.lit
	case globAny:
		return true
	case globPrefix:
		return strings.HasPrefix(s, g.lit)
	case globSuffix:
		return strings.HasSuffix(s, g.lit)
	case globContains:
		return strings.Contains(s, g.lit)
	default:
		return matchGlob(g.pat, s)
	}
}

// matchGlob matches s against a pattern of literals, `*` and `?`. It
// backtracks only to the last `*`, so it runs in O(len(pattern)*len(s)) and
// never allocates. `?` and the backtracking of `*` advance by whole UTF-8
// sequences, so `?` matches one character, not one byte.
func matchGlob(pattern, s string) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(s[sx:])
				px++
				sx += w
				continue
			default:
				if s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if starPx < 0 {
			return false
		}
		// Let the last star swallow one more character and retry.
		_, w := utf8.DecodeRuneInString(s[starSx:])
		starSx += w
		px, sx = starPx+1, starSx
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// A globSet matches when any of its globs does. An empty set matches nothing;
// callers decide what an empty selector means.
type globSet []glob

func (gs globSet) match(s string) bool {
	for i := range gs {
		if gs[i].match(s) {
			return true
		}
	}
	return false
}

// matchAny reports whether any of ss matches.
func (gs globSet) matchAny(ss []string) bool {
	for _, s := range ss {
		if gs.match(s) {
			return true
		}
	}
	return false
}
