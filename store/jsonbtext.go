package store

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/options-record/options-record/store/model/jsonscan"
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
	p := jsonbPrinter{b: b, surrogates: surrogateEscape.Match(b)}
	out, end, err := p.value(make([]byte, 0, len(b)+len(b)/8), jsonscan.Space(b, 0), 0)
	if err != nil || jsonscan.Space(b, end) != len(b) {
		return nil, errJSONBUnsure // not JSON, or more than one value
	}
	return out, nil
}

// strictJSON is how jsonbText scans: JSON as encoding/json takes it.
var strictJSON = jsonscan.Mode{Strict: true, MaxNest: jsonbMaxNest}

// jsonbMaxNest bounds the nesting jsonbText prints (deeper is unsure, and
// read back): each level is scanned again by the one around it, so the
// time would grow with the square of the depth. The values it prints (a
// user's extra, annotations) are one or two levels deep.
const jsonbMaxNest = 32

// jsonbPrinter prints a JSON text as jsonb text, walking it with the one
// JSON scanner (store/model/jsonscan).
type jsonbPrinter struct {
	b []byte
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

// value appends the jsonb text of the value that begins at p.b[i], inside
// depth objects and arrays, to out, and returns where the value ends.
func (p *jsonbPrinter) value(out []byte, i, depth int) ([]byte, int, error) {
	if i >= len(p.b) || depth > jsonbMaxNest {
		return nil, i, errJSONBUnsure
	}
	switch p.b[i] {
	case '{':
		return p.object(out, i, depth)
	case '[':
		out = append(out, '[')
		n := 0
		end, err := strictJSON.Array(p.b, i, func(start, _ int) error {
			if n++; n > 1 {
				out = append(out, ", "...)
			}
			var err error
			out, _, err = p.value(out, start, depth+1)
			return err
		})
		if err != nil {
			return nil, end, errJSONBUnsure
		}
		return append(out, ']'), end, nil
	case '"':
		end, err := strictJSON.Skip(p.b, i)
		if err != nil {
			return nil, end, errJSONBUnsure
		}
		out, err = p.str(out, p.b[i+1:end-1])
		return out, end, err
	}
	end, err := strictJSON.Skip(p.b, i)
	if err != nil {
		return nil, end, errJSONBUnsure
	}
	switch lit := string(p.b[i:end]); {
	case lit == "true" || lit == "false" || lit == "null" || plainInteger(lit):
		return append(out, lit...), end, nil
	}
	return nil, end, errJSONBUnsure // a fraction or an exponent
}

// str appends the jsonb text of the string whose text between the quotes
// is raw. Without an escape it is printed as it is written: valid JSON
// holds no byte below 0x20 unescaped, nor a quote or a backslash, so
// escape_json adds nothing.
func (p *jsonbPrinter) str(out, raw []byte) ([]byte, error) {
	s, err := jsonscan.Member{Key: raw}.Name()
	if err != nil || !p.safe(s) {
		return nil, errJSONBUnsure
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		out = append(out, '"')
		out = append(out, raw...)
		return append(out, '"'), nil
	}
	return appendEscaped(out, s), nil
}

// object appends the jsonb text of the object that begins at p.b[i]: its
// members sorted as jsonb stores them, by the key's length in bytes, then
// bytewise; a key twice (jsonb keeps the last) is unsure.
func (p *jsonbPrinter) object(out []byte, i, depth int) ([]byte, int, error) {
	var members []jsonbMember
	var values []byte
	end, err := strictJSON.Walk(p.b, i, func(m jsonscan.Member) (int, error) {
		key, err := m.Name()
		if err != nil || !p.safe(key) {
			return m.Value, errJSONBUnsure
		}
		start := len(values)
		var end int
		if values, end, err = p.value(values, m.Value, depth+1); err != nil {
			return end, err
		}
		members = append(members, jsonbMember{key, start, len(values)})
		return end, nil
	})
	if err != nil {
		return nil, end, errJSONBUnsure
	}
	slices.SortFunc(members, func(x, y jsonbMember) int {
		if len(x.key) != len(y.key) {
			return len(x.key) - len(y.key)
		}
		return strings.Compare(x.key, y.key)
	})
	out = append(out, '{')
	for k, m := range members {
		if k > 0 {
			if m.key == members[k-1].key {
				return nil, end, errJSONBUnsure
			}
			out = append(out, ", "...)
		}
		out = appendEscaped(out, m.key)
		out = append(out, ": "...)
		out = append(out, values[m.start:m.end]...)
	}
	return append(out, '}'), end, nil
}

// safe reports whether a decoded string is stored by jsonb as it is: no
// NUL (refused), and no U+FFFD when the text escapes a surrogate (that
// U+FFFD may be encoding/json's of a lone surrogate, refused by jsonb).
func (p *jsonbPrinter) safe(s string) bool {
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
