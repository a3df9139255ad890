package escape

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

type hostileCase struct{ in, line, quote string }

// hostile reads testdata/hostile.txt.
func hostile(t testing.TB) []hostileCase {
	t.Helper()
	f, err := os.Open("testdata/hostile.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []hostileCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Split(l, "\t")
		if len(fields) != 3 {
			t.Fatalf("hostile.txt:%d: %d fields, want 3", n, len(fields))
		}
		var c [3]string
		for i, f := range fields {
			if c[i], err = strconv.Unquote(f); err != nil {
				t.Fatalf("hostile.txt:%d: field %d: %v", n, i+1, err)
			}
		}
		cases = append(cases, hostileCase{c[0], c[1], c[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestHostile(t *testing.T) {
	t.Parallel()
	for _, c := range hostile(t) {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Quote(c.in); got != c.quote {
			t.Errorf("Quote(%q) = %q, want %q", c.in, got, c.quote)
		}
		if got, want := string(Text([]byte(c.in))), strings.NewReplacer(`\t`, "\t", `\n`, "\n").Replace(c.line); got != want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, want)
		}
	}
}

// TestHidden names the characters the rule is about, one by one.
func TestHidden(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0, '\t', '\n', 0x1b, 0x7f, 0x85, 0x9b, 0xa0, 0xad, 0x61c, 0x115f, 0x1680, 0x180e, 0x2000, 0x200b,
		0x200d, 0x200e, 0x2028, 0x2029, 0x202a, 0x202e, 0x202f, 0x205f, 0x2060, 0x2066, 0x2069, 0x3000, 0x3164, 0xfeff,
		0xfff9, 0xffff, 0xe000, 0xe0001, 0xe0041} {
		if !Hidden(r) {
			t.Errorf("Hidden(%U) = false", r)
		}
	}
	for _, r := range []rune{' ', 'a', '~', 'é', '日', 0xfffd, 0x1f600, 0x301} {
		if Hidden(r) {
			t.Errorf("Hidden(%U) = true", r)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	for _, c := range hostile(t) {
		if !utf8.ValidString(c.in) {
			continue // encoding/json writes valid UTF-8 only
		}
		data, err := json.Marshal(c.in)
		if err != nil {
			t.Fatal(err)
		}
		out := JSON(data)
		checkShown(t, string(out), false)
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != c.in {
			t.Errorf("JSON(%s) = %s, reads back as %q (%v)", data, out, back, err)
		}
	}
}

// checkShown fails if out holds a hidden character or an invalid byte.
func checkShown(t *testing.T, out string, layout bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q is not UTF-8", out)
	}
	for _, r := range out {
		if Hidden(r) && !(layout && (r == '\n' || r == '\t')) {
			t.Fatalf("%q holds hidden %U", out, r)
		}
	}
}

// FuzzEscape checks that no hidden character or invalid byte survives any
// of the escapes, that Quote reads back, and that a string with nothing
// hidden is left as it is.
func FuzzEscape(f *testing.F) {
	for _, c := range hostile(f) {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, quote, text := Line(s), Quote(s), string(Text([]byte(s)))
		checkShown(t, line, false)
		checkShown(t, quote, false)
		checkShown(t, text, true)
		// A cell never begins with "<" (the tables' own words), and is
		// Quote otherwise.
		if cell := Cell(s); strings.HasPrefix(cell, "<") || (!strings.HasPrefix(s, "<") && cell != quote) {
			t.Fatalf("Cell(%q) = %s (Quote: %s)", s, cell, quote)
		}
		if clean(s, false) {
			if line != s || quote != s || text != s {
				t.Fatalf("%q has nothing hidden but is changed: %q %q %q", s, line, quote, text)
			}
			return
		}
		back, err := strconv.Unquote(quote)
		if err != nil || back != s {
			t.Fatalf("Quote(%q) = %s reads back as %q (%v)", s, quote, back, err)
		}
		if utf8.ValidString(s) {
			data, _ := json.Marshal(s)
			out := JSON(data)
			checkShown(t, string(out), false)
			var j string
			if err := json.Unmarshal(out, &j); err != nil || j != s {
				t.Fatalf("JSON(%s) = %s reads back as %q (%v)", data, out, j, err)
			}
		}
	})
}

// TestQuoted: Quoted quotes every string, clean or not, as Quote quotes
// one that is not.
func TestQuoted(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": `""`, "app": `"app"`, `a"b\`: `"a\"b\\"`, "a\u3164b\n": `"a\u3164b\n"`} {
		if got := Quoted(in); got != want {
			t.Errorf("Quoted(%q) = %s, want %s", in, got, want)
		}
		if back, err := strconv.Unquote(Quoted(in)); err != nil || back != in {
			t.Errorf("Quoted(%q) reads back as %q, %v", in, back, err)
		}
	}
}
