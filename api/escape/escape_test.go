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
		// Quote unless it could read as another cell.
		mayRead := strings.HasPrefix(s, "<") || strings.HasPrefix(s, `"`) || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ")
		if cell := Cell(s); strings.HasPrefix(cell, "<") || (!mayRead && cell != quote) {
			t.Fatalf("Cell(%q) = %s (Quote: %s)", s, cell, quote)
		}
		// Cell is one-to-one: a cell left as it is is not quoted, and a
		// quoted one reads back as its string.
		if cell := Cell(s); strings.HasPrefix(cell, `"`) {
			if back, err := strconv.Unquote(cell); err != nil || back != s {
				t.Fatalf("Cell(%q) = %s reads back as %q (%v)", s, cell, back, err)
			}
		} else if cell != s {
			t.Fatalf("Cell(%q) = %s: changed, not quoted", s, cell)
		}
		// A name alone never reads as one acting as another, and a user
		// acting as another reads back as them alone.
		for _, c := range [][2]string{{s, "alice"}, {"alice", s}, {s, s}} {
			if c[1] == "" {
				continue
			}
			two := Actor(c[0], c[1])
			if one := Actor(two, ""); one == two {
				t.Fatalf("Actor(%q, \"\") = Actor(%q, %q) = %s", two, c[0], c[1], one)
			}
			if d := Deleter(two); d == two {
				t.Fatalf("Deleter(%q) = Actor(%q, %q) = %s", two, c[0], c[1], d)
			}
			u, a, ok := parseActor(two)
			if !ok || u != c[0] || a != c[1] {
				t.Fatalf("Actor(%q, %q) = %s reads back as %q, %q (%v)", c[0], c[1], two, u, a, ok)
			}
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

// parseActor reads an Actor cell back: the user and the identity acted as
// (a test of its being one-to-one).
func parseActor(cell string) (user, as string, ok bool) {
	name := func(s string) (string, string, bool) {
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return "", "", false
			}
			v, err := strconv.Unquote(q)
			return v, s[len(q):], err == nil
		}
		if i := strings.IndexAny(s, "()"); i >= 0 {
			if i == 0 || s[i-1] != ' ' {
				return "", "", false
			}
			return s[:i-1], s[i-1:], true
		}
		return s, "", true
	}
	user, rest, ok := name(cell)
	if !ok {
		return "", "", false
	}
	if user == "<none>" && !strings.HasPrefix(cell, `"`) {
		user = ""
	}
	if rest == "" {
		return user, "", true
	}
	inner, found := strings.CutPrefix(rest, " (as ")
	if !found || !strings.HasSuffix(inner, ")") {
		return "", "", false
	}
	as, tail, ok := name(inner[:len(inner)-1])
	return user, as, ok && tail == "" && as != ""
}
