package history

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/store"
)

// fakeReader answers the one-row reads from canned rows; the lists are not
// used by these tests (the embedded nil Reader panics if they are).
type fakeReader struct {
	Reader
	events    []store.EventRecord
	versions  []store.VersionRecord
	before    map[string]*store.VersionRecord // by uid: StateBefore's answer
	beforeErr error
}

func (f *fakeReader) FailedMutation(_ context.Context, cluster string, at time.Time, key []byte) (*store.EventRecord, error) {
	for i := range f.events {
		if e := &f.events[i]; e.Cluster == cluster && e.At.Equal(at) && string(e.Key) == string(key) && e.ResponseCode >= 300 {
			return e, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeReader) Version(_ context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error) {
	for i := range f.versions {
		if v := &f.versions[i]; v.Cluster == cluster && v.UID == uid && string(v.Key) == string(key) {
			return v, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeReader) StateBefore(_ context.Context, v *store.VersionRecord) (*store.VersionRecord, error) {
	if f.beforeErr != nil {
		return nil, f.beforeErr
	}
	if v.Created {
		return nil, nil
	}
	if p, ok := f.before[v.UID]; ok {
		return p, nil
	}
	return nil, store.ErrNotFound
}

// rbac allows "get" on group/resource/namespace ("*": any) to a user, and
// fails every question of the user "broken".
type rbac map[string][]string

func (r rbac) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "broken" {
		return authorizer.DecisionNoOpinion, "", errors.New("webhook down")
	}
	for _, rule := range r[a.GetUser().GetName()] {
		if rule == a.GetVerb()+" "+a.GetAPIGroup()+"/"+a.GetResource()+" "+a.GetNamespace() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "no rule", nil
}

func newTestService(t *testing.T, r Reader) *Service {
	t.Helper()
	s, err := New(Options{Reader: r, Authorizer: rbac{
		"alice": {"get /configmaps shop", "get /namespaces shop"},
		"peek":  {"get /configmaps other"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func as(name string) context.Context {
	return WithCaller(context.Background(), &user.DefaultInfo{Name: name})
}

// TestFailedMutationAuthorizesAsTheList: one failed mutation by its key is
// read by whoever may get its object's resource in its namespace; to anyone
// else, and for a successful event, it does not exist, and the answer names
// nothing of it.
func TestFailedMutationAuthorizesAsTheList(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC)
	denied := store.EventRecord{Cluster: "c", Key: []byte("k-denied"), At: at, Verb: "delete", Username: "eve",
		Resource: "configmaps", Namespace: "shop", Name: "secret-plans", ResponseCode: 403, ResponseReason: "Forbidden",
		RequestObject: []byte(`{"kind":"DeleteOptions"}`)}
	ns := store.EventRecord{Cluster: "c", Key: []byte("k-ns"), At: at, Verb: "delete", Username: "eve",
		Resource: "namespaces", Name: "shop", ResponseCode: 403}
	ok := store.EventRecord{Cluster: "c", Key: []byte("k-ok"), At: at, Verb: "create", Username: "bob",
		Resource: "configmaps", Namespace: "shop", Name: "fine", ResponseCode: 201}
	s := newTestService(t, &fakeReader{events: []store.EventRecord{denied, ns, ok}})

	tests := []struct {
		name    string
		caller  string
		id      EventID
		wantErr error
	}{
		{"alice may get configmaps in shop", "alice", EventID{"c", at, denied.Key}, nil},
		{"a Namespace is authorized in itself", "alice", EventID{"c", at, ns.Key}, nil},
		{"peek may not read shop", "peek", EventID{"c", at, denied.Key}, errs.ErrNotFound},
		{"nor the Namespace shop", "peek", EventID{"c", at, ns.Key}, errs.ErrNotFound},
		{"a successful event is not a failed mutation", "alice", EventID{"c", at, ok.Key}, errs.ErrNotFound},
		{"another cluster", "alice", EventID{"d", at, denied.Key}, errs.ErrNotFound},
		{"another time", "alice", EventID{"c", at.Add(time.Microsecond), denied.Key}, errs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := s.FailedMutation(as(tt.caller), tt.id)
			if tt.wantErr == nil {
				if err != nil || e == nil || string(e.Key) != string(tt.id.Key) || !e.At.Equal(at) || e.Actor.Username != "eve" {
					t.Fatalf("%+v %v", e, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || errors.Is(err, errs.ErrForbidden) {
				t.Fatalf("%+v %v, want %v", e, err, tt.wantErr)
			}
			for _, hidden := range []string{"secret-plans", "configmaps", "shop", "eve"} {
				if strings.Contains(err.Error(), hidden) {
					t.Errorf("the answer names %q: %v", hidden, err)
				}
			}
		})
	}
	e, err := s.FailedMutation(as("alice"), EventID{"c", at, denied.Key})
	if err != nil || string(e.RequestObject) != `{"kind":"DeleteOptions"}` || e.Code != 403 || e.Reason != "Forbidden" || e.Name != "secret-plans" {
		t.Errorf("the attempt: %+v %v", e, err)
	}
	// An authorizer that fails is a failure, not a hidden event.
	if _, err := s.FailedMutation(as("broken"), EventID{"c", at, denied.Key}); err == nil || errors.Is(err, errs.ErrNotFound) {
		t.Errorf("authorizer failure: %v", err)
	}
}

// TestChangeDetail: the state before a change and the diff, as history.Diff
// gives them; a diff that cannot be computed is left out with its reason,
// a failed read of the record fails.
func TestChangeDetail(t *testing.T) {
	t.Parallel()
	cm := func(uid, data string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"shop","uid":"` + uid + `"},"data":{"mode":"` + data + `"}}`)
	}
	v := func(uid, key string, mod func(*store.VersionRecord)) store.VersionRecord {
		r := store.VersionRecord{Cluster: "c", UID: uid, Key: []byte(key), Resource: "configmaps", Namespace: "shop", Name: "app",
			Complete: true, HasObject: true, Object: cm(uid, key)}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	created := v("u1", "live", func(r *store.VersionRecord) { r.Created = true })
	updated := v("u1", "broken", nil)
	scaled := v("u1", "scaled", func(r *store.VersionRecord) { r.Complete, r.HasObject, r.Object = false, false, nil })
	orphan := v("u2", "orphan", nil)
	r := &fakeReader{versions: []store.VersionRecord{created, updated, scaled, orphan},
		before: map[string]*store.VersionRecord{"u1": &created}}
	s := newTestService(t, r)
	id := func(v store.VersionRecord) VersionID { return VersionID{Cluster: "c", UID: v.UID, Key: v.Key} }

	d, err := s.ChangeDetail(as("alice"), id(updated))
	if err != nil || d.Prior != &created || d.DiffErr != nil || d.Diff == nil {
		t.Fatalf("update: %+v %v", d, err)
	}
	if c := d.Diff.Changes; len(c) != 1 || c[0].Op != "replace" || c[0].Path != "/data/mode" || c[0].From != "live" || c[0].To != "broken" {
		t.Errorf("update's diff: %+v", c)
	}

	d, err = s.ChangeDetail(as("alice"), id(created))
	if err != nil || d.Prior != nil || d.Diff == nil || len(d.Diff.Changes) != 1 || d.Diff.Changes[0].Op != "add" || d.Diff.Changes[0].Path != "" {
		t.Errorf("create: %+v %v", d, err)
	}

	d, err = s.ChangeDetail(as("alice"), id(scaled))
	if err != nil || d.Prior != &created || d.Diff != nil || !errors.Is(d.DiffErr, errs.ErrUnprocessable) {
		t.Errorf("a subresource write without a full state: %+v %v", d, err)
	}

	d, err = s.ChangeDetail(as("alice"), id(orphan))
	if err != nil || d.Prior != nil || d.Diff != nil || !errors.Is(d.DiffErr, errs.ErrNotFound) {
		t.Errorf("prior unknown: %+v %v", d, err)
	}

	if _, err := s.ChangeDetail(as("peek"), id(updated)); !errors.Is(err, errs.ErrNotFound) {
		t.Errorf("a caller who may not read it: %v", err)
	}

	broken := &fakeReader{versions: r.versions, beforeErr: errors.New("connection reset")}
	if _, err := newTestService(t, broken).ChangeDetail(as("alice"), id(updated)); err == nil {
		t.Error("a failed read of the state before: no error")
	}
}

// TestWhoStartedACascadeIsForReadersOfItsStart: a delete by the garbage
// collector names who deleted its owner only to a caller who may read the
// owner; alice may read the ConfigMap but not the Secret that owned it.
func TestWhoStartedACascadeIsForReadersOfItsStart(t *testing.T) {
	t.Parallel()
	del := func(key string, owner *store.ObjectRef) store.VersionRecord {
		return store.VersionRecord{Cluster: "c", UID: "u-" + key, Key: []byte(key), Resource: "configmaps", Namespace: "shop", Name: "dep-" + key,
			Verb: "delete", Deleted: true, Username: "system:serviceaccount:kube-system:generic-garbage-collector",
			InitiatedBy: "carol", InitiatedVia: "owner-deletion", Initiator: owner}
	}
	secretOwned := del("a", &store.ObjectRef{Resource: "secrets", Namespace: "shop", Name: "s"})
	cmOwned := del("b", &store.ObjectRef{Resource: "configmaps", Namespace: "shop", Name: "o"})
	nsDeleted := del("c", &store.ObjectRef{Resource: "namespaces", Name: "shop"})
	r := &fakeReader{versions: []store.VersionRecord{secretOwned, cmOwned, nsDeleted}}
	s := newTestService(t, r)
	for _, tt := range []struct {
		v    store.VersionRecord
		want string
	}{{secretOwned, ""}, {cmOwned, "carol"}, {nsDeleted, "carol"}} {
		r.versions = []store.VersionRecord{secretOwned, cmOwned, nsDeleted} // redaction works on the loaded copy
		got, err := s.Version(as("alice"), VersionID{Cluster: "c", UID: tt.v.UID, Key: tt.v.Key})
		if err != nil {
			t.Fatal(err)
		}
		if got.InitiatedBy != tt.want || (tt.want == "") != (got.InitiatedVia == "") {
			t.Errorf("%s owned by %s: initiated by %q via %q, want %q", tt.v.Name, tt.v.Initiator.Resource, got.InitiatedBy, got.InitiatedVia, tt.want)
		}
	}
}
