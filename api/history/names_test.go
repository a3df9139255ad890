package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

// VersionsByKeyRange answers from the canned versions, as the store's read
// (tested against PostgreSQL in package store) does: the key range, in key
// order.
func (f *fakeReader) VersionsByKeyRange(_ context.Context, q store.KeyRangeQuery) ([]store.VersionRecord, error) {
	var out []store.VersionRecord
	for _, v := range f.versions {
		if v.Cluster == q.Cluster && bytes.Compare(q.Lo, v.Key) <= 0 && bytes.Compare(v.Key, q.Hi) <= 0 && len(out) < q.Limit &&
			(q.Namespace == nil || v.Namespace == *q.Namespace) && (!q.Deleted || v.Deleted) &&
			(q.Readable == "" || shortname.Readable(v.Name) == q.Readable) {
			out = append(out, v)
		}
	}
	return out, nil
}

// key is a version key of 32 bytes beginning with prefix.
func key(prefix ...byte) []byte { return append(prefix, bytes.Repeat([]byte{0x11}, 32-len(prefix))...) }

func named(uid, ns, name string, k []byte, deleted bool) store.VersionRecord {
	verb := "update"
	if deleted {
		verb = "delete"
	}
	return store.VersionRecord{Cluster: "c", UID: uid, Key: k, Resource: "configmaps", Namespace: ns, Name: name, Verb: verb,
		Deleted: deleted, Username: "bob", ChangedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
}

// TestResolveVersionByShortName: a short name, a prefix of its suffix and
// the long name all name the one version; a short name that matches two
// versions the caller may read lists both, and one that matches a version
// the caller may not read is not found, as a hidden one is.
func TestResolveVersionByShortName(t *testing.T) {
	t.Parallel()
	// Two objects of one readable name whose keys share their first 8
	// hex digits: the same short name (a forced collision), told apart by
	// the 9th digit; a third in a namespace alice may not read shares
	// the first 6 digits; a fourth is a deletion.
	a := named("uid-a", "shop", "app-config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x10), false)
	b := named("uid-b", "shop", "App.Config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x20), false)
	hidden := named("uid-h", "secret-team", "app-config", key(0x3f, 0x9a, 0x2c, 0x99), false)
	web := named("uid-w", "shop", "web", key(0x7e, 0x21, 0xaa, 0x04), true)
	s := newTestService(t, &fakeReader{versions: []store.VersionRecord{a, b, hidden, web}})
	alice := as("alice")
	shop := "shop"

	short := shortname.Of("app-config", "3f9a2c1b10")
	if short != "app-config-3f9a2c1b" {
		t.Fatalf("short name = %q", short)
	}
	for _, c := range []struct {
		name  string
		scope NameScope
		want  *store.VersionRecord
	}{
		{"app-config-3f9a2c1b1", NameScope{}, &a},
		{"app-config-3f9a2c1b2", NameScope{Namespace: &shop}, &b},
		{"web-7e21aa04", NameScope{Deletions: true}, &web},
		{"web-7e21", NameScope{}, &web},
		{"7e21aa04", NameScope{}, &web},
		{"uid-a.3f9a2c1b10" + strings.Repeat("11", 27), NameScope{}, &a},
	} {
		id, err := s.ResolveVersion(alice, "c", c.name, c.scope)
		if err != nil || id.UID != c.want.UID || !bytes.Equal(id.Key, c.want.Key) || id.Cluster != "c" {
			t.Errorf("ResolveVersion(%q) = %+v, %v; want %s", c.name, id, err, c.want.UID)
		}
	}

	// The collision: both candidates alice may read are listed, with their
	// long names; the hidden one, which matches "app-config-3f9a" too, is
	// neither listed nor counted.
	for _, name := range []string{short, "app-config-3f9a"} {
		_, err := s.ResolveVersion(alice, "c", name, NameScope{})
		if !errors.Is(err, errs.ErrInvalid) {
			t.Fatalf("ResolveVersion(%q) = %v, want an ambiguity (ErrInvalid)", name, err)
		}
		msg := err.Error()
		for _, want := range []string{"names more than one version you may read", "uid-a.3f9a2c1b10", "uid-b.3f9a2c1b20", `"App.Config"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("ambiguity of %q does not say %q:\n%s", name, want, msg)
			}
		}
		for _, hide := range []string{"uid-h", "secret-team", "3f9a2c99", "3 ", "three", "other"} {
			if strings.Contains(msg, hide) {
				t.Errorf("ambiguity of %q reveals %q, which alice may not read:\n%s", name, hide, msg)
			}
		}
		if n := strings.Count(msg, "\n  "); n != 2 {
			t.Errorf("ambiguity of %q lists %d candidates, want 2:\n%s", name, n, msg)
		}
	}

	// The hidden version alone: not found, as one that does not exist.
	_, errHidden := s.ResolveVersion(alice, "c", "app-config-3f9a2c99", NameScope{})
	_, errNone := s.ResolveVersion(alice, "c", "app-config-3f9a2c98", NameScope{})
	if !errors.Is(errHidden, errs.ErrNotFound) || strings.ReplaceAll(errHidden.Error(), "99", "98") != errNone.Error() {
		t.Errorf("hidden: %v; absent: %v; want the same not found", errHidden, errNone)
	}
	// Scopes: another namespace, a version that is not a deletion.
	if _, err := s.ResolveVersion(as("peek"), "c", "web-7e21aa04", NameScope{}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("peek resolves a version of shop: %v", err)
	}
	other := "other"
	if _, err := s.ResolveVersion(alice, "c", "web-7e21aa04", NameScope{Namespace: &other}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("a name resolved outside its namespace: %v", err)
	}
	if _, err := s.ResolveVersion(alice, "c", "app-config-3f9a2c1b1", NameScope{Deletions: true}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("an update resolved as a deletion: %v", err)
	}
	// Not names at all.
	for _, bad := range []string{"app-config", "3f9a", "x.y"} {
		if _, err := s.ResolveVersion(alice, "c", bad, NameScope{}); !errors.Is(err, errs.ErrInvalid) {
			t.Errorf("ResolveVersion(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	// An authorizer that fails fails the resolution: nothing is guessed.
	if _, err := s.ResolveVersion(as("broken"), "c", "web-7e21aa04", NameScope{}); err == nil || errors.Is(err, errs.ErrNotFound) {
		t.Errorf("a failing authorizer: %v", err)
	}
}

// TestAmbiguityEscapesRecordedStrings: an ambiguity lists recorded names,
// namespaces, users and uids through the one escape (api/escape), which
// hides what strconv.Quote leaves as is (U+3164 HANGUL FILLER, U+00A0).
func TestAmbiguityEscapesRecordedStrings(t *testing.T) {
	t.Parallel()
	a := named("uid-a", "shop", "app\u3164config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x10), false)
	a.Username = "bob\u3164admin"
	b := named("uid-b\u00a0x", "shop\u3164", "app-config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x20), false)
	b.Resource = "config\u3164maps"
	s, err := New(Options{Reader: &fakeReader{versions: []store.VersionRecord{a, b}}, Authorizer: rbac{
		"root": {"get /configmaps shop", "get /config\u3164maps shop\u3164"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ResolveVersion(as("root"), "c", "app-config-3f9a", NameScope{})
	if !errors.Is(err, errs.ErrInvalid) {
		t.Fatalf("ResolveVersion = %v, want an ambiguity", err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\u3164\u00a0") {
		t.Errorf("the ambiguity shows a hidden character as itself:\n%s", msg)
	}
	for _, want := range []string{`"app\u3164config"`, `"bob\u3164admin"`, `"shop\u3164"`, `"uid-b\u00a0x.3f9a2c1b20`, `"config\u3164maps"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the ambiguity does not say %s:\n%s", want, msg)
		}
	}
}

// TestResolveVersionCapCountsOnlyTheScope: the versions of other
// namespaces, and of other names, in a short name's key range neither
// refuse a namespaced lookup ("give more digits") nor tell a caller who
// may read one namespace how many versions the cluster holds: with a
// thousand hidden versions in the range, the answers are those of a
// record without them.
func TestResolveVersionCapCountsOnlyTheScope(t *testing.T) {
	t.Parallel()
	mine := named("uid-m", "shop", "app-config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x10), false)
	var crowd []store.VersionRecord
	for i := range 1500 {
		k := key(0x3f, 0x9a, 0x00, byte(i>>8), byte(i))
		crowd = append(crowd, named(fmt.Sprintf("uid-%d", i), "secret-team", "app-config", k, false))
		crowd = append(crowd, named(fmt.Sprintf("uid-w%d", i), "shop", "web", k, false))
	}
	alone := newTestService(t, &fakeReader{versions: []store.VersionRecord{mine}})
	crowded := newTestService(t, &fakeReader{versions: append(crowd, mine)})
	shop := "shop"
	for _, c := range []struct {
		user, name string
		scope      NameScope
	}{
		{"alice", "app-config-3f9a", NameScope{Namespace: &shop}},
		{"peek", "app-config-3f9a", NameScope{Namespace: &shop}},
		{"alice", "app-config-3f9a2c", NameScope{}},
		{"peek", "app-config-3f9b", NameScope{}},
		{"alice", "app-config-3f9a", NameScope{Deletions: true}},
	} {
		idA, errA := alone.ResolveVersion(as(c.user), "c", c.name, c.scope)
		idC, errC := crowded.ResolveVersion(as(c.user), "c", c.name, c.scope)
		if fmt.Sprint(idA, errA) != fmt.Sprint(idC, errC) {
			t.Errorf("%s resolving %s (%+v): without the hidden versions %v %v, with them %v %v", c.user, c.name, c.scope, idA, errA, idC, errC)
		}
	}
	if id, err := crowded.ResolveVersion(alice(), "c", "app-config-3f9a", NameScope{Namespace: &shop}); err != nil || id.UID != "uid-m" {
		t.Errorf("the one version alice may read in shop: %v %v", id, err)
	}
	// Past the bound of candidates authorized (more than maxNameChecks
	// versions of the name in the scope), the answer is the same whoever
	// asks and whatever they may read: give more digits.
	_, errAlice := crowded.ResolveVersion(alice(), "c", "app-config-3f9a", NameScope{})
	_, errPeek := crowded.ResolveVersion(as("peek"), "c", "app-config-3f9a", NameScope{})
	if !errors.Is(errAlice, errs.ErrInvalid) || !strings.Contains(fmt.Sprint(errAlice), "give more of the hex digits") ||
		fmt.Sprint(errAlice) != fmt.Sprint(errPeek) {
		t.Errorf("past the bound: alice %v, peek %v; want the same refusal", errAlice, errPeek)
	}
}

func alice() context.Context { return as("alice") }
