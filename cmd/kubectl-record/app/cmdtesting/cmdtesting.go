package cmdtesting

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Golden compares got with testdata/name, or rewrites it under -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// FieldSelectorServer serves empty lists of deletions, changes and
// attempts, and returns its URL and what it read: for each request, the
// resource and the requirements of its field selector as the
// kube-apiserver parses them (fields.ParseSelector, which sorts them),
// "deletions: actor.username=bob | since=-1h".
func FieldSelectorServer(t *testing.T) (url string, read func() []string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var reqs []string
		for _, q := range sel.Requirements() {
			reqs = append(reqs, q.Field+"="+q.Value)
		}
		mu.Lock()
		got = append(got, path.Base(r.URL.Path)+": "+strings.Join(reqs, " | "))
		mu.Unlock()
		kind := map[string]string{"deletions": "DeletionList", "changes": "ChangeList", "attempts": "AttemptList"}[path.Base(r.URL.Path)]
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":%q,"metadata":{},"items":[]}`, kind)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}
