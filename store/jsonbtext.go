package store

import (
	"bytes"
	"errors"
	"slices"
	"unicode/utf16"
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
	var p jsonbPrinter
	return p.appendText(nil, b)
}

// appendText appends jsonbText of b to out, with p's buffers (kept for the
// next text: the ingest prints two per event).
func (p *jsonbPrinter) appendText(out, b []byte) ([]byte, error) {
	if !utf8.Valid(b) {
		return nil, errJSONBUnsure
	}
	p.b, p.surrogates = b, hasSurrogateEscape(b)
	p.members, p.keys = p.members[:0], p.keys[:0]
	defer func() { p.b = nil }() // not kept past the call
	out, end, err := p.value(out, jsonscan.Space(b, 0), 0)
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
// JSON scanner (store/model/jsonscan). Its buffers are reused from one
// text to the next: it allocates nothing once they have grown.
type jsonbPrinter struct {
	b []byte
	// surrogates: the text has an escape of a UTF-16 surrogate, which
	// encoding/json decodes to U+FFFD when it is alone.
	surrogates bool
	// members is a stack of the members of the objects being printed,
	// those of an object above those of the objects around it.
	members []jsonbMember
	// keys holds the names decoded from an escaped key (a name without an
	// escape is its text), printed holds an object's members in the
	// order written while they are sorted, and str a string's decoding.
	keys, printed, str []byte
}

// jsonbMember is an object's member: its name (decoded), and the member
// printed ("name": value) in the output from start to end.
type jsonbMember struct {
	key        []byte
	start, end int
}

// hasSurrogateEscape reports whether b has an escape of a UTF-16
// surrogate, \u[dD][89abcdefABCDEF] (or text that looks like one after an
// escaped backslash: then jsonbText is only less often sure).
func hasSurrogateEscape(b []byte) bool {
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte(`\u`))
		if k < 0 {
			return false
		}
		i += k + 2
		if i+1 < len(b) && b[i]|0x20 == 'd' && (b[i+1] == '8' || b[i+1] == '9' || 'a' <= b[i+1]|0x20 && b[i+1]|0x20 <= 'f') {
			return true
		}
	}
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
		out, err = p.string(out, p.b[i+1:end-1])
		return out, end, err
	}
	end, err := strictJSON.Skip(p.b, i)
	if err != nil {
		return nil, end, errJSONBUnsure
	}
	switch lit := p.b[i:end]; {
	case string(lit) == "true" || string(lit) == "false" || string(lit) == "null" || plainInteger(lit):
		return append(out, lit...), end, nil
	}
	return nil, end, errJSONBUnsure // a fraction or an exponent
}

// string appends the jsonb text of the string whose text between the
// quotes is raw. Without an escape it is printed as it is written: valid
// JSON holds no byte below 0x20 unescaped, nor a quote or a backslash, so
// escape_json adds nothing.
func (p *jsonbPrinter) string(out, raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		if !p.safe(raw) {
			return nil, errJSONBUnsure
		}
		out = append(out, '"')
		out = append(out, raw...)
		return append(out, '"'), nil
	}
	p.str = appendUnquoted(p.str[:0], raw)
	if !p.safe(p.str) {
		return nil, errJSONBUnsure
	}
	return appendEscaped(out, p.str), nil
}

// object appends the jsonb text of the object that begins at p.b[i]: its
// members sorted as jsonb stores them, by the key's length in bytes, then
// bytewise; a key twice (jsonb keeps the last) is unsure. The members are
// printed in out in the order written, then moved into jsonb's.
func (p *jsonbPrinter) object(out []byte, i, depth int) ([]byte, int, error) {
	base, keys := len(p.members), len(p.keys)
	defer func() { p.members, p.keys = p.members[:base], p.keys[:keys] }()
	out = append(out, '{')
	from := len(out)
	end, err := strictJSON.Walk(p.b, i, func(m jsonscan.Member) (int, error) {
		key := m.Key // its text is its name, when it has no escape
		escaped := bytes.IndexByte(key, '\\') >= 0
		if escaped {
			k := len(p.keys)
			p.keys = appendUnquoted(p.keys, key)
			key = p.keys[k:len(p.keys):len(p.keys)]
		}
		if !p.safe(key) {
			return m.Value, errJSONBUnsure
		}
		start := len(out)
		if !escaped { // valid JSON: escape_json adds nothing (see string)
			out = append(out, '"')
			out = append(out, key...)
			out = append(out, '"')
		} else {
			out = appendEscaped(out, key)
		}
		out = append(out, ": "...)
		var end int
		var err error
		if out, end, err = p.value(out, m.Value, depth+1); err != nil {
			return end, err
		}
		p.members = append(p.members, jsonbMember{key, start, len(out)})
		return end, nil
	})
	if err != nil {
		return nil, end, errJSONBUnsure
	}
	members := p.members[base:]
	slices.SortFunc(members, func(x, y jsonbMember) int {
		if len(x.key) != len(y.key) {
			return len(x.key) - len(y.key)
		}
		return bytes.Compare(x.key, y.key)
	})
	p.printed = append(p.printed[:0], out[from:]...)
	out = out[:from]
	for k, m := range members {
		if k > 0 {
			if bytes.Equal(m.key, members[k-1].key) {
				return nil, end, errJSONBUnsure
			}
			out = append(out, ", "...)
		}
		out = append(out, p.printed[m.start-from:m.end-from]...)
	}
	return append(out, '}'), end, nil
}

// safe reports whether a decoded string is stored by jsonb as it is: no
// NUL (refused), and no U+FFFD when the text escapes a surrogate (that
// U+FFFD may be encoding/json's of a lone surrogate, refused by jsonb).
func (p *jsonbPrinter) safe(s []byte) bool {
	return bytes.IndexByte(s, 0) < 0 && !(p.surrogates && bytes.Contains(s, []byte("\uFFFD")))
}

// appendUnquoted appends the string whose text between the quotes is raw,
// its escapes decoded as encoding/json decodes them (jsonscan.Member.Name):
// a UTF-16 surrogate pair as its rune, a surrogate alone as U+FFFD. raw is
// a string's text that a strict scan took, in a text of valid UTF-8: only
// JSON's escapes, no control character. TestAppendUnquoted holds it to
// encoding/json.
func appendUnquoted(out, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			k := bytes.IndexByte(raw[i:], '\\')
			if k < 0 {
				return append(out, raw[i:]...)
			}
			out = append(out, raw[i:i+k]...)
			i += k
			continue
		}
		if i+1 >= len(raw) {
			return append(out, raw[i:]...) // not taken by a strict scan
		}
		switch e := raw[i+1]; e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if r2 := rune(-1); len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 = hex4(raw[i+2:])
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // " \\ or /
			out = append(out, e)
		}
		i += 2
	}
	return out
}

// hex4 is the rune of the four hex digits that begin b (a strict scan
// took them), or -1 (U+FFFD when appended) if they are not.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c|0x20 && c|0x20 <= 'f':
			c = c | 0x20 - 'a' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// plainInteger reports whether a JSON number is -?(0|[1-9][0-9]*), not
// "-0": numeric prints those digits as they are.
func plainInteger(s []byte) bool {
	d := bytes.TrimPrefix(s, []byte("-"))
	if len(d) == 0 || string(d) == "0" && len(s) != len(d) {
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
func appendEscaped(b []byte, s []byte) []byte {
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
