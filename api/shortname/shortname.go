package shortname

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	// MaxNameLen is the most characters of the object's name a short name
	// keeps.
	MaxNameLen = 20
	// SuffixLen is the hex digits of the hash a short name carries.
	SuffixLen = 8
	// MinSuffixLen is the fewest hex digits of the hash a typed short name
	// may give: fewer would match too much of the record to list.
	MinSuffixLen = 4
	// MinBareLen is the fewest hex digits a name made only of the hash's
	// first digits may give.
	MinBareLen = 8
	// keyHexLen is the hex digits of the hash that ends a long name.
	keyHexLen = 64
)

// Of is the short name of a recorded object named objectName whose long
// name ends with hexKey (the version or event key, in hex).
func Of(objectName, hexKey string) string {
	if len(hexKey) > SuffixLen {
		hexKey = hexKey[:SuffixLen]
	}
	return readable(objectName) + "-" + strings.ToLower(hexKey)
}

// OfLong is the short name of the record object whose long name is long
// (<uid or time>.<64 hex>), of an object named objectName; long itself when
// it is not a long name (ParseLong).
func OfLong(objectName, long string) string {
	_, key, ok := ParseLong(long)
	if !ok {
		return long
	}
	return Of(objectName, hex.EncodeToString(key))
}

// Long is the long name of a record object: its prefix (the object's uid,
// or an attempt's time in unix microseconds), a dot, and its key in
// lower-case hex, the canonical form.
func Long(prefix string, key []byte) string { return prefix + "." + hex.EncodeToString(key) }

// ParseLong is the one parser of a long name, <prefix>.<64 hex digits>:
// split at the last dot (a uid may hold dots; a time holds none), the
// prefix not empty. Hex digits of either case are read (the same key: a
// name typed in upper case names the record Long names in lower case).
func ParseLong(s string) (prefix string, key []byte, ok bool) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return "", nil, false
	}
	key, ok = ParseKey(s[i+1:])
	if !ok {
		return "", nil, false
	}
	return s[:i], key, true
}

// ParseKey reads the key that ends a long name: exactly 64 hex digits, of
// either case.
func ParseKey(s string) ([]byte, bool) {
	if len(s) != keyHexLen || !isHex(s) {
		return nil, false
	}
	key, err := hex.DecodeString(s)
	return key, err == nil
}

// Readable is the object's name as a short name begins (readable).
// store/reads computes it in SQL too (readableNameSQL), to select a short
// name's candidates.
func Readable(name string) string { return readable(name) }

// readable is the object's name as a short name begins: lower case, every
// run of other characters than a-z and 0-9 one dash, no dash at either end,
// at most MaxNameLen characters; "x" when nothing is left. Every recorded
// name is hostile: nothing of it but these characters reaches a terminal
// through a short name.
func readable(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				if b.Len()+2 > MaxNameLen {
					break
				}
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= MaxNameLen {
				break
			}
			continue
		}
		dash = true
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		return "x"
	}
	return s
}

// Query is a name a person typed, parsed: a long name (Long, canonical:
// its hex in lower case), or the
// readable part of a short name (Name, empty when only hash digits were
// typed) and the first digits of the hash (KeyPrefix, lower case).
type Query struct {
	Long      string
	Name      string
	KeyPrefix string
}

// IsLong reports whether the name typed was a long name.
func (q Query) IsLong() bool { return q.Long != "" }

// Matches reports whether the record object named objectName whose long
// name ends with hexKey is one the short name q names.
func (q Query) Matches(objectName, hexKey string) bool {
	if q.IsLong() {
		return false
	}
	return (q.Name == "" || readable(objectName) == q.Name) && strings.HasPrefix(strings.ToLower(hexKey), q.KeyPrefix)
}

// KeyRange is the range of keys whose hex begins with q.KeyPrefix: every
// such 32-byte key k has lo <= k <= hi (bytewise).
func (q Query) KeyRange() (lo, hi []byte) {
	p := q.KeyPrefix
	l, h := p, p
	if len(p)%2 == 1 {
		l, h = p+"0", p+"f"
	}
	lo, _ = hex.DecodeString(l)
	hi, _ = hex.DecodeString(h)
	for len(hi) < keyHexLen/2 {
		hi = append(hi, 0xff)
	}
	return lo, hi
}

// ErrNotAName is the error of Parse for what is neither a long nor a
// short name.
var ErrNotAName = errors.New("not a name of the record")

// Parse reads a name a person typed: a long name (<uid>.<64 hex digits>,
// or <time>.<64 hex digits>), a short name (<object name>-<hex digits>, at
// least MinSuffixLen of them: a prefix of the hash is enough when it is
// unique), or only the hash's first digits (at least MinBareLen).
func Parse(s string) (Query, error) {
	if strings.Contains(s, ".") {
		if prefix, key, ok := ParseLong(s); ok {
			return Query{Long: Long(prefix, key)}, nil
		}
		return Query{}, fmt.Errorf("%w: %q: want <uid>.<64 hex digits> or a short name <object name>-<hex digits>", ErrNotAName, s)
	}
	t := strings.ToLower(s)
	i := strings.LastIndexByte(t, '-')
	name, suffix := "", t
	if i >= 0 {
		name, suffix = t[:i], t[i+1:]
	}
	switch {
	case !isHex(suffix) || len(suffix) > keyHexLen:
		return Query{}, fmt.Errorf("%w: %q: a short name ends with -<hex digits> (such as app-config-3f9a2c1b)", ErrNotAName, s)
	case i < 0 && len(suffix) < MinBareLen:
		return Query{}, fmt.Errorf("%w: %q: give at least %d hex digits, or the object's name before them (<name>-<hex digits>)", ErrNotAName, s, MinBareLen)
	case i >= 0 && len(suffix) < MinSuffixLen:
		return Query{}, fmt.Errorf("%w: %q: give at least %d hex digits after the last dash", ErrNotAName, s, MinSuffixLen)
	case i >= 0 && readable(name) != name:
		return Query{}, fmt.Errorf("%w: %q: the part before the last dash is not the beginning of a short name (lower-case letters, digits and single dashes, at most %d)", ErrNotAName, s, MaxNameLen)
	}
	return Query{Name: name, KeyPrefix: suffix}, nil
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
