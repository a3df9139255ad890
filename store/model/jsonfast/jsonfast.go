// Package jsonfast is the one place that decodes JSON with
// github.com/bytedance/sonic: the hot path of the ingest, where the webhook
// decodes every EventList's envelope (auditsink) and the model reads the
// metadata of every kept response object (store/model). Everything else
// decodes with encoding/json (docs/development.md, "JSON").
//
// A kept object is checked with Valid, not sonic.Valid, which takes
// truncated literals ("tr"), malformed escapes and raw control characters,
// all of which PostgreSQL's json refuses.
//
// sonic runs natively only on amd64 and arm64 with the Go versions it
// knows; elsewhere its API is encoding/json behind a copy of the input, and
// its options (skipping without validating, strings left in the body) do
// nothing. So each operation has two paths: Sonic, and Std, which calls
// encoding/json itself. Default is Sonic where sonic runs natively, else
// Std. Both give the same results on the same input, except where a method
// says otherwise; TestPathsAgree runs the same cases through both.
//
// It does no I/O and imports nothing of the module.
package jsonfast

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"unicode/utf8"
	"unsafe"

	"github.com/bytedance/sonic"
)

// Native says whether sonic runs natively on this platform.
const Native = sonic.APIKind == sonic.UseSonicJSON

// A Path is one implementation of the operations: Sonic or Std.
type Path struct{ sonic bool }

var (
	// Sonic decodes with sonic (with encoding/json where sonic would
	// differ from it).
	Sonic = Path{sonic: true}
	// Std decodes with encoding/json only.
	Std = Path{}
	// Default is Sonic where sonic runs natively, else Std.
	Default = Path{sonic: Native}
)

// ErrCannotKeepInvalidUTF8 is returned by UnmarshalKeepingInvalidUTF8 on
// the Std path: encoding/json replaces invalid UTF-8 without a word.
var ErrCannotKeepInvalidUTF8 = errors.New("encoding/json cannot keep invalid UTF-8")

var (
	// strict decodes as encoding/json does: a raw control character in a
	// string is refused, invalid UTF-8 replaced by U+FFFD, and nothing
	// decoded shares the input's bytes (CopyString).
	strict = sonic.Config{ValidateString: true, CopyString: true}.Froze()
	// inPlace skips the values it does not decode without validating them
	// (NoValidateJSONSkip): a json.Unmarshaler gets a slice of the input.
	// Strings are not copied (CopyString off) but are checked
	// (ValidateString): a raw control character is refused.
	// ValidateString replaces invalid UTF-8 in a copy of the whole input
	// before decoding it, so inPlaceKeep decodes such an input again.
	inPlace = sonic.Config{NoValidateJSONSkip: true, ValidateString: true}.Froze()
	// inPlaceKeep is inPlace without the string check: invalid UTF-8 and
	// raw control characters are left as they are.
	inPlaceKeep = sonic.Config{NoValidateJSONSkip: true}.Froze()
)

// Unmarshal decodes data into v as encoding/json.Unmarshal does, and
// refuses what it refuses. sonic differs from it in three ways, and such an
// input is decoded by encoding/json on both paths: it replaces invalid
// UTF-8 in a copy of the whole input, in the values v keeps raw too
// (json.RawMessage), where encoding/json leaves them for the store's
// sanitizer to replace and count; it refuses more than 4,096 levels of
// nesting, where encoding/json takes 10,000; and it takes malformed escapes
// (\0, \x41) in the values it skips, so the escapes of what it took are
// checked (validEscapes). As with encoding/json, nothing decoded shares
// data's bytes.
func (p Path) Unmarshal(data []byte, v any) error {
	if p.sonic && utf8.Valid(data) {
		str := unsafe.String(unsafe.SliceData(data), len(data))
		if strict.UnmarshalFromString(str, v) == nil && validEscapes(data) {
			return nil
		}
	}
	return json.Unmarshal(data, v)
}

// Valid reports whether data is JSON as encoding/json.Valid says. On the
// Sonic path it is checked by sonic's validating skip (decoding into an
// empty struct) and validEscapes, as Unmarshal checks what it takes; an
// input with invalid UTF-8, or one sonic refuses, is judged by
// encoding/json itself, so the paths never disagree (TestPathsAgree,
// FuzzPathsAgree). On a 3.8 KB object it is about ten times faster than
// encoding/json.Valid. (sonic.Valid is not used: it takes truncated
// literals, malformed escapes and raw control characters.)
func (p Path) Valid(data []byte) bool {
	if p.sonic && utf8.Valid(data) {
		var skip struct{}
		str := unsafe.String(unsafe.SliceData(data), len(data))
		if strict.UnmarshalFromString(str, &skip) == nil && validEscapes(data) {
			return true
		}
	}
	return json.Valid(data)
}

// validEscapes reports whether every escape of data, JSON that sonic took
// (so a backslash is in a string), is one JSON has: \" \\ \/ \b \f \n \r
// \t, or \u and four hex digits. It jumps from backslash to backslash, so
// it costs little on a text without any.
func validEscapes(data []byte) bool {
	for i := bytes.IndexByte(data, '\\'); i >= 0; {
		if i+1 >= len(data) {
			return false
		}
		switch data[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
				return false
			}
			i += 6
		default:
			return false
		}
		j := bytes.IndexByte(data[i:], '\\')
		if j < 0 {
			break
		}
		i += j
	}
	return true
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// DecodeInPlace decodes body into v, a pointer, in one pass, for the
// webhook's envelope: a value that a json.Unmarshaler field of v takes is
// a slice of body, and the strings of v may be too, so body must not change
// while anything decoded from it is in use. probe is a string field of v
// that a decoded body sets (an EventList's kind): if it does not point into
// body, the Sonic path decoded a copy, most likely one with invalid UTF-8
// replaced, and decodes body again leaving it in place.
//
// The paths differ in three ways (TestDecodeInPlacePathsAgree, and
// auditsink's TestWirePathsAgree):
//   - Sonic skips the values it does not decode without validating them
//     (a kept object is checked with encoding/json before it is stored); Std
//     refuses a body with a malformed object.
//   - Sonic leaves invalid UTF-8 in the strings, for the store's sanitizer
//     to replace (a run by one U+FFFD) and count; Std replaces each invalid
//     byte with U+FFFD itself, uncounted.
//   - Std copies the strings.
func (p Path) DecodeInPlace(body []byte, v any, probe *string) error {
	if !p.sonic {
		return json.Unmarshal(body, v)
	}
	str := unsafe.String(unsafe.SliceData(body), len(body))
	if err := inPlace.UnmarshalFromString(str, v); err != nil {
		return err
	}
	if len(*probe) == 0 || within(unsafe.StringData(*probe), body) {
		return nil
	}
	// Decoded from a copy (or the probe was written with escapes, which
	// costs a second decode and changes nothing).
	keep := reflect.New(reflect.TypeOf(v).Elem())
	if err := inPlaceKeep.UnmarshalFromString(str, keep.Interface()); err != nil {
		return nil // the first decode stands
	}
	reflect.ValueOf(v).Elem().Set(keep.Elem())
	return nil
}

// UnmarshalKeepingInvalidUTF8 decodes data (one event of a body that
// DecodeInPlace refused) into v leaving invalid UTF-8 in its strings, for
// the store's sanitizer to replace and count. data need not stay
// unchanged. The Std path cannot: it returns ErrCannotKeepInvalidUTF8.
func (p Path) UnmarshalKeepingInvalidUTF8(data []byte, v any) error {
	if !p.sonic {
		return ErrCannotKeepInvalidUTF8
	}
	return inPlaceKeep.Unmarshal(data, v)
}

// Pretouch compiles sonic's decoder of t now rather than on first use
// (about 14 ms for an EventList). The Std path has nothing to compile.
func (p Path) Pretouch(t reflect.Type) error {
	if !p.sonic {
		return nil
	}
	return sonic.Pretouch(t)
}

// within tells whether p points into b.
func within(p *byte, b []byte) bool {
	if len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return uintptr(unsafe.Pointer(p))-start < uintptr(len(b))
}
