package restoreapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
)

// The YAML manifest is made for `kubectl apply -f -`: no recorded string in
// its comment header may end a comment line and start a document of its own.
func TestManifestHeaderCannotInjectYAML(t *testing.T) {
	t.Parallel()
	crb := "\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwned}\n" +
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
		"subjects: [{kind: User, name: mallory, apiGroup: rbac.authorization.k8s.io}]\n"
	breaks := []string{"\n", "\r", "\r\n", "\u0085", "\u2028", "\u2029", "\x0b", "\x0c"}
	for _, br := range breaks {
		hostile := strings.ReplaceAll(crb, "\n", br)
		v := &history.Version{Kind: "ConfigMap" + hostile, Namespace: "prod" + hostile, Name: "app" + hostile, ID: "uid/key" + hostile,
			Verb: "update" + hostile, Actor: &history.Actor{Username: "mallory" + hostile}, ChangedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
		dropped := []restore.DroppedOwner{{Kind: "Deployment" + hostile, Name: "x" + hostile, UID: "u" + hostile, Reason: "owner gone" + hostile}}
		hdr := manifestHeader(v, dropped)

		lines := strings.Split(strings.TrimSuffix(string(hdr), "\n"), "\n")
		if len(lines) != 2 {
			t.Errorf("line break %q: header has %d lines, want 2:\n%s", br, len(lines), hdr)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "# ") || strings.ContainsAny(l, "\r\u0085\u2028\u2029\x0b\x0c") {
				t.Errorf("line break %q: header line %q is not a plain comment line", br, l)
			}
		}
		body, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "app", "namespace": "prod"}, "data": map[string]any{"k": crb}})
		if err != nil {
			t.Fatal(err)
		}
		docs := yamlDocuments(t, append(hdr, body...))
		if len(docs) != 1 || docs[0]["kind"] != "ConfigMap" {
			t.Errorf("line break %q: the manifest reads as %d documents: %v", br, len(docs), docs)
		}
	}
}

// yamlDocuments splits a multi-document YAML stream as kubectl does.
func yamlDocuments(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("document %q: %v", doc, err)
		}
		if m != nil {
			docs = append(docs, m)
		}
	}
}

// Every string of a YAML answer reads back as it was, as kubectl decodes it
// (sigs.k8s.io/yaml folds a raw NEL into a space, and fails on NEL "---").
func TestYAMLKeepsEveryString(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"a\u0085b", "a\u0085---\u0085kind: Secret", "\u0085", "a\u2028b\u2029c", "x\ny\r\nz", "tab\there", "\x00\x7f", "# not a comment", "---", "csi\u009b31m", "\ufffe\uffff", "'\"", "café ☕"} {
		out, err := toYAML(map[string]any{"data": map[string]any{"k": v}})
		if err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		docs := yamlDocuments(t, out)
		if len(docs) != 1 {
			t.Errorf("%q: %d documents in %q", v, len(docs), out)
			continue
		}
		if got := docs[0]["data"].(map[string]any)["k"]; got != v {
			t.Errorf("%q reads back as %q from %q", v, got, out)
		}
	}
}

// TestManifestHeaderNamesABaselineAsRestoresDo: a baseline's manifest
// names its author with the one word the restore messages use
// (history.BaselineAuthor, which restorable.Author gives too), and a user
// by their name.
func TestManifestHeaderNamesABaselineAsRestoresDo(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		actor *history.Actor
		want  string
	}{
		{nil, `by "(baseline)" at`},
		{&history.Actor{}, `by "(baseline)" at`},
		{&history.Actor{Username: "bob"}, `by "bob" at`},
	} {
		v := &history.Version{Kind: "ConfigMap", Namespace: "prod", Name: "app", ID: "u/k", Verb: "baseline", Actor: c.actor, ChangedAt: at}
		if hdr := string(manifestHeader(v, nil)); !strings.Contains(hdr, c.want) || history.BaselineAuthor != "(baseline)" {
			t.Errorf("actor %+v: header %q, want %q", c.actor, hdr, c.want)
		}
	}
}
