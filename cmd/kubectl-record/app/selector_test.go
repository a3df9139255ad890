package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/options-record/options-record/cmd/kubectl-record/app/ui"
)

// TestFieldSelectorValuesStayValues: a recorded name or a user holding
// "," and "=" (a Role may be named "a,object.name=deployer") is sent as
// one escaped value, by the verbs and by the page, and parsed by the
// server (as the kube-apiserver parses it, fields.ParseSelector, which
// sorts the requirements) as that
// one value: it cannot add a requirement that selects another object's
// history.
func TestFieldSelectorValuesStayValues(t *testing.T) {
	const hostile = `a,object.name=deployer\`
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
	defer srv.Close()
	record := []string{"--record-server", srv.URL, "--record-token", "t0ken"}

	var out, errOut bytes.Buffer
	if code := Main(append([]string{"deletions", "-n", "shop", "--user", hostile}, record...),
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != 0 {
		t.Fatalf("deletions: exit %d %s", code, errOut.String())
	}
	o := &options{config: genericclioptions.NewConfigFlags(true), recordServer: srv.URL, recordToken: "t0ken", ns: "shop"}
	if _, err := (&uiBackend{o}).Changes(context.Background(), ui.Query{Namespace: "shop", Since: 1e9, User: hostile, Name: hostile}); err != nil {
		t.Fatal(err)
	}
	tgt := &target{resource: schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, namespaced: true, name: hostile}
	sel, err := fields.ParseSelector(tgt.selector(field("since", "-1h")))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sel.RequiresExactMatch("object.name"); !ok || v != hostile || len(sel.Requirements()) != 4 {
		t.Errorf("a target's selector: %v", sel.Requirements())
	}
	want := []string{
		"deletions: actor.username=" + hostile,
		"changes: actor.username=" + hostile + " | object.name=" + hostile + " | since=-1s",
		"attempts: actor.username=" + hostile + " | object.name=" + hostile + " | since=-1s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
