package restoreapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

const testToken = "0123456789abcdef-test-token"

// fakeReader serves canned rows and remembers the last queries.
type fakeReader struct {
	versions  []store.VersionRecord
	events    []store.EventRecord
	lastQuery store.ChangeQuery
}

func (f *fakeReader) Changes(_ context.Context, q store.ChangeQuery) ([]store.VersionRecord, error) {
	f.lastQuery = q
	var out []store.VersionRecord
	for _, v := range f.versions {
		if (q.UID == "" || v.UID == q.UID) && len(out) < q.Limit {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f *fakeReader) Version(_ context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error) {
	for i := range f.versions {
		if v := &f.versions[i]; v.Cluster == cluster && v.UID == uid && string(v.Key) == string(key) {
			return v, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeReader) StateBefore(context.Context, *store.VersionRecord) (*store.VersionRecord, error) {
	return nil, store.ErrNotFound
}

func (f *fakeReader) Newest(context.Context, string, string, string, string, string) (*store.VersionRecord, error) {
	return nil, store.ErrNotFound
}

func (f *fakeReader) VersionsByKeyRange(_ context.Context, q store.KeyRangeQuery) ([]store.VersionRecord, error) {
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

func (f *fakeReader) ObjectsAsOf(context.Context, store.AsOfQuery) ([]store.VersionRecord, error) {
	return nil, nil
}

func (f *fakeReader) ResourcesIn(context.Context, string, string, time.Time, int) ([]store.GroupResource, error) {
	return nil, nil
}

func (f *fakeReader) Deletions(context.Context, store.DeletionQuery) ([]store.Deletion, error) {
	return nil, nil
}

func (f *fakeReader) FailedMutations(context.Context, store.EventQuery) ([]store.EventRecord, error) {
	return nil, nil
}

func (f *fakeReader) FailedMutation(_ context.Context, cluster string, at time.Time, key []byte) (*store.EventRecord, error) {
	for i := range f.events {
		if e := &f.events[i]; e.Cluster == cluster && e.At.Equal(at) && bytes.Equal(e.Key, key) {
			return e, nil
		}
	}
	return nil, store.ErrNotFound
}

func (f *fakeReader) FailedByKeyRange(_ context.Context, q store.EventKeyRange) ([]store.EventRecord, error) {
	var out []store.EventRecord
	for _, e := range f.events {
		if e.Cluster == q.Cluster && bytes.Compare(q.Lo, e.Key) <= 0 && bytes.Compare(e.Key, q.Hi) <= 0 && len(out) < q.Limit &&
			(q.Namespace == nil || e.Namespace == *q.Namespace) && (q.Readable == "" || shortname.Readable(e.Name) == q.Readable) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeReader) Activity(context.Context, store.EventQuery) ([]store.EventRecord, error) {
	return nil, nil
}

// denySecrets is an authorizer that lets "reader" get everything but
// secrets.
type denySecrets struct{}

func (denySecrets) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "secrets" {
		return authorizer.DecisionNoOpinion, "no RBAC rule", nil
	}
	return authorizer.DecisionAllow, "", nil
}

type oneUser struct{}

func (oneUser) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: "reader"}}, true, nil
}

func newTestServer(t *testing.T, r *fakeReader) *Server {
	t.Helper()
	authn, authz, err := StaticToken(testToken)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, recordOptions{Reader: r, Authorizer: authz}, Options{Authenticator: authn})
}

// recordOptions are what a test server reads and who may read it.
type recordOptions struct {
	Reader interface {
		history.Reader
		restore.Reader
	}
	Authorizer authorizer.Authorizer
}

// newServer serves the API over the history and restore services of a
// record, in the standalone mode (no cluster).
func newServer(t *testing.T, ro recordOptions, o Options) *Server {
	t.Helper()
	progress, _ := ro.Reader.(history.ProgressReader) // the real record's; a fake reader has none
	hist, err := history.New(history.Options{Reader: ro.Reader, Progress: progress, Authorizer: ro.Authorizer})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := restore.New(restore.Options{History: hist, Reader: ro.Reader})
	if err != nil {
		t.Fatal(err)
	}
	o.History, o.Restore = hist, svc
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, ErrorDetail, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	data, _ := io.ReadAll(rec.Body)
	var e ErrorBody
	_ = json.Unmarshal(data, &e)
	return rec.Code, e.Error, string(data)
}

var key1 = strings.Repeat("ab", 32)

func testVersions() []store.VersionRecord {
	rv := int64(7)
	k := make([]byte, 32)
	for i := range k {
		k[i] = 0xab
	}
	return []store.VersionRecord{
		{Cluster: "default", UID: "u-cm", Key: k, ResourceVersion: &rv, Origin: "change", Verb: "update", ChangedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
			APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "prod", Name: "app", Complete: true, HasObject: true,
			Object:   []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"prod","uid":"u-cm"},"data":{"k":"v"}}`),
			Username: "bob"},
		{Cluster: "default", UID: "u-secret", Key: k, Origin: "change", Verb: "create", ChangedAt: time.Date(2026, 11, 21, 10, 1, 0, 0, time.UTC),
			APIVersion: "v1", Kind: "Secret", Resource: "secrets", Namespace: "prod", Name: "db", Complete: true, HasObject: true, Created: true,
			SecretDigested: true, Object: []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"p":"sha256:00"}}`),
			Username: "alice"},
	}
}

func TestBadParametersGetClearErrors(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeReader{versions: testVersions()})
	base := "/api/v1/clusters/default"
	tests := []struct {
		path string
		code int
		msg  string
	}{
		{base + "/changes?limit=0", 400, `limit="0": must be a whole number from 1 to 500`},
		{base + "/changes?limit=many", 400, `limit="many"`},
		{base + "/changes?since=yesterday", 400, `since="yesterday": want an RFC 3339 time`},
		{base + "/changes?since=2026-11-22T00:00:00Z&until=2026-11-21T00:00:00Z", 400, "since (2026-11-22T00:00:00Z) must be before until"},
		{base + "/changes?cursor=not-a-cursor", 400, "is not a cursor this API returned"},
		{base + "/changes?namespce=prod", 400, `unknown query parameter "namespce"`},
		{base + "/changes?verb=destroy", 400, `verb="destroy": must be one of create, update`},
		{base + "/changes?name=a&name=b", 400, `query parameter "name" given 2 times`},
		{base + "/history?resource=configmaps", 400, `query parameter "name" is required`},
		{base + "/activity", 400, `query parameter "user" is required`},
		{base + "/objects/u-cm/versions/xyz", 400, `version key "xyz": want the 64 hex digits`},
		{base + "/objects/u-cm/versions/" + key1 + "/diff?against=nope", 400, `against="nope": want a version id <uid>/<versionKey>`},
		{base + "/objects/u-cm/versions/" + key1 + "/diff?includeStatus=perhaps", 400, `includeStatus="perhaps": want true or false`},
		{base + "/objects/u-cm/versions/" + key1 + "?format=xml", 400, `format="xml": must be one of json, yaml`},
		{base + "/objects/u-other/versions/" + key1, 404, `no version u-other/`},
		{"/api/v1/nothing", 404, "no route GET /api/v1/nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			code, e, body := do(t, s, http.MethodGet, tt.path, "")
			if code != tt.code || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("GET %s = %d %s, want %d with %q", tt.path, code, body, tt.code, tt.msg)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeReader{})
	for _, auth := range []string{"", "Bearer wrong-token-wrong-token", "Basic abc"} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/clusters/default/changes", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d %s", auth, rec.Code, rec.Body)
		}
	}
	// The document is public.
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("openapi.json: %d, X-Content-Type-Options %q", rec.Code, rec.Header().Get("X-Content-Type-Options"))
	}
	if _, _, err := StaticToken("short"); err == nil {
		t.Error("a short static token was accepted")
	}
}

// A caller asking to act as someone else is refused, not served as itself:
// a restore that ignored the header would run with the token owner's rights
// while its caller believed otherwise.
func TestImpersonationIsRefused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeReader{versions: testVersions()})
	for _, h := range []string{"Impersonate-User", "impersonate-group", "Impersonate-Uid", "Impersonate-Extra-Scopes"} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/clusters/default/changes", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header[h] = []string{"alice"} // as sent, not canonicalized
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "impersonation") || strings.Contains(rec.Body.String(), "configmaps") {
			t.Errorf("%s: %d %s; want a 403 that says impersonation is not served", h, rec.Code, rec.Body)
		}
	}
	if code, _, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/changes", ""); code != http.StatusOK {
		t.Errorf("without impersonation: %d %s", code, body)
	}
}

func TestStandaloneIsReadOnly(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeReader{versions: testVersions()})
	code, e, _ := do(t, s, http.MethodPost, "/api/v1/clusters/default/objects/u-cm/versions/"+key1+"/restore", "")
	if code != http.StatusForbidden || !strings.Contains(e.Message, "standalone mode is read-only") {
		t.Errorf("restore in standalone mode: %d %+v", code, e)
	}
	code, _, _ = do(t, s, http.MethodPost, "/api/v1/clusters/default/restore-plans", `{"kind":"as-of"}`)
	if code != http.StatusForbidden {
		t.Errorf("plan in standalone mode: %d", code)
	}
}

func TestReadsAreAuthorizedPerObject(t *testing.T) {
	t.Parallel()
	s := newServer(t, recordOptions{Reader: &fakeReader{versions: testVersions()}, Authorizer: denySecrets{}}, Options{Authenticator: oneUser{}})
	code, e, _ := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-secret/versions/"+key1, "")
	if code != http.StatusNotFound || strings.Contains(e.Message, "secrets") || strings.Contains(e.Message, "prod") {
		t.Errorf("secret version: %d %+v; want a 404 that names nothing of it", code, e)
	}
	code, _, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/changes", "")
	var page history.Page[history.Version]
	if err := json.Unmarshal([]byte(body), &page); err != nil || code != 200 {
		t.Fatalf("changes: %d %s", code, body)
	}
	if len(page.Items) != 1 || page.Items[0].Resource != "configmaps" {
		t.Errorf("changes: the secret is not left out: %s", body)
	}
	code, _, body = do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-cm/versions/"+key1+"?format=yaml", "")
	if code != 200 || !strings.Contains(body, "resource: configmaps") || !strings.Contains(body, "k: v") {
		t.Errorf("YAML version: %d %s", code, body)
	}
}

func TestManifestOfADigestedSecretIsRefused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeReader{versions: testVersions()})
	code, e, _ := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-secret/versions/"+key1+"/manifest", "")
	if code != http.StatusUnprocessableEntity || !strings.Contains(e.Message, "holds digests (HMAC-SHA256)") {
		t.Errorf("digested secret manifest: %d %+v", code, e)
	}
	code, _, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-cm/versions/"+key1+"/manifest?format=yaml", "")
	if code != 200 || strings.Contains(body, "uid: u-cm") || !strings.Contains(body, "kind: ConfigMap") {
		t.Errorf("manifest: %d %s", code, body)
	}
}

// teamNamespaceOnly allows reading namespaces only in team-a, as a
// RoleBinding in team-a granting get on namespaces does: the apiserver
// authorizes a request for the Namespace object team-a as in team-a.
type teamNamespaceOnly struct{}

func (teamNamespaceOnly) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "namespaces" && a.GetNamespace() == "team-a" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC rule", nil
}

func TestNamespaceObjectsAreAuthorizedInThemselves(t *testing.T) {
	t.Parallel()
	k := make([]byte, 32)
	ns := func(uid, name string) store.VersionRecord {
		return store.VersionRecord{Cluster: "default", UID: uid, Key: k, Origin: "change", Verb: "update",
			ChangedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), APIVersion: "v1", Kind: "Namespace",
			Resource: "namespaces", Name: name, Complete: true, HasObject: true,
			Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `","uid":"` + uid + `"}}`)}
	}
	s := newServer(t, recordOptions{Reader: &fakeReader{versions: []store.VersionRecord{ns("u-a", "team-a"), ns("u-b", "team-b")}},
		Authorizer: teamNamespaceOnly{}}, Options{Authenticator: oneUser{}})
	code, _, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/changes", "")
	var page history.Page[history.Version]
	if err := json.Unmarshal([]byte(body), &page); err != nil || code != 200 {
		t.Fatalf("changes: %d %s", code, body)
	}
	if len(page.Items) != 1 || page.Items[0].UID != "u-a" {
		t.Errorf("changes listed %+v, want the Namespace team-a only", page.Items)
	}
	if code, _, _ := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-a/versions/"+strings.Repeat("00", 32), ""); code != http.StatusOK {
		t.Errorf("the Namespace team-a's version: %d, want 200", code)
	}
	// An object the caller may not read is answered as one that does not
	// exist: the answer names nothing of it.
	hidden := func(uid string) (int, string) {
		code, _, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/"+uid+"/versions/"+strings.Repeat("00", 32), "")
		return code, strings.ReplaceAll(body, uid, "UID")
	}
	code, body = hidden("u-b")
	if missingCode, missingBody := hidden("u-nonexistent"); code != http.StatusNotFound || body != missingBody || missingCode != code ||
		strings.Contains(body, "team-b") || strings.Contains(body, "namespaces") {
		t.Errorf("the Namespace team-b's version: %d %s; a version that does not exist: %d %s; want the same 404", code, body, missingCode, missingBody)
	}
	code, _, body = do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-b/history", "")
	if code != http.StatusNotFound || strings.Contains(body, "team-b") || strings.Contains(body, "namespaces") {
		t.Errorf("the Namespace team-b's history by uid: %d %s, want a 404 naming nothing of it", code, body)
	}
}

// TestSearchForUnreadableObjectsIsRefused: a search naming a resource and a
// namespace the caller may not read answers 403, not an empty page whose
// next cursor would tell that such objects exist.
func TestSearchForUnreadableObjectsIsRefused(t *testing.T) {
	t.Parallel()
	s := newServer(t, recordOptions{Reader: &fakeReader{versions: testVersions()}, Authorizer: denySecrets{}}, Options{Authenticator: oneUser{}})
	if code, e, _ := do(t, s, http.MethodGet, "/api/v1/clusters/default/changes?group=&resource=secrets&namespace=prod&name=db", ""); code != http.StatusForbidden {
		t.Errorf("search of secrets in prod: %d %+v, want 403", code, e)
	}
	if code, _, _ := do(t, s, http.MethodGet, "/api/v1/clusters/default/changes?group=&resource=configmaps&namespace=prod", ""); code != http.StatusOK {
		t.Errorf("search of configmaps in prod: %d, want 200", code)
	}
}

func (f *fakeReader) Objects(_ context.Context, cluster string, uids []string, keys [][]byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	for i := range uids {
		for _, v := range f.versions {
			if v.Cluster == cluster && v.UID == uids[i] && string(v.Key) == string(keys[i]) && v.Object != nil {
				out[store.ObjectID(v.UID, v.Key)] = v.Object
			}
		}
	}
	return out, nil
}

// TestManifestIsExactlyOneObject: a recorded state that kubectl would not
// read as exactly the recorded object (a custom resource with a top-level
// items array, which kubectl applies item by item; a kind or name that is
// not the record's) gets no manifest, with the reason.
func TestManifestIsExactlyOneObject(t *testing.T) {
	t.Parallel()
	vs := testVersions()
	widget := vs[0]
	widget.UID, widget.APIGroup, widget.APIVersion, widget.Kind, widget.Resource, widget.Name = "u-w", "example.com", "v1", "Widget", "widgets", "w"
	widget.Object = []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"prod"},` +
		`"items":[{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"pwned"}}]}`)
	spoofed := vs[0]
	spoofed.UID = "u-spoof"
	spoofed.Object = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"kube-system"}}`)
	s := newTestServer(t, &fakeReader{versions: append(vs, widget, spoofed)})
	for _, tc := range []struct{ uid, reason string }{
		{"u-w", "top-level items field"},
		{"u-spoof", `names "other" in namespace "kube-system"`},
	} {
		for _, format := range []string{"", "?format=yaml"} {
			code, e, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/"+tc.uid+"/versions/"+key1+"/manifest"+format, "")
			if code != http.StatusUnprocessableEntity || !strings.Contains(e.Message, tc.reason) {
				t.Errorf("%s manifest%s: %d %+v %s; want 422 saying %q", tc.uid, format, code, e, body, tc.reason)
			}
		}
	}
	if code, _, body := do(t, s, http.MethodGet, "/api/v1/clusters/default/objects/u-cm/versions/"+key1+"/manifest", ""); code != 200 {
		t.Errorf("a plain ConfigMap's manifest: %d %s", code, body)
	}
}

func (f *fakeReader) RequestObjects(context.Context, string, []store.EventKey, int) ([][]byte, error) {
	return nil, nil
}

// TestVersionByShortName: GET /versions/{name} answers the version a short
// name names among those the caller may read; the ConfigMap's and the
// Secret's versions share their key's digits, so the digits alone are
// ambiguous to a caller who may read both (both listed) and not to one
// who may not read the Secret (neither listed nor counted).
func TestVersionByShortName(t *testing.T) {
	t.Parallel()
	all := newTestServer(t, &fakeReader{versions: testVersions()})
	noSecrets := newServer(t, recordOptions{Reader: &fakeReader{versions: testVersions()}, Authorizer: denySecrets{}}, Options{Authenticator: oneUser{}})
	base := "/api/v1/clusters/default/versions/"

	code, _, body := do(t, all, http.MethodGet, base+"app-abababab", "")
	var v history.Version
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 || v.UID != "u-cm" || v.ShortName != "app-abababab" {
		t.Errorf("by short name: %d %s", code, body)
	}
	code, e, _ := do(t, all, http.MethodGet, base+"abababab", "")
	if code != 400 || !strings.Contains(e.Message, "app-abababab (u-cm."+key1+")") || !strings.Contains(e.Message, "db-abababab (u-secret."+key1+")") {
		t.Errorf("ambiguous: %d %+v", code, e)
	}
	code, _, body = do(t, noSecrets, http.MethodGet, base+"abababab", "")
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 || v.UID != "u-cm" {
		t.Errorf("the Secret hidden, the digits name the ConfigMap alone: %d %s", code, body)
	}
	code, e, _ = do(t, noSecrets, http.MethodGet, base+"db-abababab", "")
	if code != 404 || strings.Contains(e.Message, "secret") || strings.Contains(e.Message, "prod") {
		t.Errorf("a hidden version by short name: %d %+v; want a 404 that names nothing of it", code, e)
	}
	// ?against= takes a short name too.
	code, _, body = do(t, all, http.MethodGet, "/api/v1/clusters/default/objects/u-cm/versions/"+key1+"/diff?against=app-abab", "")
	if code != 200 || !strings.Contains(body, `"changes":[]`) {
		t.Errorf("diff against a short name: %d %s", code, body)
	}
}
