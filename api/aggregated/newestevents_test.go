package aggregated

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
	tests := []struct {
		name string
		info genericapirequest.RequestInfo
		want bool
	}{
		{"list of deletions", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "deletions"}, true},
		{"list of clusterchanges", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "clusterchanges"}, true},
		{"get of a change", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "get", APIGroup: recordv1alpha1.GroupName, Resource: "changes", Name: "x"}, false},
		{"list of restores", genericapirequest.RequestInfo{IsResourceRequest: true, Verb: "list", APIGroup: recordv1alpha1.GroupName, Resource: "restores"}, false},
		{"discovery", genericapirequest.RequestInfo{Verb: "get", Path: "/apis"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/apis/record.optionsrecord.io/v1alpha1/deletions", nil)
			r = r.WithContext(genericapirequest.WithRequestInfo(r.Context(), &tt.info))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
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
