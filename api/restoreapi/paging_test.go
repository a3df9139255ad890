package restoreapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/store"
)

// hiddenRecord: in prod, bob's ConfigMap app (oldest) and late (newest)
// around eve's Secrets, which "reader" may not get (denySecrets): created,
// deleted, and deletes refused.
func hiddenRecord() []rec {
	r := []rec{{verb: "create", user: "bob", resource: "configmaps", ns: "prod", name: "app"}}
	for i, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		d := time.Duration(i) * time.Second
		r = append(r,
			rec{verb: "create", user: "eve", resource: "secrets", ns: "prod", name: n, at: time.Minute + d},
			rec{verb: "delete", user: "eve", resource: "secrets", ns: "prod", name: n, at: 2*time.Minute + d},
			rec{verb: "delete", user: "eve", resource: "secrets", ns: "prod", name: n, at: 3*time.Minute + d, code: 403})
	}
	return append(r, rec{verb: "create", user: "bob", resource: "configmaps", ns: "prod", name: "late", at: 10 * time.Minute})
}

// TestPagesTellNothingOfHiddenRows: through the HTTP API on a real record,
// the pages of every list show only what the caller may read, and their
// next cursors only its progress: no page is empty with a next cursor, a
// page followed by hidden rows only has none, and the readable rows behind
// hidden ones are reached.
func TestPagesTellNothingOfHiddenRows(t *testing.T) {
	t.Parallel()
	st := openRecord(t, store.Options{}, hiddenRecord()...)
	h := recordServer(t, st, denySecrets{}, Options{})
	base := "/api/v1/clusters/default"
	since := url.QueryEscape(rt0.Add(30 * time.Second).Format(time.RFC3339))
	tests := []struct {
		name, path string
		want       []string // names of the items, page after page
	}{
		{"changes of hidden objects only", "/changes?namespace=prod&resource=secrets", nil},
		{"deletions of hidden objects only", "/deletions?namespace=prod", nil},
		{"failed mutations of hidden objects only", "/failed-mutations?namespace=prod", nil},
		{"activity on hidden objects only", "/activity?user=eve", nil},
		{"a readable change behind hidden ones", "/changes?namespace=prod&until=" + url.QueryEscape(rt0.Add(5*time.Minute).Format(time.RFC3339)), []string{"app"}},
		{"only hidden rows after the page", "/changes?namespace=prod&since=" + since, []string{"late"}},
		{"hidden rows between two pages", "/changes?namespace=prod", []string{"late", "app"}},
		{"as of a time, page after page", "/changes?namespace=prod&asOf=" + url.QueryEscape(rt0.Add(11*time.Minute).Format(time.RFC3339)), []string{"app", "late"}},
		{"as of a time, hidden objects after the page", "/changes?namespace=prod&asOf=" + url.QueryEscape(rt0.Add(90*time.Second).Format(time.RFC3339)), []string{"app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			path := base + tt.path + "&limit=1"
			for range 10 {
				code, _, body := do(t, h, http.MethodGet, path, "")
				var page struct {
					Items []struct {
						Name    string `json:"name"`
						Version *struct {
							Name string `json:"name"`
						} `json:"version"`
					} `json:"items"`
					Next string `json:"next"`
				}
				if err := json.Unmarshal([]byte(body), &page); err != nil || code != http.StatusOK {
					t.Fatalf("GET %s: %d %s", path, code, body)
				}
				if len(page.Items) == 0 && page.Next != "" {
					t.Fatalf("GET %s: an empty page with a next cursor tells that hidden rows follow: %s", path, body)
				}
				for _, it := range page.Items {
					n := it.Name
					if it.Version != nil {
						n = it.Version.Name
					}
					got = append(got, n)
				}
				if page.Next == "" {
					break
				}
				path = base + tt.path + "&limit=1&cursor=" + page.Next
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("%s: items %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

// TestListRefusalsSayOnlyTheCallersRights: every list filtered down to
// objects the caller may not get is refused, whether any exist or not.
func TestListRefusalsSayOnlyTheCallersRights(t *testing.T) {
	t.Parallel()
	st := openRecord(t, store.Options{}, hiddenRecord()...)
	h := recordServer(t, st, denySecrets{}, Options{})
	for _, op := range []string{"changes", "deletions", "failed-mutations"} {
		for _, ns := range []string{"prod", "empty"} {
			path := "/api/v1/clusters/default/" + op + "?group=&resource=secrets&namespace=" + ns
			code, e, _ := do(t, h, http.MethodGet, path, "")
			if code != http.StatusForbidden || e.Message != `forbidden: user "reader" cannot get secrets in the namespace "`+ns+`" (no RBAC rule)` {
				t.Errorf("GET %s = %d %q, want 403 naming only the caller's request", path, code, e.Message)
			}
		}
		path := "/api/v1/clusters/default/" + op + "?group=&resource=configmaps&namespace=prod"
		if code, _, body := do(t, h, http.MethodGet, path, ""); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
}

// TestPageScanIsBounded: a page reads at most history.MaxScanRows rows. Behind that
// many rows the caller may not read, the list ends as the record's end
// would (an empty page, no next), and a narrower request finds what lies
// behind them.
func TestPageScanIsBounded(t *testing.T) {
	t.Parallel()
	r := []rec{{verb: "create", user: "bob", resource: "configmaps", ns: "prod", name: "behind"}}
	for i := range history.MaxScanRows {
		r = append(r, rec{verb: "create", user: "eve", resource: "secrets", ns: "prod", name: "s" + strconv.Itoa(i), at: time.Minute + time.Duration(i)*time.Millisecond})
	}
	st := openRecord(t, store.Options{}, r...)
	h := recordServer(t, st, denySecrets{}, Options{})
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/api/v1/clusters/default/changes?namespace=prod", 0},
		{"/api/v1/clusters/default/changes?namespace=prod&resource=configmaps", 1},
	} {
		code, _, body := do(t, h, http.MethodGet, tt.path, "")
		var page history.Page[history.Version]
		if err := json.Unmarshal([]byte(body), &page); err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", tt.path, code, body)
		}
		if len(page.Items) != tt.want || page.Next != "" {
			t.Errorf("GET %s: %d items, next %q; want %d items and no next", tt.path, len(page.Items), page.Next, tt.want)
		}
	}
}

// onlyConfigMapApp grants what a Role with resourceNames does: get on the
// ConfigMap prod/app, and nothing else.
type onlyConfigMapApp struct{}

func (onlyConfigMapApp) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() == "get" && a.GetResource() == "configmaps" && a.GetNamespace() == "prod" && a.GetName() == "app" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// TestHistoryByResourceNames: a caller who may get one object by its name
// (a Role's resourceNames) reads that object's history, by name and by
// uid, and nothing else.
func TestHistoryByResourceNames(t *testing.T) {
	t.Parallel()
	st := openRecord(t, store.Options{}, hiddenRecord()...)
	h := recordServer(t, st, onlyConfigMapApp{}, Options{})
	base := "/api/v1/clusters/default"
	for _, tt := range []struct {
		path  string
		code  int
		items int
	}{
		{"/history?resource=configmaps&namespace=prod&name=app", http.StatusOK, 1},
		{"/objects/uid-prod-configmaps-app/history", http.StatusOK, 1},
		{"/history?resource=configmaps&namespace=prod&name=late", http.StatusForbidden, 0},
		{"/objects/uid-prod-configmaps-late/history", http.StatusNotFound, 0},
		{"/changes?namespace=prod", http.StatusOK, 0},
	} {
		code, _, body := do(t, h, http.MethodGet, base+tt.path, "")
		var page struct {
			Items []json.RawMessage `json:"items"`
		}
		_ = json.Unmarshal([]byte(body), &page)
		if code != tt.code || len(page.Items) != tt.items {
			t.Errorf("GET %s: %d with %d items, want %d with %d: %s", tt.path, code, len(page.Items), tt.code, tt.items, body)
		}
	}
}
