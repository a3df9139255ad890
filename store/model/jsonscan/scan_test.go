package jsonscan

import (
	"strings"
	"testing"
)

// TestStepSaysWhereAStringMayBeCut: a cut may be made before a character
// or an escape, never inside one (a UTF-8 sequence, \", \u00e9).
func TestStepSaysWhereAStringMayBeCut(t *testing.T) {
	const s = `"a\"\u00e9é\\"`
	want := map[int]Flags{ // byte offset: its flags
		0: Open, 1: Text | Boundary, 2: Text | Boundary, 3: Text, 4: Text | Boundary, 5: Text, 6: Text, 7: Text, 8: Text, 9: Text,
		10: Text | Boundary, 11: Text, 12: Text | Boundary, 13: Text, 14: Close | Boundary | Done,
	}
	var e Extent
	for i := range len(s) {
		if got := e.Step(s[i]); got != want[i] {
			t.Errorf("byte %d (%q): flags %b, want %b", i, s[i], got, want[i])
		}
	}
}

// TestMaxNest: a value inside more than MaxNest objects and arrays of the
// one scanned is refused; an empty object or array stands where a value may.
func TestMaxNest(t *testing.T) {
	m := Mode{Strict: true, MaxNest: 3}
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`[[[1]]]`, true},
		{`[[[[]]]]`, true},
		{`[[[[1]]]]`, false},
		{`{"a":{"b":{"c":{}}}}`, true},
		{`{"a":{"b":{"c":{"d":1}}}}`, false},
	} {
		_, err := m.Skip([]byte(c.in), 0)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.in, err, c.ok)
		}
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if end, err := Lax.Skip([]byte(deep), 0); err != nil || end != len(deep) {
		t.Errorf("Lax skipped %d of %d: %v", end, len(deep), err)
	}
	if end, err := (Mode{Strict: true}).Skip([]byte(deep), 0); err != nil || end != len(deep) {
		t.Errorf("Strict skipped %d of %d: %v", end, len(deep), err)
	}
}

// TestDrop: members dropped with one comma each, the rest as it was.
func TestDrop(t *testing.T) {
	for in, want := range map[string]string{
		`{"x":1,"a":2,"b":3}`:         `{"a":2,"b":3}`,
		`{"a":1,"x":2,"b":3}`:         `{"a":1,"b":3}`,
		`{"a":1, "x":2 }`:             `{"a":1 }`,
		`{ "x":1 , "x":2, "b":3}`:     `{ "b":3}`,
		`{"x":1}`:                     `{}`,
		`{"a":1,"x":[{"x":1}],"x":2}`: `{"a":1}`,
	} {
		b := []byte(in)
		spans, _, err := Lax.Drop(b, 0, func(m Member) bool { return m.KeyIs("x") })
		if got := string(Cut(b, spans)); err != nil || got != want {
			t.Errorf("%s: %s (%v), want %s", in, got, err, want)
		}
	}
}
