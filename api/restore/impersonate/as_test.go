package impersonate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
)

// TestAsSendsTheWholeIdentity: every request of the client As returns
// impersonates the caller whole — user, uid, groups and every extra with
// all its values — as the Impersonate-* headers the kube-apiserver reads
// (the contract: the cluster's RBAC, admission and audit log see what the
// headers say). A uid or an extra dropped would let a restore run as
// someone the cluster cannot tell from another user of the same name, or
// without the scopes its authenticator gave.
func TestAsSendsTheWholeIdentity(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"shop","resourceVersion":"7"}}`))
	}))
	defer srv.Close()

	k := newAccess(&rest.Config{Host: srv.URL}, nil)
	caller := &user.DefaultInfo{
		Name:   "system:serviceaccount:shop:deployer",
		UID:    "5f0c-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"},
		Extra: map[string][]string{
			"authentication.kubernetes.io/credential-id": {"JTI=abc"},
			"scopes.example.com/with space":              {"a", "b"},
		},
	}
	c, err := k.As(caller)
	if err != nil {
		t.Fatal(err)
	}
	ri := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop")
	if _, err := ri.Get(context.Background(), "app", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	h := got[0]
	want := map[string][]string{
		"Impersonate-User":  {caller.Name},
		"Impersonate-Uid":   {caller.UID},
		"Impersonate-Group": caller.Groups,
		"Impersonate-Extra-Authentication.kubernetes.io%2fcredential-Id": {"JTI=abc"},
		"Impersonate-Extra-Scopes.example.com%2fwith%20space":            {"a", "b"},
	}
	gotImp := map[string][]string{}
	for k, v := range h {
		if len(k) > len("Impersonate-") && k[:len("Impersonate-")] == "Impersonate-" {
			v = slices.Clone(v)
			gotImp[k] = v
		}
	}
	if d := cmp.Diff(want, gotImp); d != "" {
		t.Errorf("Impersonate-* headers (-want +got):\n%s", d)
	}
}

// TestAsRefusesNoCaller: without a caller there is no one to act as, and
// never the sink itself.
func TestAsRefusesNoCaller(t *testing.T) {
	k := newAccess(&rest.Config{Host: "http://127.0.0.1:1"}, nil)
	if _, err := k.As(nil); err == nil {
		t.Fatal("As(nil) gave a client: it would act with the sink's own rights")
	}
}
