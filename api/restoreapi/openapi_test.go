package restoreapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// GoldenOpenAPI is the committed OpenAPI document; the e2e tests compare
// the served one to it too.
const GoldenOpenAPI = "testdata/openapi.json"

// TestOpenAPIGolden keeps testdata/openapi.json equal to the document the
// API serves. Refresh it with go test ./api/restoreapi -run OpenAPI -update.
func TestOpenAPIGolden(t *testing.T) {
	s := newTestServer(t, &fakeReader{})
	got := s.openapi
	if *update {
		if err := os.WriteFile(GoldenOpenAPI, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(GoldenOpenAPI)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("the OpenAPI document differs from %s; run go test ./api/restoreapi -run OpenAPI -update and review the diff:\n%s",
			GoldenOpenAPI, cmp.Diff(string(want), string(got)))
	}
}

// TestOpenAPIMatchesRoutes fails when a route of the router is missing from
// the document, or the document describes a route the router lacks.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := newTestServer(t, &fakeReader{})
	routes := map[string]bool{}
	err := chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes[method+" "+strings.TrimSuffix(route, "/")] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	data, err := os.ReadFile(filepath.Clean(GoldenOpenAPI))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	if diff := cmp.Diff(keys(documented), keys(routes)); diff != "" {
		t.Errorf("routes (-documented +served):\n%s", diff)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
