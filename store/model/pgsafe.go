package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The longest values kept in the indexed columns. A B-tree entry holds at
// most about 2.7 KB, and one longer value fails the whole batch (SQLSTATE
// 54000). Anyone can send one: a request for an object with a name of
// thousands of characters is refused by the apiserver, but audited, and the
// record keeps failed mutations. The caps leave every index entry under the
// limit; Kubernetes' own limits are lower (253 for names and namespaces).
const (
	maxKeyBytes  = 253  // API group, resource, namespace, uid
	maxNameBytes = 1024 // name, username
)

// PostgreSQL refuses NUL in text ("invalid byte sequence", SQLSTATE 22021),
// the \u0000 escape in jsonb (22P05) and invalid UTF-8 in either. Any user
// who can write an object can put them in an audit event, and one such value
// would fail the whole batch, other users' events included, until the
// apiserver gives up on it. pgSafe replaces them with U+FFFD instead,
// shortens values too long for an index entry, and reports whether it had
// to.
func (c *Converted) pgSafe() bool {
	changed := false
	str := func(s *string) { changed = safeString(s) || changed }
	strs := func(ss []string) {
		for i := range ss {
			str(&ss[i])
		}
	}
	js := func(b *[]byte) {
		if out, ok := safeJSON(*b); ok {
			*b = out
			changed = true
		}
	}
	long := func(s *string, max int) { changed = shortenTo(s, max) || changed }
	e := &c.Event
	for _, s := range []*string{&e.AuditID, &e.Stage, &e.Verb, &e.RequestURI, &e.Username, &e.UserUID,
		&e.ImpersonatedUser, &e.UserAgent, &e.APIGroup, &e.APIVersion, &e.Resource, &e.Subresource,
		&e.Namespace, &e.Name, &e.ObjectUID, &e.ResponseReason, &e.ResponseMessage} {
		str(s)
	}
	// Shortened after the replacements, which can make a value longer.
	for _, s := range []*string{&e.APIGroup, &e.Resource, &e.Namespace, &e.ObjectUID} {
		long(s, maxKeyBytes)
	}
	long(&e.Name, maxNameBytes)
	long(&e.Username, maxNameBytes)
	strs(e.UserGroups)
	strs(e.ImpersonatedGroups)
	strs(e.SourceIPs)
	js(&e.UserExtra)
	js(&e.RequestObject)
	js(&e.Annotations)
	for i := range c.Versions {
		changed = safeVersion(&c.Versions[i]) || changed
	}
	return changed
}

// PGSafe makes an admission observation storable as pgSafe makes an audit
// event: the request's names as the event's (so that the event that
// confirms it still names the same), its state as every version. It
// reports whether it had to change anything.
func (o *Observation) PGSafe() bool {
	changed := false
	for _, s := range []*string{&o.Cluster, &o.Source, &o.Operation, &o.APIGroup, &o.Resource, &o.Subresource, &o.Namespace, &o.Name} {
		changed = safeString(s) || changed
	}
	for _, s := range []*string{&o.APIGroup, &o.Resource, &o.Namespace} {
		changed = shortenTo(s, maxKeyBytes) || changed
	}
	changed = shortenTo(&o.Name, maxNameBytes) || changed
	return safeVersion(&o.Version) || changed
}

// safeVersion makes v's names and state storable (see pgSafe) and reports
// whether it had to change them.
func safeVersion(v *Version) bool {
	changed := false
	for _, s := range []*string{&v.UID, &v.Verb, &v.APIGroup, &v.APIVersion, &v.Kind, &v.Resource,
		&v.Subresource, &v.Namespace, &v.Name} {
		changed = safeString(s) || changed
	}
	for _, s := range []*string{&v.APIGroup, &v.Resource, &v.Namespace, &v.UID} {
		changed = shortenTo(s, maxKeyBytes) || changed
	}
	changed = shortenTo(&v.Name, maxNameBytes) || changed
	return safeState(v) || changed
}

// safeString replaces NUL and invalid UTF-8 in *s with U+FFFD and reports
// whether it had to.
func safeString(s *string) bool {
	if strings.IndexByte(*s, 0) < 0 && utf8.ValidString(*s) {
		return false
	}
	*s = strings.ToValidUTF8(strings.ReplaceAll(*s, "\x00", "\uFFFD"), "\uFFFD")
	return true
}

// shortenTo shortens *s to max bytes (shorten) if it is longer and reports
// whether it had to.
func shortenTo(s *string, max int) bool {
	if len(*s) <= max {
		return false
	}
	*s = shorten(*s, max)
	return true
}

// safeState makes v's state one PostgreSQL reads as jsonb (see safeJSON),
// keeping the text as sent in ObjectExact when it had to change it and
// can store it: the restore gives back what the apiserver sent. It
// reports whether it changed the state.
func safeState(v *Version) bool {
	out, changed := safeJSON(v.Object)
	if !changed {
		return false
	}
	if exactStorable(v.Object) {
		v.ObjectExact = v.Object
	}
	v.Object = out
	return true
}

// exactStorable tells whether PostgreSQL's json type takes raw as it is:
// valid UTF-8 without NUL bytes, and JSON. Escapes it cannot read as text
// (\u0000, lone surrogates) it stores all the same.
func exactStorable(raw []byte) bool {
	return len(raw) > 0 && utf8.Valid(raw) && bytes.IndexByte(raw, 0) < 0 && json.Valid(raw)
}

// shorten keeps a prefix of s and the digest of all of it, max bytes in
// all, so that distinct long values stay distinct. The prefix ends on a
// character boundary.
func shorten(s string, max int) string {
	sum := sha256.Sum256([]byte(s))
	suffix := "…sha256:" + hex.EncodeToString(sum[:8])
	cut := max - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

// validStrings tells whether every string of ss is valid UTF-8.
func validStrings(ss []string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// safeJSON returns raw re-encoded without NUL characters, invalid UTF-8 and
// unpaired UTF-16 surrogate escapes, and true, when raw has any; else raw and
// false. PostgreSQL's json type accepts a lone surrogate escape such as
// \ud800, but the value can then never be read as jsonb (SQLSTATE 22P05):
// Go's decoder turns each into U+FFFD, as Unicode says to. A document that does
// not parse becomes nil (stored as NULL).
func safeJSON(raw []byte) ([]byte, bool) {
	if len(raw) == 0 || utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) && !hasLoneSurrogate(raw) {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(bytes.ToValidUTF8(raw, []byte("\uFFFD"))))
	dec.UseNumber() // keep numbers as written
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, true
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(stripNUL(v)); err != nil {
		return nil, true
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), true
}

// hasLoneSurrogate reports whether a JSON text holds a \uXXXX escape of a
// UTF-16 surrogate that is not part of a high-low pair. Backslashes only
// occur inside strings in valid JSON, so no string tracking is needed.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		r, ok := escapedRune(raw, i)
		if !ok {
			i++ // \", \\, \n, ...: skip the escaped character
			continue
		}
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate with no high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			low, ok := escapedRune(raw, i+1)
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// escapedRune reads the \uXXXX escape at raw[i:].
func escapedRune(raw []byte, i int) (rune, bool) {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range raw[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func stripNUL(v any) any {
	switch t := v.(type) {
	case string:
		return strings.ReplaceAll(t, "\x00", "\uFFFD")
	case []any:
		for i := range t {
			t[i] = stripNUL(t[i])
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[strings.ReplaceAll(k, "\x00", "\uFFFD")] = stripNUL(x)
		}
		return out
	}
	return v
}
