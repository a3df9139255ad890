package record

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

// fakeVersions serves versions by key and by key range, as the store does.
type fakeVersions struct {
	history.Reader
	versions []store.VersionRecord
}

func (f *fakeVersions) VersionsByKeyRange(_ context.Context, q store.KeyRangeQuery) ([]store.VersionRecord, error) {
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

func (f *fakeVersions) Version(_ context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error) {
	for i := range f.versions {
		if v := &f.versions[i]; v.Cluster == cluster && v.UID == uid && bytes.Equal(v.Key, key) {
			return v, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeVersions) StateBefore(context.Context, *store.VersionRecord) (*store.VersionRecord, error) {
	return nil, store.ErrNotFound
}

// TestChangeGetByShortName: kubectl get change SHORT-NAME answers the one
// change it names in the request's namespace; a short name that names two
// changes the caller may read is a bad request listing both, and never the
// Secret's change the caller may not read that shares the digits.
func TestChangeGetByShortName(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	v := func(uid, resource, ns, name string, prefix ...byte) store.VersionRecord {
		key := append(prefix, bytes.Repeat([]byte{0x11}, 32-len(prefix))...)
		return store.VersionRecord{Cluster: "e2e", UID: uid, Key: key, Verb: "update", ChangedAt: at, APIVersion: "v1",
			Resource: resource, Namespace: ns, Name: name, Username: "bob"}
	}
	hist, err := history.New(history.Options{Reader: &fakeVersions{versions: []store.VersionRecord{
		v("uid-a", "configmaps", "shop", "app-config", 0x3f, 0x9a, 0x2c, 0x1b, 0x10),
		v("uid-b", "configmaps", "shop", "app-config", 0x3f, 0x9a, 0x2c, 0x1b, 0x20),
		v("uid-s", "secrets", "shop", "app-config", 0x3f, 0x9a, 0x2c, 0x77),
		v("uid-o", "configmaps", "other", "web", 0x7e, 0x21, 0xaa, 0x04),
	}}, Authorizer: getAllButSecrets{}})
	if err != nil {
		t.Fatal(err)
	}
	s := newChangeStorage(nil, hist, nil, "e2e", true)
	ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"}), "shop")

	got, err := s.Get(ctx, "app-config-3f9a2c1b1", &metav1.GetOptions{})
	if err != nil || got.(*recordv1alpha1.Change).Object.UID != "uid-a" {
		t.Fatalf("get by a unique prefix: %v, %v", got, err)
	}
	_, err = s.Get(ctx, "app-config-3f9a", &metav1.GetOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("an ambiguous short name: %v, want a bad request", err)
	}
	for _, want := range []string{"app-config-3f9a2c1b (uid-a.3f9a2c1b10", "app-config-3f9a2c1b (uid-b.3f9a2c1b20"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ambiguity does not list %q:\n%v", want, err)
		}
	}
	if msg := err.Error(); strings.Contains(msg, "uid-s") || strings.Contains(msg, "secrets") || strings.Count(msg, "\n  ") != 2 {
		t.Errorf("ambiguity lists or counts the Secret's change alice may not read:\n%s", msg)
	}
	for _, name := range []string{"app-config-3f9a2c77", "web-7e21aa04", "not-a-name"} {
		if _, err := s.Get(ctx, name, &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get %s in shop: %v, want not found", name, err)
		}
	}
	// A list across all namespaces (-A) selects by the short name of a
	// change in any namespace.
	all := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	sel, _ := fields.ParseSelector("metadata.name=web-7e21aa04")
	if f, _, err := s.fieldSelector(all, sel, at); err != nil || f.UID != "uid-o" {
		t.Errorf("-A --field-selector metadata.name=web-7e21aa04: %+v, %v", f, err)
	}
}

// failingAuthz fails every question, as an authorizer webhook that is down.
type failingAuthz struct{}

func (failingAuthz) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", errors.New("webhook down")
}

// TestNameSelectorErrors: metadata.name=VALUE that is not a name, names
// nothing the caller may read, or names several is a bad request that
// quotes VALUE with the one escape; an authorizer or database failure
// keeps its own status (500, never a 400 that blames the caller).
func TestNameSelectorErrors(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	key := append([]byte{0x7e, 0x21, 0xaa, 0x04}, bytes.Repeat([]byte{0x11}, 28)...)
	versions := []store.VersionRecord{{Cluster: "e2e", UID: "uid-o", Key: key, Verb: "delete", Deleted: true, ChangedAt: at,
		APIVersion: "v1", Resource: "configmaps", Namespace: "shop", Name: "web", Username: "bob"}}
	log := slog.New(slog.DiscardHandler)
	ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"}), "shop")
	type selectorOf func(context.Context, fields.Selector) error
	storages := func(authz authorizer.Authorizer) map[string]selectorOf {
		hist, err := history.New(history.Options{Reader: &fakeVersions{versions: versions}, Authorizer: authz})
		if err != nil {
			t.Fatal(err)
		}
		c, d := newChangeStorage(log, hist, nil, "e2e", true), newDeletionStorage(log, hist, "e2e", true)
		return map[string]selectorOf{
			"changes": func(ctx context.Context, sel fields.Selector) error {
				_, _, err := c.fieldSelector(ctx, sel, at)
				return err
			},
			"deletions": func(ctx context.Context, sel fields.Selector) error {
				_, err := d.fieldSelector(ctx, sel, at)
				return err
			},
		}
	}
	for what, sel := range storages(getAllButSecrets{}) {
		for _, v := range []string{"web-7e21aa05", "not\u3164a-name", "x.y"} {
			err := sel(ctx, fields.OneTermEqualSelector("metadata.name", v))
			if !apierrors.IsBadRequest(err) {
				t.Errorf("%s metadata.name=%q: %v, want a bad request", what, v, err)
				continue
			}
			if msg := err.Error(); strings.Contains(msg, "\u3164") || !strings.Contains(msg, "metadata.name: "+escape.Quoted(v)+": ") {
				t.Errorf("%s metadata.name=%q: %q: want the value quoted by the one escape", what, v, msg)
			}
		}
	}
	for what, sel := range storages(failingAuthz{}) {
		err := sel(ctx, fields.OneTermEqualSelector("metadata.name", "web-7e21aa04"))
		if !apierrors.IsInternalError(err) || strings.Contains(err.Error(), "webhook down") {
			t.Errorf("%s metadata.name with the authorizer down: %v, want an internal error that says nothing more", what, err)
		}
	}
}
