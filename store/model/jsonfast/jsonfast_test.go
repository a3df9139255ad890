package jsonfast

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// hostile are inputs a caller controls: a user writes the values of an
// object, and the apiserver sends what it was sent. Each is decoded whole,
// and as the value of a field.
var hostile = []string{
	`{"name":"a","uid":"u"}`,
	`{"name":"a\u0000b","uid":"\ud800","ns":"\ud83d\ude00"}`, // NUL escape, lone and paired surrogates
	`{"name":"\u202eevil\u2066","uid":"\u00a0\u200b"}`,       // bidi overrides, no-break and zero-width spaces
	`{"name":"a\"b\\c\/d\b\f\n\r\t"}`,
	"{\"name\":\"a\x01b\"}",                          // a raw control character
	"{\"name\":\"a\x7fb\"}",                          // DEL may stand raw
	"{\"name\":\"a\xffb\",\"uid\":\"\xed\xa0\x80\"}", // invalid UTF-8, an encoded surrogate
	"{\"data\":{\"k\":\"\xc3\"},\"name\":\"a\"}",     // invalid UTF-8 in a value kept raw
	`{"name":"a","name":"b"}`,                        // duplicate keys: the last wins
	`{"NAME":"a","Uid":"u","uid":"v"}`,               // names match case-insensitively
	`{"name":"ſ"}`,                                   // and not by Unicode folding of key names
	`{"count":99999999999999999999}`,                 // over int64
	`{"count":-9223372036854775808}`,
	`{"count":1e3}`, `{"count":1.5}`, `{"count":"5"}`, `{"count":-0}`, `{"count":01}`,
	`{"num":1e400}`, `{"num":123456789012345678901234567890}`, `{"num":0.1}`, `{"num":-1e-400}`,
	`{"list":[1,"a",null,true,{"x":[]}],"data":{"a":{"b":{"c":[1]}}}}`,
	`{"list":null,"data":null,"name":null,"count":null}`,
	`{"list":[1,2,],"name":"a"}`, `{"data":{"k":tru},"name":"a"}`, `{"data":{"a":1,},"name":"a"}`,
	`{"name":"a"} trailing`, `{"name":"a"}  ` + "\n\t", ` {"name":"a"}`,
	`{"name":"a"`, `{"name":'a'}`, `{name:"a"}`, `{"name":"a\x"}`, `{"name":"\u12"}`,
	`[]`, `null`, `""`, `0`, ``, `{}`, `{"name":5}`, `{"list":{}}`,
	`{"data":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}`,
	`{"data":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	"\xef\xbb\xbf{\"name\":\"a\"}", // a byte order mark
	`{"num":1.}`, `{"num":.5}`, `{"num":-}`, `{"num":1e}`, `{"num":1e+}`, `{"num":+1}`, `{"num":0x10}`,
	`{"num":NaN}`, `{"num":Infinity}`, `{"num":-01}`, `{"num":1E5}`, `{"num":-0.0e-0}`,
	`{"num":nul}`, `{"num":tru}`, `{"num":falsey}`, `{"num":True}`, `{"num":[,]}`, `{"num":[1 2]}`,
	`{"name":"\uD800\u"}`, `{"name":"\uDG00"}`, `{"name":"\U0041"}`, `{"name":"\'"}`, `{"name":"\`, `{"name":"a\\"}`,
	`{"":"\0","":"00","00":"000000000000"}`, `{"other":"\0","name":"a"}`, `{"other":{"k":["\x41"]},"name":"a"}`,
	`{"data":{"":"\0"},"name":"a"}`, `{"data":["\x41"],"name":"a"}`, `{"data":"\u12","name":"a"}`, `{"x":"\\\x","name":"a"}`,
	`{"a":1 "b":2}`, `{"a":1,,"b":2}`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1}}`, `[1]]`, `]`, `{"a":[}`,
	"{\"name\":\"a\"}\x00", "{\"name\":\"a\"}\v", "{\"name\":\"a\"\x00}",
}

// meta is the shape the model reads of an object: strings, a number,
// values kept raw.
type meta struct {
	Name  string            `json:"name"`
	UID   string            `json:"uid"`
	NS    string            `json:"ns"`
	Count *int64            `json:"count"`
	Num   any               `json:"num"`
	List  []json.RawMessage `json:"list"`
	Data  json.RawMessage   `json:"data"`
}

// TestPathsAgree runs the same inputs through the Sonic path and the
// encoding/json one and compares what they decode: Valid and Unmarshal
// agree on everything; DecodeInPlace differs only as its comment says.
func TestPathsAgree(t *testing.T) {
	t.Logf("sonic runs natively here: %v", Native)
	for _, in := range hostile {
		data := []byte(in)
		if s, j := Sonic.Valid(bytes.Clone(data)), Std.Valid(data); s != j || j != json.Valid(data) {
			t.Errorf("Valid(%.80q): sonic %v, encoding/json %v", in, s, j)
		}
		for _, into := range []func() any{func() any { return new(meta) }, func() any { return new(any) }} {
			s, j := into(), into()
			serr, jerr := Sonic.Unmarshal(bytes.Clone(data), s), Std.Unmarshal(bytes.Clone(data), j)
			if (serr == nil) != (jerr == nil) {
				t.Errorf("Unmarshal(%.80q) into %T: sonic error %v, encoding/json error %v", in, s, serr, jerr)
			} else if serr == nil && !reflect.DeepEqual(j, s) {
				t.Errorf("Unmarshal(%.80q) into %T (-encoding/json +sonic):\n%s", in, s, cmp.Diff(j, s))
			}
		}
	}
}

// envelope is the shape the webhook decodes in place: strings, a map, and
// objects kept as slices of the body.
type envelope struct {
	Kind        string            `json:"kind"`
	Name        string            `json:"name"`
	Groups      []string          `json:"groups"`
	Annotations map[string]string `json:"annotations"`
	Code        int32             `json:"code"`
	Object      raw               `json:"object"`
}

type raw []byte

func (r *raw) UnmarshalJSON(b []byte) error { *r = b; return nil }

func TestDecodeInPlacePathsAgree(t *testing.T) {
	for _, tt := range []struct {
		body string
		// malformedObject: Sonic takes the body, skipping the object
		// unvalidated; encoding/json refuses it.
		malformedObject bool
		// invalidUTF8: Sonic leaves it in the strings; encoding/json
		// replaces each invalid byte with U+FFFD.
		invalidUTF8 bool
	}{
		{body: `{"kind":"EventList","name":"a","groups":["x","y"],"annotations":{"k":"v"},"code":201,"object":{"a":[1,{"b":null}]}}`},
		{body: `{"kind":"EventList","name":"\u202e\u0000\ud800","annotations":{"\u0000":"\ud83d\ude00"},"object":"\u0000"}`},
		{body: `{"kind":"EventList","name":"a","name":"b","annotations":{"k":"1","k":"2"}}`},
		{body: `{"kind":"Event\u004cist","name":"escaped probe"}`},
		{body: `{"KIND":"EventList","Name":"a","CODE":200}`},
		{body: `{"kind":"EventList","code":4294967297}`},
		{body: `{"kind":"EventList","code":-1}`},
		{body: `{"kind":"EventList","code":1.0}`},
		{body: `{"kind":"EventList","code":"201"}`},
		{body: `{"kind":"EventList","object":null}`},
		{body: `{"kind":"EventList","object":{"a":}}`, malformedObject: true},
		{body: `{"kind":"EventList","object":{"a":1,}}`, malformedObject: true},
		{body: `{"kind":"EventList","object":[tru]}`, malformedObject: true},
		{body: "{\"kind\":\"EventList\",\"object\":{\"a\":\"\x01\"}}", malformedObject: true},
		{body: "{\"kind\":\"EventList\",\"name\":\"\x01\"}"},
		{body: "{\"kind\":\"EventList\",\"name\":\"a\xffb\xfe\xfdc\",\"annotations\":{\"k\xc3\":\"\xed\xa0\x80\"}}", invalidUTF8: true},
		{body: "{\"kind\":\"EventList\",\"name\":\"a\",\"object\":{\"v\":\"\xff\"}}"}, // in the object: both keep it
		{body: "{\"kind\":\"Event\xffList\",\"name\":\"\xff\"}", invalidUTF8: true},
		{body: `{"kind":"EventList","groups":[1]}`},
		{body: `{"kind":"EventList"} {}`},
		{body: `{"kind":"EventList"`},
		{body: `{"kind":"` + strings.Repeat("x", 1<<16) + `","object":` + strings.Repeat(`[`, 3000) + strings.Repeat(`]`, 3000) + `}`},
	} {
		body := []byte(tt.body)
		var s, j envelope
		serr := Sonic.DecodeInPlace(bytes.Clone(body), &s, &s.Kind)
		jerr := Std.DecodeInPlace(bytes.Clone(body), &j, &j.Kind)
		if Native && tt.malformedObject {
			if serr != nil || jerr == nil {
				t.Errorf("%.80q: a malformed object: sonic error %v (want none), encoding/json error %v (want one)", tt.body, serr, jerr)
			}
			continue
		}
		if (serr == nil) != (jerr == nil) {
			t.Errorf("%.80q: sonic error %v, encoding/json error %v", tt.body, serr, jerr)
			continue
		}
		if serr != nil {
			continue
		}
		if Native && tt.invalidUTF8 {
			if utf8.ValidString(s.Name) {
				t.Errorf("%.80q: sonic replaced the invalid UTF-8 (%q): the store's sanitizer would not count it", tt.body, s.Name)
			}
			s.Kind, s.Name = perByte(s.Kind), perByte(s.Name)
			if s.Annotations != nil {
				fixed := map[string]string{}
				for k, v := range s.Annotations {
					fixed[perByte(k)] = perByte(v)
				}
				s.Annotations = fixed
			}
		}
		if d := cmp.Diff(j, s); d != "" {
			t.Errorf("%.80q (-encoding/json +sonic):\n%s", tt.body, d)
		}
	}
}

// TestDecodeInPlaceKeepsObjectsInTheBody: on both paths an object is a
// slice of the body, not a copy; on Sonic, so are the strings.
func TestDecodeInPlaceKeepsObjectsInTheBody(t *testing.T) {
	body := []byte(`{"kind":"EventList","name":"alice","object":{"kind":"ConfigMap"}}`)
	for name, p := range map[string]Path{"sonic": Sonic, "encoding/json": Std} {
		var e envelope
		if err := p.DecodeInPlace(body, &e, &e.Kind); err != nil {
			t.Fatal(err)
		}
		if string(e.Object) != `{"kind":"ConfigMap"}` || !within(&e.Object[0], body) {
			t.Errorf("%s: object %q copied out of the body", name, e.Object)
		}
		if name == "sonic" && Native && !within(unsafe.StringData(e.Name), body) {
			t.Errorf("%s: name copied out of the body", name)
		}
	}
}

func TestValidEscapes(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`: true, `{"a":"b"}`: true, `{"a":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"}`: true,
		`{"a":"\\x"}`: true, `{"a":"\\"}`: true, `{"a":"\\\\u"}`: true, `{"a":"\uABCD"}`: true,
		`{"a":"\x41"}`: false, `{"a":"\0"}`: false, `{"a":"\u12"}`: false, `{"a":"\uGHIJ"}`: false,
		`{"a":"\U0041"}`: false, `{"a":"\'"}`: false, `{"a":"\\\x"}`: false, `\`: false, `"\u00"`: false,
		`{"a":"\u00e"}`: false, `{"a":"b\`: false,
	} {
		if got := validEscapes([]byte(in)); got != want {
			t.Errorf("validEscapes(%s) = %v", in, got)
		}
	}
}

// TestUnmarshalCopies: nothing Unmarshal decodes shares the input's bytes
// (the model cuts a List's items in place).
func TestUnmarshalCopies(t *testing.T) {
	for name, p := range map[string]Path{"sonic": Sonic, "encoding/json": Std} {
		in := []byte(`{"name":"alice","list":[{"a":"b"}],"data":{"k":"v"}}`)
		var m meta
		if err := p.Unmarshal(in, &m); err != nil {
			t.Fatal(err)
		}
		for i := range in {
			in[i] = 'x'
		}
		if m.Name != "alice" || string(m.List[0]) != `{"a":"b"}` || string(m.Data) != `{"k":"v"}` {
			t.Errorf("%s: changed with its input: %q %q %q", name, m.Name, m.List, m.Data)
		}
	}
}

func TestUnmarshalKeepingInvalidUTF8(t *testing.T) {
	in := []byte("{\"name\":\"a\xffb\"}")
	var s, j envelope
	if err := Std.UnmarshalKeepingInvalidUTF8(in, &j); err != ErrCannotKeepInvalidUTF8 {
		t.Errorf("encoding/json: %v", err)
	}
	if err := Sonic.UnmarshalKeepingInvalidUTF8(in, &s); err != nil {
		t.Fatal(err)
	}
	if Native && s.Name != "a\xffb" {
		t.Errorf("sonic: %q", s.Name)
	}
}

// perByte replaces each invalid byte of s with U+FFFD, as encoding/json
// does.
func perByte(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			b.WriteString("\uFFFD")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FuzzPathsAgree checks Valid and Unmarshal on the Sonic path against
// encoding/json (the Std path), on any input.
func FuzzPathsAgree(f *testing.F) {
	for _, in := range hostile {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, j := Sonic.Valid(bytes.Clone(data)), json.Valid(data); s != j {
			t.Fatalf("Valid(%q): sonic %v, encoding/json %v", data, s, j)
		}
		for _, into := range []func() any{func() any { return new(meta) }, func() any { return new(any) }} {
			s, j := into(), into()
			serr, jerr := Sonic.Unmarshal(bytes.Clone(data), s), json.Unmarshal(data, j)
			if (serr == nil) != (jerr == nil) {
				t.Fatalf("Unmarshal(%q) into %T: sonic error %v, encoding/json error %v", data, s, serr, jerr)
			}
			if serr == nil && !reflect.DeepEqual(j, s) {
				t.Fatalf("Unmarshal(%q) into %T (-encoding/json +sonic):\n%s", data, s, cmp.Diff(j, s))
			}
		}
	})
}
