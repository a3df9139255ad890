package aggregated

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/options-record/options-record/api/history"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestPerCallerCap: a caller past its cap gets 429 at once while its
// requests run; another caller, and discovery, are not held up.
func TestPerCallerCap(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	h := perCaller(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	}), history.NewCallerLimiter(2))
	req := func(name string, resource bool) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/apis/record.optionsrecord.io/v1alpha1/namespaces/prod/deletions", nil)
		ctx := genericapirequest.WithUser(r.Context(), &user.DefaultInfo{Name: name, UID: name + "-uid"})
		ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{IsResourceRequest: resource,
			APIGroup: "record.optionsrecord.io", APIVersion: "v1alpha1", Resource: "deletions"})
		return r.WithContext(ctx)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	serve := func(r *http.Request) {
		defer wg.Done()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		codes <- rec.Code
	}
	wg.Add(2)
	go serve(req("alice", true))
	go serve(req("alice", true))
	<-started
	<-started
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req("alice", true))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("alice's third request: %d %v", rec.Code, rec.Header())
	}
	wg.Add(2)
	go serve(req("bob", true))    // another caller
	go serve(req("alice", false)) // discovery
	<-started
	<-started
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a request within the caps: %d", c)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req("alice", true))
	if rec.Code != http.StatusOK {
		t.Errorf("alice after her requests ended: %d", rec.Code)
	}
}
