package record

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/shortname"
)

// TestOneLongNameRule: every reader of a long name (<uid or time>.<64 hex
// digits>) reads the same names the same way: the short name's parser, the
// record's and the restores' (registry.ParseRecordName), the history
// service's, and an attempt's (whose prefix is a time). Hex digits of
// either case name the same record, the canonical name being lower-case.
func TestOneLongNameRule(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("3f9a", 16)
	want, _ := history.ParseVersionKey(key)
	hist, err := history.New(history.Options{Reader: &fakeVersions{}, Authorizer: getAllButSecrets{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		prefix string // "" when it is not a long name
	}{
		{"1700000000000000." + key, "1700000000000000"},
		{"1700000000000000." + strings.ToUpper(key), "1700000000000000"},
		{"uid-a." + strings.ToUpper(key[:10]) + key[10:], "uid-a"},
		{"u.i.d." + key, "u.i.d"},
		{"." + key, ""},
		{"uid." + key[:63], ""},
		{"uid." + key + "0", ""},
		{"uid." + key[:63] + "g", ""},
		{"uid" + key, ""},
	} {
		long := c.prefix != ""
		q, err := shortname.Parse(c.name)
		if got := err == nil && q.IsLong(); got != long {
			t.Errorf("shortname.Parse(%q): long %v, want %v", c.name, got, long)
		}
		if got := shortname.OfLong("app", c.name) != c.name; got != long {
			t.Errorf("shortname.OfLong(%q) = %q: long %v, want %v", c.name, shortname.OfLong("app", c.name), got, long)
		}
		id, err := registry.ParseRecordName("c", c.name)
		if got := err == nil; got != long || long && (id.UID != c.prefix || !bytes.Equal(id.Key, want)) {
			t.Errorf("registry.ParseRecordName(%q) = %+v, %v; want long %v", c.name, id, err, long)
		}
		id, err = hist.ResolveVersion(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"}), "c", c.name, history.NameScope{})
		if long && (err != nil || id.UID != c.prefix || !bytes.Equal(id.Key, want)) {
			t.Errorf("ResolveVersion(%q) = %+v, %v; want %s and the key", c.name, id, err, c.prefix)
		}
		if strings.Trim(c.prefix, "0123456789") == "" {
			ev, err := parseAttemptName("c", c.name)
			if got := err == nil; got != long || long && !bytes.Equal(ev.Key, want) {
				t.Errorf("parseAttemptName(%q) = %+v, %v; want long %v", c.name, ev, err, long)
			}
		}
	}
}
