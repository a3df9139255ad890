package restoreapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocumentAndServedRoutesAgree checks the OpenAPI document against the
// API from the outside, as a client sees both: over real HTTP, the document
// as served (not the table it and the router are built from, nor the
// router's own listing). A route is "not served" when the API answers that
// it has no such route (404 "no route") or that the method is not allowed.
//
//   - every documented operation is served;
//   - every request probed that the API serves is documented. A client
//     cannot list what a server serves, so the probes are the neighbours
//     of the documented surface — every method on each documented path,
//     each path's prefixes, each path one segment deeper — and the paths
//     servers commonly add (debug, metrics, health, other API documents).
//     A route elsewhere is not found by this test.
func TestDocumentAndServedRoutesAgree(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newTestServer(t, &fakeReader{versions: testVersions()}))
	defer srv.Close()
	call := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	notServed := func(code int, body string) bool {
		return code == http.StatusMethodNotAllowed || code == http.StatusNotFound && strings.Contains(body, "no route") ||
			strings.Contains(body, "is not allowed on")
	}

	code, body := call(http.MethodGet, apiPrefix+"/openapi.json")
	if code != http.StatusOK {
		t.Fatalf("openapi.json: %d %s", code, body)
	}
	var doc struct {
		Servers []struct{ URL string }
		Paths   map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	// Paths are relative to the server URL when it carries the prefix.
	prefix := ""
	if len(doc.Servers) > 0 && strings.HasSuffix(doc.Servers[0].URL, apiPrefix) {
		prefix = apiPrefix
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	param := regexp.MustCompile(`\{[^}]+\}`)
	type op struct {
		method string
		path   *regexp.Regexp
	}
	var documented []op
	var paths []string // documented paths, parameters filled
	for path, ops := range doc.Paths {
		parts := param.Split(prefix+path, -1)
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, `[^/]+`) + "$")
		filled := param.ReplaceAllStringFunc(prefix+path, func(p string) string {
			if p == "{cluster}" {
				return "default"
			}
			return "x"
		})
		paths = append(paths, filled)
		for method := range ops {
			if m := strings.ToUpper(method); slices.Contains(methods, m) {
				documented = append(documented, op{m, re})
			}
		}
	}
	if len(documented) < 10 {
		t.Fatalf("only %d operations documented: nothing is checked", len(documented))
	}
	isDocumented := func(method, path string) bool {
		return slices.ContainsFunc(documented, func(o op) bool { return o.method == method && o.path.MatchString(path) })
	}

	// Every documented operation is served.
	for _, path := range paths {
		for _, m := range methods {
			if !isDocumented(m, path) {
				continue
			}
			if code, body := call(m, path); notServed(code, body) {
				t.Errorf("%s %s is documented but not served: %d %s", m, path, code, body)
			}
		}
	}

	// Every probe served is documented.
	probes := map[string]bool{}
	for _, path := range paths {
		probes[path] = true
		probes[path+"/x"] = true
		for i := range len(path) {
			if path[i] == '/' {
				probes[path[:i]] = true
				probes[path[:i]+"/"] = true
			}
		}
	}
	for _, p := range []string{"/", "/metrics", "/healthz", "/readyz", "/livez", "/version", "/debug/vars", "/debug/pprof/",
		"/openapi/v2", "/openapi/v3", "/swagger.json", apiPrefix + "/openapi.yaml", apiPrefix + "/docs", "/api/v2"} {
		probes[p] = true
	}
	probed := 0
	for p := range probes {
		for _, m := range methods {
			if isDocumented(m, p) {
				continue
			}
			probed++
			if code, body := call(m, p); !notServed(code, body) {
				t.Errorf("%s %s is served (%d %.200s) but not documented", m, p, code, body)
			}
		}
	}
	if probed < 100 {
		t.Fatalf("only %d probes: nothing is checked", probed)
	}
}
