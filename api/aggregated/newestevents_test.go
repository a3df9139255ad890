package aggregated

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestNewestEventsHeader: lists of the read resources carry the newest
// event of each source of the served cluster (from the record's
// source_progress), other clusters' left out; a get, a restore list or a
// discovery request carry none.
func TestNewestEventsHeader(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	late := time.Date(2026, 11, 27, 1, 48, 0, 0, time.UTC)
	if err := st.RecordProgress(ctx, "prod", "firehose", late, late.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordProgress(ctx, "dev", "webhook", late, late); err != nil {
		t.Fatal(err)
	}
	hist, err := history.New(history.Options{Reader: st, Progress: st, Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer()})
	if err != nil {
		t.Fatal(err)
	}
	h := withNewestEvents(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), hist, "prod", slog.New(slog.DiscardHandler))
	// A reader of one namespace: the chain let them list deletions there,
	// but the header, the whole cluster's, is not theirs.
	nsHist, err := history.New(history.Options{Reader: st, Progress: st, Authorizer: namespaceOnly{"team"}})
	if err != nil {
		t.Fatal(err)
	}
	nsH := withNewestEvents(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), nsHist, "prod", slog.New(slog.DiscardHandler))
	tests := []struct {
		name      string
		info      genericapirequest.RequestInfo
		want      bool
		namespace bool // asked by the reader of one namespace
	}{
		{"a namespace reader's list of deletions in it", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "deletions", Namespace: "team"}, false, true},
		{"a cluster reader's list of deletions in a namespace", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "deletions", Namespace: "team"}, true, false},
		{"list of deletions", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "deletions"}, true, false},
		{"list of clusterchanges", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "clusterchanges"}, true, false},
		{"get of a change", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "get", APIGroup: recordv1alpha1.GroupName, Resource: "changes", Name: "x"}, false, false},
		{"list of restores", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "restores"}, false, false},
		{"discovery", genericapirequest.RequestInfo{Verb: "get", Path: "/apis"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/apis/record.optionsrecord.io/v1alpha1/deletions", nil)
			ctx := genericapirequest.WithUser(genericapirequest.WithRequestInfo(r.Context(), &tt.info), &user.DefaultInfo{Name: "reader"})
			w := httptest.NewRecorder()
			if tt.namespace {
				nsH.ServeHTTP(w, r.WithContext(ctx))
			} else {
				h.ServeHTTP(w, r.WithContext(ctx))
			}
			v := w.Header().Get(recordv1alpha1.NewestEventsHeader)
			if !tt.want {
				if v != "" {
					t.Errorf("header %q; want none", v)
				}
				return
			}
			cluster, _, newest, ok := recordv1alpha1.ParseNewestEvents(v)
			if !ok || cluster != "prod" || len(newest) != 1 || !newest["firehose"].Equal(late) {
				t.Errorf("header %q: cluster %q, newest %v; want prod's firehose at %v only", v, cluster, newest, late)
			}
		})
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
