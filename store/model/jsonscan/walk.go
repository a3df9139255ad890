package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A Mode is how much a scan checks.
type Mode struct {
	// Strict: the text must be JSON as encoding/json takes it. Without
	// it, a scan finds only the extents (see Extent), and the structure
	// of the object or array it walks.
	Strict bool
	// MaxNest (Strict only): a value inside more than MaxNest objects and
	// arrays of the one scanned is refused (0: no limit).
	MaxNest int
}

// Lax finds the extents of values, however deep, and checks no more.
var Lax = Mode{}

// Skip returns the end of the value that begins at b[i].
func (m Mode) Skip(b []byte, i int) (int, error) { return m.skip(b, i, 0) }

// skip is Skip of a value inside depth objects and arrays of the one
// scanned.
func (m Mode) skip(b []byte, i int, depth int) (int, error) {
	if !m.Strict {
		return Skip(b, i)
	}
	return valid(b, i, m.allowed(depth))
}

// A Member is where one member of an object lies in the text.
type Member struct {
	// Start is just after the brace or the comma before the member.
	Start int
	// Key is its name's text between the quotes, escapes as written.
	Key []byte
	// Value and End are where its value begins and ends.
	Value, End int
}

// Escaped reports whether the member's name is written with an escape.
func (m Member) Escaped() bool { return bytes.IndexByte(m.Key, '\\') >= 0 }

// Name is the member's name as encoding/json decodes it: its escapes
// decoded, its bytes that are not UTF-8 replaced.
func (m Member) Name() (string, error) {
	if !m.Escaped() && utf8.Valid(m.Key) {
		return string(m.Key), nil
	}
	var s string
	err := json.Unmarshal(append(append([]byte{'"'}, m.Key...), '"'), &s)
	return s, err
}

// KeyIs reports whether the member's name, its escapes decoded, is name.
func (m Member) KeyIs(name string) bool {
	if !m.Escaped() {
		return string(m.Key) == name
	}
	s, err := m.Name()
	return err == nil && s == name
}

// Object walks the members of the object that begins at b[i], in order:
// each value is scanned (Skip) before member is called with where the
// member lies. It returns the end of the object, or the first error,
// member's included.
func (m Mode) Object(b []byte, i int, member func(Member) error) (int, error) {
	return m.Walk(b, i, func(mb Member) (int, error) {
		end, err := m.skip(b, mb.Value, 1)
		if err != nil {
			return end, err
		}
		mb.End = end
		return end, member(mb)
	})
}

// Walk is Object for a walk that goes into some values, in one pass:
// member is called before the value is scanned (End is 0), and returns
// its end, found by a walk of its own (Object, Array, Drop) or by Skip.
// (In a Strict walk, member checks the value as it sees fit.)
func (m Mode) Walk(b []byte, i int, member func(Member) (end int, err error)) (int, error) {
	if i >= len(b) || b[i] != '{' {
		return i, errorAt(i, "want an object")
	}
	start := i + 1
	if i = Space(b, start); i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errorAt(i, "want a member name")
		}
		end, err := m.name(b, i)
		if err != nil {
			return end, err
		}
		mb := Member{Start: start, Key: b[i+1 : end-1]}
		if i = Space(b, end); i >= len(b) || b[i] != ':' {
			return i, errorAt(i, "want :")
		}
		mb.Value = Space(b, i+1)
		if end, err = member(mb); err != nil {
			return end, err
		}
		if i = Space(b, end); i >= len(b) {
			return i, errUnexpectedEnd
		}
		switch b[i] {
		case ',':
			start = i + 1
			i = Space(b, start)
		case '}':
			return i + 1, nil
		default:
			return i, errorAt(i, "want , or }")
		}
	}
}

// name returns the end of the member name that begins at b[i].
func (m Mode) name(b []byte, i int) (int, error) {
	if m.Strict {
		return validString(b, i)
	}
	return Skip(b, i)
}

// Array walks the elements of the array that begins at b[i], in order:
// each is scanned (Skip) before elem is called with where it lies. It
// returns the end of the array, or the first error, elem's included.
func (m Mode) Array(b []byte, i int, elem func(start, end int) error) (int, error) {
	if i >= len(b) || b[i] != '[' {
		return i, errorAt(i, "want an array")
	}
	if i = Space(b, i+1); i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := m.skip(b, i, 1)
		if err != nil {
			return end, err
		}
		if err := elem(i, end); err != nil {
			return end, err
		}
		if i = Space(b, end); i >= len(b) {
			return i, errUnexpectedEnd
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, errorAt(i, "want , or ]")
		}
	}
}

// A Span is a part of a text, b[Start:End].
type Span struct{ Start, End int }

// Drop returns the spans to cut (Cut) from the text to remove, from the
// object that begins at b[i], the members for which drop is true, each
// with one comma beside it: what is left is the object without them, its
// other bytes as they were. It returns the object's end too, and no spans
// if it does not scan.
func (m Mode) Drop(b []byte, i int, drop func(Member) bool) ([]Span, int, error) {
	var cuts []Span
	kept := 0     // members left before the current one
	prevEnd := -1 // the end of the last member left, or of the last cut
	end, err := m.Object(b, i, func(mb Member) error {
		if !drop(mb) {
			kept++
			prevEnd = mb.End
			return nil
		}
		// Cut from the end of the member before (the comma before this
		// one with it) or, when none is left before it, from the brace to
		// the comma after it.
		start, end := mb.Start, mb.End
		if kept > 0 {
			start = prevEnd
		} else if j := Space(b, end); j < len(b) && b[j] == ',' {
			end = j + 1
		}
		if n := len(cuts); n > 0 && start < cuts[n-1].End {
			start = cuts[n-1].End
		}
		cuts = append(cuts, Span{start, end})
		prevEnd = end
		return nil
	})
	if err != nil {
		return nil, end, err
	}
	return cuts, end, nil
}

// Cut removes spans (in order, not overlapping) from b, in place: the
// bytes after each move left. It returns b shortened.
func Cut(b []byte, spans []Span) []byte {
	if len(spans) == 0 {
		return b
	}
	w := spans[0].Start
	for k, sp := range spans {
		next := len(b)
		if k+1 < len(spans) {
			next = spans[k+1].Start
		}
		w += copy(b[w:], b[sp.End:next])
	}
	return b[:w]
}
