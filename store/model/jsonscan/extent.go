package jsonscan

import (
	"bytes"
	"fmt"
)

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Space returns the index of the first byte of b at or after i that is not
// white space, or len(b).
func Space(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// endsScalar reports whether c ends a number or literal, without being part
// of it. A byte that opens a string or a nested value ends it too, so that
// the extent of an object or array found by depth alone (Extent) is the one
// a walk of its members (Mode.Object) finds, whenever that walk succeeds.
func endsScalar(c byte) bool {
	switch c {
	case ',', '}', ']', '{', '[', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// Flags say what one byte was to the value an Extent follows.
type Flags uint8

const (
	// Done: the value ended with this byte (or, with Before, before it).
	Done Flags = 1 << iota
	// Before: the value (a number or literal) ended before this byte,
	// which is not part of it.
	Before
	// Bad: no value begins with this byte (white space, a comma, a
	// closing brace or bracket).
	Bad
	// Open: the byte opens a string.
	Open
	// Text: the byte is a string's text, not one of its quotes.
	Text
	// Boundary: a string may be cut before this byte (Text or Close): it
	// begins a character, outside an escape.
	Boundary
	// Close: the byte closes a string.
	Close
)

// string states of an Extent
const (
	outside uint8 = iota
	inText
	inEscape // after a backslash
	inHex    // in the hex digits of a \u escape
)

// Extent finds where one JSON value ends in text given to it a byte (Step)
// or a piece (Feed) at a time: a string at its closing quote (a backslash
// escapes the byte after it), an object or array where as many braces and
// brackets outside strings closed as opened (whatever their kind), a
// number or literal before the byte that ends it (see endsScalar) or at the
// end of the text (End). It checks nothing else: the value it delimits may
// still not be JSON, which whoever decodes it finds. It knows the escapes
// of a string (\uXXXX included) only to say where a string may be cut.
// The zero Extent is ready for a value's first byte.
type Extent struct {
	depth   int   // objects and arrays open
	str     uint8 // where in a string
	hex     uint8 // hex digits left of a \u escape
	started bool
	scalar  bool
	done    bool
}

// Step takes the next byte of the value and says what it was. After Done
// (or Bad) the Extent takes nothing more.
func (e *Extent) Step(c byte) Flags {
	if e.str != outside {
		return e.stringByte(c)
	}
	if !e.started {
		e.started = true
		switch c {
		case '"':
			e.str = inText
			return Open
		case '{', '[':
			e.depth = 1
			return 0
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			e.done = true
			return Bad
		}
		e.scalar = true
		return 0
	}
	if e.scalar {
		if endsScalar(c) {
			e.done = true
			return Done | Before
		}
		return 0
	}
	switch c {
	case '"':
		e.str = inText
		return Open
	case '{', '[':
		e.depth++
	case '}', ']':
		if e.depth--; e.depth == 0 {
			e.done = true
			return Done
		}
	}
	return 0
}

func (e *Extent) stringByte(c byte) Flags {
	switch e.str {
	case inEscape:
		if c == 'u' {
			e.str, e.hex = inHex, 4
		} else {
			e.str = inText
		}
		return Text
	case inHex:
		if isHex(c) {
			if e.hex--; e.hex == 0 {
				e.str = inText
			}
			return Text
		}
		e.str = inText // the escape ended early (not JSON): c is read as text
	}
	switch c {
	case '"':
		e.str = outside
		if e.depth == 0 {
			e.done = true
			return Close | Boundary | Done
		}
		return Close | Boundary
	case '\\':
		e.str = inEscape
		return Text | Boundary
	}
	if c&0xC0 != 0x80 { // not a UTF-8 continuation byte
		return Text | Boundary
	}
	return Text
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Within is an Extent for the rest of a value in which depth objects or
// arrays are open, outside a string: what ends them.
func Within(depth int) Extent { return Extent{depth: depth, started: true} }

// InString reports whether the Extent is inside a string.
func (e *Extent) InString() bool { return e.str != outside }

// Feed takes the next piece of the value: n bytes of b are part of it, and
// done says whether it ended there. It is Step on each byte (FuzzScan
// checks that they agree), faster: it steps over the bytes that change
// nothing (a string's plain text, what an object or array holds between
// its strings and brackets) and takes the others itself.
func (e *Extent) Feed(b []byte) (n int, done bool, err error) {
	for i := 0; i < len(b); {
		switch {
		case e.str == inText:
			i += textLen(b[i:])
			if i == len(b) {
				return len(b), false, nil
			}
			if b[i] == '\\' {
				e.str = inEscape
				i++
				continue
			}
			e.str = outside
			if i++; e.depth == 0 {
				e.done = true
				return i, true, nil
			}
		case e.depth > 0 && e.str == outside:
			for i < len(b) && !structural[b[i]] {
				i++
			}
			if i == len(b) {
				return len(b), false, nil
			}
			switch b[i] {
			case '"':
				e.str = inText
			case '{', '[':
				e.depth++
			default:
				if e.depth--; e.depth == 0 {
					e.done = true
					return i + 1, true, nil
				}
			}
			i++
		default:
			f := e.Step(b[i])
			switch {
			case f&Bad != 0:
				return i, true, fmt.Errorf("offset %d: want a value", i)
			case f&Before != 0:
				return i, true, nil
			case f&Done != 0:
				return i + 1, true, nil
			}
			i++
		}
	}
	return len(b), false, nil
}

// textLen is the length of the plain text at the start of b, up to a
// quote or a backslash. Most strings of an object are short (keys, names,
// values of labels and of managedFields): over their first shortText
// bytes a loop costs less than two calls of bytes.IndexByte (which were
// most of the cut of managedFields from a bench state, make bench).
func textLen(b []byte) int {
	n := min(len(b), shortText)
	for i, c := range b[:n] {
		if c == '"' || c == '\\' {
			return i
		}
	}
	rest := b[n:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		q = len(rest)
	}
	if k := bytes.IndexByte(rest[:q], '\\'); k >= 0 {
		return n + k
	}
	return n + q
}

// shortText is how far textLen looks byte by byte.
const shortText = 32

// structural are the bytes that change an Extent inside an object or
// array, outside its strings.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// End says whether the text may end where it did: after a whole value, or
// in a number or literal (which the end of the text ends).
func (e *Extent) End() error {
	if e.done || e.scalar {
		return nil
	}
	return errUnexpectedEnd
}

// Skip returns the end of the value that begins at b[i] (its extent, as
// Extent finds it: an object or array however deep, checked no further).
func Skip(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errUnexpectedEnd
	}
	if b[i] == '"' { // most values: a string without escapes
		if j := i + 1 + textLen(b[i+1:]); j < len(b) && b[j] == '"' {
			return j + 1, nil
		}
	}
	var e Extent
	n, done, err := e.Feed(b[i:])
	if err != nil {
		return i, fmt.Errorf("offset %d: want a value", i)
	}
	if !done {
		if err := e.End(); err != nil {
			return len(b), err
		}
	}
	return i + n, nil
}
