package filter

import (
	"path"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		kind    globKind
		match   []string
		noMatch []string
	}{
		{"prod", globExact, []string{"prod"}, []string{"", "pro", "prod-1", "xprod"}},
		{"*", globAny, []string{"", "x", "a/b:c"}, nil},
		{"***", globAny, []string{"", "abc"}, nil},
		{"payments-*", globPrefix, []string{"payments-", "payments-eu"}, []string{"payments", "x-payments-eu"}},
		{"**-prod", globSuffix, []string{"-prod", "eu-prod"}, []string{"eu-prod-1"}},
		{"*kube*", globContains, []string{"kube", "kube-system", "my-kube-ns"}, []string{"kub-e"}},
		{"system:serviceaccount:*:default", globGeneral,
			[]string{"system:serviceaccount:ci:default", "system:serviceaccount::default"},
			[]string{"system:serviceaccount:ci:deployer", "system:serviceaccount:ci:default:x"}},
		{"team-?", globGeneral, []string{"team-a", "team-é"}, []string{"team-", "team-ab"}},
		{"a*b*c", globGeneral, []string{"abc", "aXbYc", "abbbc", "acbc"}, []string{"ab", "acb", "abcd"}},
		{"*a?c*", globGeneral, []string{"abc", "xxaécyy"}, []string{"ac", "abbc"}},
		{"*/*", globContains, []string{"a/b", "https://issuer/#sub"}, []string{"ab"}},
		{"?", globGeneral, []string{"a", "é", "世"}, []string{"", "ab"}},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tt.pattern, err)
		}
		if g.kind != tt.kind {
			t.Errorf("compileGlob(%q).kind = %d, want %d", tt.pattern, g.kind, tt.kind)
		}
		for _, s := range tt.match {
			if !g.match(s) {
				t.Errorf("%q does not match %q", tt.pattern, s)
			}
		}
		for _, s := range tt.noMatch {
			if g.match(s) {
				t.Errorf("%q matches %q", tt.pattern, s)
			}
		}
	}
}

func TestGlobInvalid(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "[a]", "a]", `a\*`, "\xff"} {
		if _, err := compileGlob(p); err == nil {
			t.Errorf("compileGlob(%q) succeeded, want an error", p)
		}
	}
}

// FuzzGlob checks the matcher against path.Match, which has the same
// semantics for `*` and `?` on strings without '/'.
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"a*b?c", "axxbyc"}, {"*", ""}, {"?é*", "xé"}, {"**a**", "bab"}, {"x*", "y"}, {"*?*?*", "ab"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		got := g.match(s)
		if general := matchGlob(pattern, s); general != got {
			t.Fatalf("fast path %d and matchGlob disagree on %q, %q: %v, %v", g.kind, pattern, s, got, general)
		}
		if strings.Contains(pattern+s, "/") {
			return
		}
		want, err := path.Match(pattern, s)
		if err != nil {
			t.Fatalf("path.Match(%q): %v", pattern, err)
		}
		if got != want {
			t.Fatalf("match(%q, %q) = %v, path.Match says %v", pattern, s, got, want)
		}
	})
}
