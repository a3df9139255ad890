package restoreapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/store"
)

// TestNewestEventsHeader: the lists of a cluster's record (changes, an
// object's history, deletions, failed mutations, a user's activity)
// answer with how late each audit source of that cluster is, another
// cluster's left out; the OpenAPI document answers without it.
func TestNewestEventsHeader(t *testing.T) {
	st := openRecord(t, store.Options{}, rec{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "app"})
	late := time.Date(2026, 11, 27, 1, 48, 0, 0, time.UTC)
	ctx := context.Background()
	if err := st.RecordProgress(ctx, "default", "firehose", late, late); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordProgress(ctx, "other", "webhook", late, late); err != nil {
		t.Fatal(err)
	}
	h := recordServer(t, st, denySecrets{}, Options{})
	for _, path := range []string{"/api/v1/clusters/default/changes", "/api/v1/clusters/default/deletions",
		"/api/v1/clusters/default/failed-mutations", "/api/v1/clusters/default/activity?user=alice",
		"/api/v1/clusters/default/history?resource=configmaps&namespace=prod&name=app", "/api/v1/openapi.json"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		v := rec.Header().Get(recordv1alpha1.NewestEventsHeader)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if path == "/api/v1/openapi.json" {
			if v != "" {
				t.Errorf("%s: header %q; want none", path, v)
			}
			continue
		}
		cluster, _, newest, ok := recordv1alpha1.ParseNewestEvents(v)
		if !ok || cluster != "default" || len(newest) != 1 || !newest["firehose"].Equal(late) {
			t.Errorf("%s: header %q; want default's firehose at %v only", path, v, late)
		}
	}
}

// TestNewestEventsHeaderNeedsClusterWideList: a caller who may read one
// namespace only learns nothing of the cluster's sources: no header, even
// on a list of rows they may read (the header's times are cluster-wide).
func TestNewestEventsHeaderNeedsClusterWideList(t *testing.T) {
	st := openRecord(t, store.Options{}, rec{verb: "create", user: "alice", resource: "configmaps", ns: "prod", name: "app"})
	late := time.Date(2026, 11, 27, 1, 48, 0, 0, time.UTC)
	if err := st.RecordProgress(context.Background(), "default", "firehose", late, late); err != nil {
		t.Fatal(err)
	}
	h := recordServer(t, st, namespaceOnly{"prod"}, Options{})
	for _, path := range []string{"/api/v1/clusters/default/changes", "/api/v1/clusters/default/deletions",
		"/api/v1/clusters/default/failed-mutations", "/api/v1/clusters/default/activity?user=nobody",
		"/api/v1/clusters/default/history?resource=configmaps&namespace=prod&name=app"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if v := rec.Header().Get(recordv1alpha1.NewestEventsHeader); v != "" {
			t.Errorf("%s, to a caller of namespace prod only: header %q; want none", path, v)
		}
	}
}

// namespaceOnly allows everything in one namespace, nothing else.
type namespaceOnly struct{ ns string }

func (n namespaceOnly) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetNamespace() == n.ns {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC rule", nil
}
