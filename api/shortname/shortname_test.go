package shortname

import (
	"bytes"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
)

const key = "3f9a2c1b7e21aa04c0ffee00112233445566778899aabbccddeeff0011223344"

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func TestOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, want string }{
		{"app-config", "app-config-3f9a2c1b"},
		{"web-7d4b9c6f8-x2k4q", "web-7d4b9c6f8-x2k4q-3f9a2c1b"},
		{"a-very-long-deployment-name-for-payments", "a-very-long-deployme-3f9a2c1b"},
		{"system:controller:job-controller", "system-controller-jo-3f9a2c1b"},
		{"kube-root-ca.crt", "kube-root-ca-crt-3f9a2c1b"},
		{"Ünïcode\u202eevil\x1b[31m", "n-code-evil-31m-3f9a2c1b"},
		{"...", "x-3f9a2c1b"},
		{"", "x-3f9a2c1b"},
		{"abcdefghijklmnopqrs-tuv", "abcdefghijklmnopqrs-3f9a2c1b"},
	} {
		got := Of(c.name, key)
		if got != c.want {
			t.Errorf("Of(%q) = %q, want %q", c.name, got, c.want)
		}
		if !dns1123Label.MatchString(got) || len(got) > MaxNameLen+1+SuffixLen {
			t.Errorf("Of(%q) = %q: not a DNS-1123 label of at most %d characters", c.name, got, MaxNameLen+1+SuffixLen)
		}
		q, err := Parse(got)
		if err != nil || !q.Matches(c.name, key) {
			t.Errorf("Parse(Of(%q)) = %+v, %v: does not match its own object", c.name, q, err)
		}
	}
	if got := OfLong("app-config", "5e0c-uid."+key); got != "app-config-3f9a2c1b" {
		t.Errorf("OfLong = %q", got)
	}
	if got := OfLong("app-config", "not-long"); got != "not-long" {
		t.Errorf("OfLong of a name that is not long = %q, want it unchanged", got)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Query
		bad  string
	}{
		{in: "5e0c-uid." + key, want: Query{Long: "5e0c-uid." + key}},
		{in: "app-config-3f9a2c1b", want: Query{Name: "app-config", KeyPrefix: "3f9a2c1b"}},
		{in: "App-Config-3F9A", want: Query{Name: "app-config", KeyPrefix: "3f9a"}},
		{in: "3f9a2c1b", want: Query{KeyPrefix: "3f9a2c1b"}},
		{in: "app-config-" + key, want: Query{Name: "app-config", KeyPrefix: key}},
		{in: "app-config-3f9", bad: "at least 4"},
		{in: "3f9a2c", bad: "at least 8"},
		{in: "app-config", bad: "-<hex digits>"},
		{in: "app--config-3f9a", bad: "not the beginning"},
		{in: "-3f9a2c1b", bad: "not the beginning"},
		{in: "uid.3f9a", bad: "64 hex"},
		{in: "", bad: "-<hex digits>"},
	} {
		got, err := Parse(c.in)
		if c.bad != "" {
			if !errors.Is(err, ErrNotAName) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("Parse(%q) = %+v, %v; want an error with %q", c.in, got, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	q, _ := Parse("app-config-3f9a")
	for _, c := range []struct {
		name, key string
		want      bool
	}{
		{"app-config", key, true},
		{"App.Config", key, true}, // the same readable part: a candidate too
		{"app-config", "3f9b" + key[4:], false},
		{"web", key, false},
	} {
		if got := q.Matches(c.name, c.key); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.name, c.key, got, c.want)
		}
	}
	long, _ := Parse("uid." + key)
	if long.Matches("app-config", key) {
		t.Error("a long name matched as a short one")
	}
}

func TestKeyRange(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"3f9a", "3f9", "ffff", "fffff", key} {
		lo, hi := Query{KeyPrefix: prefix}.KeyRange()
		in, _ := hex.DecodeString(key)
		for _, k := range [][]byte{in, bytes.Repeat([]byte{0}, 32), bytes.Repeat([]byte{0xff}, 32)} {
			inRange := bytes.Compare(lo, k) <= 0 && bytes.Compare(k, hi) <= 0
			if has := strings.HasPrefix(hex.EncodeToString(k), prefix); has != inRange {
				t.Errorf("prefix %s: key %x in [%x, %x] = %v, has the prefix = %v", prefix, k, lo, hi, inRange, has)
			}
		}
	}
}

// TestParseLong: the one parser of long names splits at the last dot, wants
// a prefix and exactly 64 hex digits, and reads upper-case digits as the
// same key, whose canonical name (Long) is lower-case.
func TestParseLong(t *testing.T) {
	t.Parallel()
	want, _ := hex.DecodeString(key)
	for _, c := range []struct{ in, prefix string }{
		{"5e0c-uid." + key, "5e0c-uid"},
		{"5e0c-uid." + strings.ToUpper(key), "5e0c-uid"},
		{"a.b.c." + key, "a.b.c"},
		{"1795428000123456." + key, "1795428000123456"},
		{"." + key, ""},
		{"uid." + key[:63], ""},
		{"uid." + key + "0", ""},
		{"uid." + key[:63] + "x", ""},
		{"uid", ""},
		{"", ""},
	} {
		prefix, k, ok := ParseLong(c.in)
		if ok != (c.prefix != "") || prefix != c.prefix || ok && !bytes.Equal(k, want) {
			t.Errorf("ParseLong(%q) = %q, %x, %v; want prefix %q", c.in, prefix, k, ok, c.prefix)
		}
		if ok && Long(prefix, k) != strings.ToLower(c.in) {
			t.Errorf("Long(ParseLong(%q)) = %q, want it in lower case", c.in, Long(prefix, k))
		}
	}
	if q, err := Parse("uid." + strings.ToUpper(key)); err != nil || q.Long != "uid."+key {
		t.Errorf("Parse of an upper-case long name = %+v, %v; want the canonical long name", q, err)
	}
}
