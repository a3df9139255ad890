package record

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

// fakeAttempts serves failed events by key and by key range, as the
// store does (tested against PostgreSQL in package store/reads).
type fakeAttempts struct {
	history.Reader
	events []store.EventRecord
}

func (f *fakeAttempts) FailedByKeyRange(_ context.Context, q store.EventKeyRange) ([]store.EventRecord, error) {
	var out []store.EventRecord
	for _, e := range f.events {
		if e.Cluster == q.Cluster && bytes.Compare(q.Lo, e.Key) <= 0 && bytes.Compare(e.Key, q.Hi) <= 0 && len(out) < q.Limit &&
			(q.Namespace == nil || e.Namespace == *q.Namespace) && (q.Readable == "" || shortname.Readable(e.Name) == q.Readable) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeAttempts) FailedMutation(_ context.Context, cluster string, at time.Time, key []byte) (*store.EventRecord, error) {
	for i := range f.events {
		if e := &f.events[i]; e.Cluster == cluster && e.At.Equal(at) && bytes.Equal(e.Key, key) {
			return e, nil
		}
	}
	return nil, store.ErrNotFound
}

// TestAttemptGetByShortName: kubectl get attempt SHORT-NAME answers the
// one attempt it names in the request's namespace, and the table's NAME is
// that short name; a short name that names two attempts the caller may
// read is a bad request listing both, and never the Secret's attempt the
// caller may not read that shares the digits; that one alone is not found.
func TestAttemptGetByShortName(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	e := func(resource, ns, name string, prefix ...byte) store.EventRecord {
		key := append(prefix, bytes.Repeat([]byte{0x11}, 32-len(prefix))...)
		return store.EventRecord{Cluster: "e2e", Key: key, At: at, Verb: "delete", APIVersion: "v1", Resource: resource,
			Namespace: ns, Name: name, Username: "mallory", ResponseCode: 403, ResponseReason: "Forbidden"}
	}
	hist, err := history.New(history.Options{Reader: &fakeAttempts{events: []store.EventRecord{
		e("configmaps", "shop", "app-config", 0x3f, 0x9a, 0x2c, 0x1b, 0x10),
		e("configmaps", "shop", "app-config", 0x3f, 0x9a, 0x2c, 0x1b, 0x20),
		e("secrets", "shop", "app-config", 0x3f, 0x9a, 0x2c, 0x77),
		e("configmaps", "other", "web", 0x7e, 0x21, 0xaa, 0x04),
	}}, Authorizer: getAllButSecrets{}})
	if err != nil {
		t.Fatal(err)
	}
	s := newAttemptStorage(nil, hist, "e2e", true)
	ctx := genericapirequest.WithNamespace(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"}), "shop")

	got, err := s.Get(ctx, "app-config-3f9a2c1b1", &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get by a unique prefix: %v", err)
	}
	a := got.(*recordv1alpha1.Attempt)
	if a.Name != attemptName(at, append([]byte{0x3f, 0x9a, 0x2c, 0x1b, 0x10}, bytes.Repeat([]byte{0x11}, 27)...)) {
		t.Errorf("got %s", a.Name)
	}
	table, err := s.ConvertToTable(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Name" && table.Rows[0].Cells[i] != "app-config-3f9a2c1b" {
			t.Errorf("NAME cell %v, want the short name", table.Rows[0].Cells[i])
		}
	}
	if _, err := s.Get(ctx, a.Name, &metav1.GetOptions{}); err != nil {
		t.Errorf("get by the long name: %v", err)
	}
	_, err = s.Get(ctx, "app-config-3f9a", &metav1.GetOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("an ambiguous short name: %v, want a bad request", err)
	}
	for _, want := range []string{"app-config-3f9a2c1b (" + a.Name[:17] + "3f9a2c1b10", "app-config-3f9a2c1b (" + a.Name[:17] + "3f9a2c1b20"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ambiguity does not list %q:\n%v", want, err)
		}
	}
	if msg := err.Error(); strings.Contains(msg, "3f9a2c77") || strings.Contains(msg, "secrets") || strings.Count(msg, "\n  ") != 2 {
		t.Errorf("ambiguity lists or counts the Secret's attempt alice may not read:\n%s", msg)
	}
	for _, name := range []string{"app-config-3f9a2c77", "web-7e21aa04", "not-a-name"} {
		if _, err := s.Get(ctx, name, &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get %s in shop: %v, want not found", name, err)
		}
	}
	// A list across all namespaces (-A) selects by the short name of an
	// attempt in any namespace; one the caller may not read is a bad
	// request that says no more than a name that names nothing.
	all := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "alice"})
	sel, _ := fields.ParseSelector("metadata.name=web-7e21aa04")
	if x, err := s.fieldSelector(all, sel, at); err != nil || x.event == nil || x.event.Key[0] != 0x7e {
		t.Errorf("-A --field-selector metadata.name=web-7e21aa04: %+v, %v", x, err)
	}
	_, errHidden := s.fieldSelector(all, fields.OneTermEqualSelector("metadata.name", "app-config-3f9a2c77"), at)
	_, errNone := s.fieldSelector(all, fields.OneTermEqualSelector("metadata.name", "app-config-3f9a2c78"), at)
	if !apierrors.IsBadRequest(errHidden) || strings.ReplaceAll(errHidden.Error(), "77", "78") != errNone.Error() {
		t.Errorf("hidden: %v; absent: %v; want the same bad request", errHidden, errNone)
	}
}
