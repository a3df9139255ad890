package restoreapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestDocumentAndRouterAgree checks the OpenAPI document against the
// router without the table both are built from: the paths and methods the
// served document lists are the routes chi serves, and each documented
// operation reaches a handler (it is never answered "no route" or "method
// not allowed").
func TestDocumentAndRouterAgree(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeReader{versions: testVersions()})
	code, _, body := do(t, s, http.MethodGet, apiPrefix+"/openapi.json", "")
	if code != http.StatusOK {
		t.Fatalf("openapi.json: %d", code)
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
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
				documented = append(documented, strings.ToUpper(method)+" "+prefix+path)
			}
		}
	}
	var served []string
	if err := chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served = append(served, method+" "+strings.TrimSuffix(route, "/"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented and served differ:\ndocumented %q\nserved     %q", documented, served)
	}
	if len(documented) < 10 {
		t.Fatalf("only %d operations documented: nothing is checked", len(documented))
	}
	// Every documented operation reaches its handler.
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, op := range documented {
		method, path, _ := strings.Cut(op, " ")
		path = param.ReplaceAllStringFunc(path, func(p string) string {
			if p == "{cluster}" {
				return "default"
			}
			return "x"
		})
		_, e, _ := do(t, s, method, path, "{}")
		if strings.Contains(e.Message, "no route") || strings.Contains(e.Message, "is not allowed on") {
			t.Errorf("%s %s is documented but not served: %s", method, path, e.Message)
		}
	}
}
