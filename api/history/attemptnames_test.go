package history

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

// FailedByKeyRange answers from the canned events, as the store's read
// (tested against PostgreSQL in package store) does: the failed events
// of the key range, in key order.
func (f *fakeReader) FailedByKeyRange(_ context.Context, q store.EventKeyRange) ([]store.EventRecord, error) {
	var out []store.EventRecord
	for _, e := range f.events {
		if e.Cluster == q.Cluster && e.ResponseCode >= 300 && bytes.Compare(q.Lo, e.Key) <= 0 && bytes.Compare(e.Key, q.Hi) <= 0 &&
			len(out) < q.Limit && (q.Namespace == nil || e.Namespace == *q.Namespace) &&
			(q.Readable == "" || shortname.Readable(e.Name) == q.Readable) {
			out = append(out, e)
		}
	}
	return out, nil
}

func attempt(ns, name string, k []byte, code int32) store.EventRecord {
	return store.EventRecord{Cluster: "c", Key: k, At: time.Date(2026, 11, 21, 10, 0, 0, 123456000, time.UTC), Verb: "delete",
		Username: "mallory", Resource: "configmaps", Namespace: ns, Name: name, ResponseCode: code, ResponseReason: "Forbidden"}
}

// TestResolveAttemptByShortName: an attempt's short name, a prefix of its
// suffix and its long name name the one failed event; a short name that
// matches two the caller may read lists both, one that matches only a
// hidden attempt (another namespace) is not found as one that does not
// exist, and an ambiguity never lists or counts the hidden one. A
// successful event is no attempt.
func TestResolveAttemptByShortName(t *testing.T) {
	t.Parallel()
	a := attempt("shop", "app-config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x10), 403)
	b := attempt("shop", "App.Config", key(0x3f, 0x9a, 0x2c, 0x1b, 0x20), 409)
	hidden := attempt("secret-team", "app-config", key(0x3f, 0x9a, 0x2c, 0x99), 403)
	done := attempt("shop", "web", key(0x7e, 0x21, 0xaa, 0x04), 200)
	s := newTestService(t, &fakeReader{events: []store.EventRecord{a, b, hidden, done}})
	alice := as("alice")
	shop := "shop"
	for _, c := range []struct {
		name  string
		scope NameScope
		want  *store.EventRecord
	}{
		{"app-config-3f9a2c1b1", NameScope{}, &a},
		{"app-config-3f9a2c1b2", NameScope{Namespace: &shop}, &b},
		{AttemptName(a.At, a.Key), NameScope{}, &a},
		{strings.ToUpper(AttemptName(b.At, b.Key)), NameScope{}, &b},
	} {
		id, err := s.ResolveAttempt(alice, "c", c.name, c.scope)
		if err != nil || !id.At.Equal(c.want.At) || !bytes.Equal(id.Key, c.want.Key) || id.Cluster != "c" {
			t.Errorf("ResolveAttempt(%q) = %+v, %v; want %x", c.name, id, err, c.want.Key)
		}
	}
	for _, name := range []string{"app-config-3f9a2c1b", "app-config-3f9a", "3f9a2c1b"} {
		_, err := s.ResolveAttempt(alice, "c", name, NameScope{})
		if !errors.Is(err, errs.ErrInvalid) {
			t.Fatalf("ResolveAttempt(%q) = %v, want an ambiguity", name, err)
		}
		msg := err.Error()
		for _, want := range []string{"names more than one attempt you may read", AttemptName(a.At, a.Key), AttemptName(b.At, b.Key), `"App.Config"`, "refused 409"} {
			if !strings.Contains(msg, want) {
				t.Errorf("ambiguity of %q does not say %q:\n%s", name, want, msg)
			}
		}
		for _, hide := range []string{"secret-team", "3f9a2c99"} {
			if strings.Contains(msg, hide) {
				t.Errorf("ambiguity of %q reveals %q, which alice may not read:\n%s", name, hide, msg)
			}
		}
		if n := strings.Count(msg, "\n  "); n != 2 {
			t.Errorf("ambiguity of %q lists %d candidates, want 2:\n%s", name, n, msg)
		}
	}
	_, errHidden := s.ResolveAttempt(alice, "c", "app-config-3f9a2c99", NameScope{})
	_, errNone := s.ResolveAttempt(alice, "c", "app-config-3f9a2c98", NameScope{})
	if !errors.Is(errHidden, errs.ErrNotFound) || strings.ReplaceAll(errHidden.Error(), "99", "98") != errNone.Error() {
		t.Errorf("hidden: %v; absent: %v; want the same not found", errHidden, errNone)
	}
	if _, err := s.ResolveAttempt(alice, "c", "web-7e21aa04", NameScope{}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("a successful event resolved as an attempt: %v", err)
	}
	other := "other"
	if _, err := s.ResolveAttempt(alice, "c", "app-config-3f9a2c1b1", NameScope{Namespace: &other}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("an attempt resolved outside its namespace: %v", err)
	}
	if _, err := s.ResolveAttempt(as("peek"), "c", "app-config-3f9a2c1b1", NameScope{}); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("peek resolves an attempt in shop: %v", err)
	}
	for _, bad := range []string{"app-config", "uid-a." + strings.Repeat("11", 32), "01." + strings.Repeat("11", 32)} {
		if _, err := s.ResolveAttempt(alice, "c", bad, NameScope{}); !errors.Is(err, errs.ErrInvalid) || !errors.Is(err, shortname.ErrNotAName) {
			t.Errorf("ResolveAttempt(%q) = %v, want not a name", bad, err)
		}
	}
	if _, err := s.ResolveAttempt(as("broken"), "c", "app-config-3f9a2c1b1", NameScope{}); err == nil || errors.Is(err, errs.ErrNotFound) {
		t.Errorf("a failing authorizer: %v", err)
	}
}
