package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// errJSONBUnsure is jsonbText's answer for JSON whose jsonb text it cannot
// be sure of: the event's pending row then gets no digest, and the
// integrator reads the row back.
var errJSONBUnsure = errors.New("jsonb text not known")

// jsonbText returns the text PostgreSQL 15 prints for the jsonb value of
// the JSON text b (jsonb_out, what col::text gives), where it can be sure
// of it: objects as {"k": v, "k2": v2} with their keys sorted by length,
// then bytewise (jsonb's lengthCompareJsonbString), arrays as [a, b],
// strings escaped as escape_json does, true, false, null, and numbers
// only when they are plain integers (numeric prints those as they were
// written). Anything else it answers errJSONBUnsure: a fraction or an
// exponent (numeric's own printing), duplicate keys, invalid UTF-8, a NUL
// (which jsonb refuses), a U+FFFD where the text escapes a surrogate
// (encoding/json's stand-in for a lone one, which jsonb refuses), or input
// that is not one JSON value.
// TestJSONBText holds it to PostgreSQL's own output.
func jsonbText(b []byte) ([]byte, error) {
	if !utf8.Valid(b) {
		return nil, errJSONBUnsure
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	p := jsonbParser{dec: dec, surrogates: surrogateEscape.Match(b)}
	out, err := p.value(make([]byte, 0, len(b)+len(b)/8))
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errJSONBUnsure // more than one value
	}
	return out, nil
}

// jsonbParser reads a JSON value with encoding/json's tokens.
type jsonbParser struct {
	dec *json.Decoder
	// surrogates: the text has an escape of a UTF-16 surrogate, which
	// encoding/json decodes to U+FFFD when it is alone.
	surrogates bool
}

// surrogateEscape matches an escape of a UTF-16 surrogate (or text that
// looks like one after an escaped backslash: then jsonbText is only less
// often sure).
var surrogateEscape = regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)

// jsonbMember is an object's member: its key, and its value printed in
// the object's buffer from start to end.
type jsonbMember struct {
	key        string
	start, end int
}

// value appends the jsonb text of the next value to b.
func (p *jsonbParser) value(b []byte) ([]byte, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, errJSONBUnsure
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			b = append(b, '[')
			for first := true; p.dec.More(); first = false {
				if !first {
					b = append(b, ", "...)
				}
				if b, err = p.value(b); err != nil {
					return nil, err
				}
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, errJSONBUnsure
			}
			return append(b, ']'), nil
		case '{':
			return p.object(b)
		}
		return nil, errJSONBUnsure
	case string:
		if !p.safe(t) {
			return nil, errJSONBUnsure
		}
		return appendEscaped(b, t), nil
	case json.Number:
		if !plainInteger(string(t)) {
			return nil, errJSONBUnsure
		}
		return append(b, t...), nil
	case bool:
		if t {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case nil:
		return append(b, "null"...), nil
	}
	return nil, errJSONBUnsure
}

// object appends the jsonb text of an object whose '{' was read: its
// members sorted as jsonb stores them, by the key's length in bytes, then
// bytewise; a key twice (jsonb keeps the last) is unsure.
func (p *jsonbParser) object(b []byte) ([]byte, error) {
	var members []jsonbMember
	var values []byte
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return nil, errJSONBUnsure
		}
		key, ok := tok.(string)
		if !ok || !p.safe(key) {
			return nil, errJSONBUnsure
		}
		start := len(values)
		if values, err = p.value(values); err != nil {
			return nil, err
		}
		members = append(members, jsonbMember{key, start, len(values)})
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, errJSONBUnsure
	}
	slices.SortFunc(members, func(x, y jsonbMember) int {
		if len(x.key) != len(y.key) {
			return len(x.key) - len(y.key)
		}
		return strings.Compare(x.key, y.key)
	})
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key {
				return nil, errJSONBUnsure
			}
			b = append(b, ", "...)
		}
		b = appendEscaped(b, m.key)
		b = append(b, ": "...)
		b = append(b, values[m.start:m.end]...)
	}
	return append(b, '}'), nil
}

// safe reports whether a decoded string is stored by jsonb as it is: no
// NUL (refused), and no U+FFFD when the text escapes a surrogate (that
// U+FFFD may be encoding/json's of a lone surrogate, refused by jsonb).
func (p *jsonbParser) safe(s string) bool {
	return !strings.ContainsRune(s, 0) && !(p.surrogates && strings.ContainsRune(s, utf8.RuneError))
}

// plainInteger reports whether a JSON number is -?(0|[1-9][0-9]*), not
// "-0": numeric prints those digits as they are.
func plainInteger(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || d == "0" && len(s) != len(d) {
		return false
	}
	if len(d) > 1 && d[0] == '0' {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// appendEscaped appends s as PostgreSQL's escape_json quotes it: \" \\ \b
// \f \n \r \t, the other bytes below 0x20 as \u00XX (lowercase hex), every
// other byte as it is.
func appendEscaped(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
