package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzScan checks the scanner against encoding/json: Strict accepts
// exactly what json.Valid accepts; on JSON, Skip (Lax and Strict, by Step
// a byte at a time and by Feed) ends where the value ends, and the walk of
// an object's members or an array's elements gives encoding/json's keys
// and values in order; Drop leaves JSON without the members dropped; and,
// on any text, a Lax walk that succeeds ends where Lax.Skip ends.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"e\"\\\u00e9"}}`,
		` [1, -2.5e+3, 0.1E2, "x", {}, []] `,
		`{"metadata":{"managedFields":[{"manager":"m"}],"name":"a"},"spec":{}}`,
		`{"st\u0061tus":{},"status":01}`,
		`"\ud83d\ude00 é"`, `tru"e`, `[a"b, 1]`, `{"a":1]`, `01`, `-`, `1.`, `"\u12"`, "\"\x01\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		start := Space(b, 0)
		strict := Mode{Strict: true}
		end, err := strict.Skip(b, start)
		valid := err == nil && Space(b, end) == len(b)
		if bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) <= 10000 && valid != json.Valid(b) {
			t.Fatalf("%q: Strict says valid %v (%v), json.Valid %v", b, valid, err, !valid)
		}
		lend, lerr := Lax.Skip(b, start)
		steps, stepped := stepEnd(b[min(start, len(b)):])
		if lerr == nil && (!stepped || start+steps != lend) || lerr != nil && stepped && start < len(b) {
			t.Fatalf("%q: Skip %d %v, Step %d %v", b, lend, lerr, start+steps, stepped)
		}
		if lerr == nil {
			var e Extent
			for k := start; k < lend; k++ {
				if e.Step(b[k])&Done != 0 && k+1 < lend {
					t.Fatalf("%q: done at %d, before %d", b, k, lend)
				}
			}
		}
		if start < len(b) {
			var walked int
			var werr error
			switch b[start] {
			case '{':
				walked, werr = Lax.Object(b, start, func(Member) error { return nil })
			case '[':
				walked, werr = Lax.Array(b, start, func(int, int) error { return nil })
			default:
				werr = errors.New("no walk")
			}
			if werr == nil && (lerr != nil || walked != lend) {
				t.Fatalf("%q: a Lax walk ends at %d, Lax.Skip at %d (%v)", b, walked, lend, lerr)
			}
		}
		if !valid {
			return
		}
		if lerr != nil || lend != end {
			t.Fatalf("%q: Lax.Skip %d %v, Strict.Skip %d", b, lend, lerr, end)
		}
		if want := len(bytes.TrimRight(b, " \t\r\n")); end != want {
			t.Fatalf("%q: Skip ends at %d, the value at %d", b, end, want)
		}
		for _, m := range []Mode{Lax, strict} {
			checkWalk(t, m, b, start)
		}
		if b[start] == '{' {
			checkDrop(t, b, start)
		}
	})
}

// stepEnd is where Step a byte at a time ends the value at the start of b.
func stepEnd(b []byte) (int, bool) {
	var e Extent
	for i, c := range b {
		f := e.Step(c)
		switch {
		case f&Bad != 0:
			return i, false
		case f&Before != 0:
			return i, true
		case f&Done != 0:
			return i + 1, true
		}
	}
	return len(b), e.End() == nil && len(b) > 0
}

// checkWalk compares the walk of the value at b[start] with encoding/json's
// tokens of it.
func checkWalk(t *testing.T, m Mode, b []byte, start int) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b[start:]))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	switch tok {
	case json.Delim('{'):
		_, err = m.Object(b, start, func(mb Member) error {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			name, err := mb.Name()
			if err != nil || name != k.(string) {
				t.Fatalf("%q: key %q (%v), encoding/json %q", b, name, err, k)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			if got := b[mb.Value:mb.End]; !bytes.Equal(got, raw) {
				t.Fatalf("%q: value %q, encoding/json %q", b, got, raw)
			}
			return nil
		})
	case json.Delim('['):
		_, err = m.Array(b, start, func(s, e int) error {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			if got := b[s:e]; !bytes.Equal(got, raw) {
				t.Fatalf("%q: element %q, encoding/json %q", b, got, raw)
			}
			return nil
		})
	default:
		return
	}
	if err != nil {
		t.Fatalf("%q: %+v walk: %v", b, m, err)
	}
	if _, err := dec.Token(); err != nil || dec.More() {
		t.Fatalf("%q: encoding/json has more: %v", b, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("%q: encoding/json has more: %v", b, err)
	}
}

// checkDrop drops the members named as the first one is from the object
// at b[start]: what is left is JSON, the object without them.
func checkDrop(t *testing.T, b []byte, start int) {
	t.Helper()
	var first string
	spans, _, err := Lax.Drop(b, start, func(m Member) bool {
		name, _ := m.Name()
		if first == "" && m.Start == start+1 {
			first = name
		}
		return name == first
	})
	if err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	out := Cut(bytes.Clone(b), spans)
	var want, got map[string]json.RawMessage
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	delete(want, first)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%q dropped %q: %q: %v", b, first, out, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%q dropped %q: %q", b, first, out)
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("%q dropped %q: %q", b, first, out)
		}
	}
}
