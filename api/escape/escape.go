package escape

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Hidden reports whether the character r must not reach a person's screen
// as itself (see the package comment). A byte that is not UTF-8 is hidden
// too; the functions below tell it from a valid U+FFFD, which is shown.
func Hidden(r rune) bool {
	if r == ' ' {
		return false
	}
	return !unicode.IsGraphic(r) || unicode.Is(unicode.Zs, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// appendRune writes r, decoded from the n bytes src, as itself or, if
// hidden, as a Go escape; layout keeps tab and newline as themselves.
func appendRune(b []byte, r rune, src string, layout bool) []byte {
	switch {
	case r == utf8.RuneError && len(src) == 1:
		return fmt.Appendf(b, `\x%02x`, src[0])
	case layout && (r == '\n' || r == '\t'), !Hidden(r):
		return append(b, src...)
	}
	q := strconv.QuoteRuneToASCII(r)
	return append(b, q[1:len(q)-1]...)
}

// clean reports whether s has no hidden character (tab and newline
// allowed when layout).
func clean(s string, layout bool) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if Hidden(r) && !(layout && (r == '\n' || r == '\t')) {
			return false
		}
	}
	return true
}

// each calls f with every rune of s and its bytes (one byte for an
// invalid one, decoded as utf8.RuneError).
func each(s string, f func(r rune, src string)) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		f(r, s[i:i+n])
		i += n
	}
}

// Line is s for one line of a terminal: every hidden character, tab and
// newline included, written as a Go escape, unquoted; the rest as is.
func Line(s string) string {
	if clean(s, false) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	each(s, func(r rune, src string) { b = appendRune(b, r, src, false) })
	return string(b)
}

// Text is Line for text laid out in lines (-o yaml, a template's output):
// tab and newline stay as they are.
func Text(out []byte) []byte {
	if clean(string(out), true) {
		return out
	}
	b := make([]byte, 0, len(out)+16)
	each(string(out), func(r rune, src string) { b = appendRune(b, r, src, true) })
	return b
}

// Quote is s for a table cell: as it is when no character is hidden, else
// a Go double-quoted string with the hidden characters escaped, which
// strconv.Unquote reads back as s.
func Quote(s string) string {
	if clean(s, false) {
		return s
	}
	return Quoted(s)
}

// Quoted is s always double-quoted, as Quote quotes it: for a recorded
// string inside a sentence (an error's message), where the quotes show
// where it begins and ends.
func Quoted(s string) string {
	b := make([]byte, 0, len(s)+18)
	b = append(b, '"')
	each(s, func(r rune, src string) {
		if r == '"' || r == '\\' {
			b = append(b, '\\', byte(r))
			return
		}
		b = appendRune(b, r, src, false)
	})
	return string(append(b, '"'))
}

// JSON writes every hidden non-ASCII character of a JSON text as a JSON \u
// escape (a surrogate pair beyond U+FFFF). Such characters occur only
// inside strings (JSON's structure is ASCII), where the escape is the same
// character; encoding/json has escaped the ASCII controls already. The
// text must be valid UTF-8, as encoding/json writes it.
func JSON(out []byte) []byte {
	var b []byte
	for i, r := range string(out) {
		if r < 0x7f || !Hidden(r) {
			if b != nil {
				b = utf8.AppendRune(b, r)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(out)+16), out[:i]...)
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
		} else {
			b = fmt.Appendf(b, `\u%04x`, r)
		}
	}
	if b == nil {
		return out
	}
	return b
}
