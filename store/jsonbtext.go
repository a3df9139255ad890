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
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errJSONBUnsure // more than one value
	}
	out := make([]byte, 0, len(b)+len(b)/8)
	return v.append(out), nil
}

// jsonbNode is a parsed JSON value: a scalar's printed text, or an
// object's members (sorted as jsonb stores them) or an array's elements.
type jsonbNode struct {
	text    []byte // a scalar, printed
	object  bool
	array   bool
	keys    []string
	members []jsonbNode
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

func (p *jsonbParser) value() (jsonbNode, error) {
	dec := p.dec
	tok, err := dec.Token()
	if err != nil {
		return jsonbNode{}, errJSONBUnsure
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			n := jsonbNode{array: true}
			for dec.More() {
				m, err := p.value()
				if err != nil {
					return n, err
				}
				n.members = append(n.members, m)
			}
			if _, err := dec.Token(); err != nil {
				return n, errJSONBUnsure
			}
			return n, nil
		case '{':
			n := jsonbNode{object: true}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return n, errJSONBUnsure
				}
				key, ok := k.(string)
				if !ok || !p.safe(key) {
					return n, errJSONBUnsure
				}
				m, err := p.value()
				if err != nil {
					return n, err
				}
				n.keys, n.members = append(n.keys, key), append(n.members, m)
			}
			if _, err := dec.Token(); err != nil {
				return n, errJSONBUnsure
			}
			return n, n.sort()
		}
		return jsonbNode{}, errJSONBUnsure
	case string:
		if !p.safe(t) {
			return jsonbNode{}, errJSONBUnsure
		}
		return jsonbNode{text: appendEscaped(nil, t)}, nil
	case json.Number:
		if !plainInteger(string(t)) {
			return jsonbNode{}, errJSONBUnsure
		}
		return jsonbNode{text: []byte(t)}, nil
	case bool:
		if t {
			return jsonbNode{text: []byte("true")}, nil
		}
		return jsonbNode{text: []byte("false")}, nil
	case nil:
		return jsonbNode{text: []byte("null")}, nil
	}
	return jsonbNode{}, errJSONBUnsure
}

// sort orders an object's members as jsonb does: by the key's length in
// bytes, then bytewise; a key twice (jsonb keeps the last) is unsure.
func (n *jsonbNode) sort() error {
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ka, kb := n.keys[a], n.keys[b]
		if len(ka) != len(kb) {
			return len(ka) - len(kb)
		}
		return strings.Compare(ka, kb)
	})
	keys := make([]string, len(idx))
	members := make([]jsonbNode, len(idx))
	for i, j := range idx {
		keys[i], members[i] = n.keys[j], n.members[j]
		if i > 0 && keys[i] == keys[i-1] {
			return errJSONBUnsure
		}
	}
	n.keys, n.members = keys, members
	return nil
}

func (n *jsonbNode) append(b []byte) []byte {
	switch {
	case n.object:
		b = append(b, '{')
		for i := range n.keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendEscaped(b, n.keys[i])
			b = append(b, ": "...)
			b = n.members[i].append(b)
		}
		return append(b, '}')
	case n.array:
		b = append(b, '[')
		for i := range n.members {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = n.members[i].append(b)
		}
		return append(b, ']')
	}
	return append(b, n.text...)
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
