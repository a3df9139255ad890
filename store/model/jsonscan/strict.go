package jsonscan

import (
	"errors"
	"fmt"
	"math"
)

var errUnexpectedEnd = errors.New("unexpected end of JSON input")

func errorAt(i int, what string) error { return fmt.Errorf("offset %d: %s", i, what) }

// valid returns the end of the value at b[i], which must be JSON as
// encoding/json takes it, with no value inside more than allow objects and
// arrays of it (in turn: an empty object or array may stand where a value
// may). It keeps the open objects and arrays on a stack of its own, not on
// the goroutine's: the nesting costs a byte each.
func valid(b []byte, i int, allow int) (int, error) {
	var open []byte // '{' or '[' for each object or array open
	var err error
	for {
		// At a value.
		if len(open) > allow {
			return i, errorAt(i, "nested too deep")
		}
		if i >= len(b) {
			return i, errUnexpectedEnd
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			if i = Space(b, i+1); i < len(b) && b[i] == end {
				i++
				break
			}
			open = append(open, c)
			if c == '{' {
				if i, err = member(b, i); err != nil {
					return i, err
				}
			}
			continue
		case c == '"':
			if i, err = validString(b, i); err != nil {
				return i, err
			}
		case c == 't':
			i, err = literal(b, i, "true")
		case c == 'f':
			i, err = literal(b, i, "false")
		case c == 'n':
			i, err = literal(b, i, "null")
		case c == '-' || '0' <= c && c <= '9':
			i, err = number(b, i)
		default:
			return i, errorAt(i, "want a value")
		}
		if err != nil {
			return i, err
		}
		// After a value: a comma and the next, or the ends of the objects
		// and arrays it closes.
	after:
		for {
			if len(open) == 0 {
				return i, nil
			}
			if i = Space(b, i); i >= len(b) {
				return i, errUnexpectedEnd
			}
			top := open[len(open)-1]
			switch c := b[i]; {
			case c == ',':
				if i = Space(b, i+1); top == '{' {
					if i, err = member(b, i); err != nil {
						return i, err
					}
				}
				break after
			case top == '{' && c == '}', top == '[' && c == ']':
				i++
				open = open[:len(open)-1]
			default:
				return i, errorAt(i, "want , or the end of the object or array")
			}
		}
	}
}

// member reads a member's name and colon at b[i], and returns where its
// value begins.
func member(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, errorAt(i, "want a member name")
	}
	i, err := validString(b, i)
	if err != nil {
		return i, err
	}
	if i = Space(b, i); i >= len(b) || b[i] != ':' {
		return i, errorAt(i, "want :")
	}
	return Space(b, i+1), nil
}

// validString returns the end of the string that begins at b[i]: no control
// character, only JSON's escapes. (encoding/json takes any other byte, UTF-8
// or not.)
func validString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c < 0x20:
			return i, errorAt(i, "control character in a string")
		case c == '\\':
			if i++; i >= len(b) {
				return i, errUnexpectedEnd
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 0; k < 4; k++ {
					if i++; i >= len(b) {
						return i, errUnexpectedEnd
					}
					if !isHex(b[i]) {
						return i, errorAt(i, "bad \\u escape")
					}
				}
			default:
				return i, errorAt(i, "bad escape")
			}
		}
	}
	return i, errUnexpectedEnd
}

func literal(b []byte, i int, word string) (int, error) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, errorAt(i, "want "+word)
	}
	return i + len(word), nil
}

// number returns the end of -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// at b[i].
func number(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, errorAt(i, "want a digit")
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, errorAt(j, "want a digit")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, errorAt(j, "want a digit")
		}
		i = j
	}
	return i, nil
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// allowed is the nesting a Mode allows a value inside depth of the value
// it scans.
func (m Mode) allowed(depth int) int {
	if m.MaxNest <= 0 {
		return math.MaxInt
	}
	return m.MaxNest - depth
}
