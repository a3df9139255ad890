package filter

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/options-record/options-record/api/v1alpha1"
)

const orcHeader = "apiVersion: optionsrecord.io/v1alpha1\nkind: OptionsRecordController\n"

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []string // namespace/name of the objects
	}{
		{"empty", "", nil},
		{"only comments and separators", "# nothing\n---\n---\n# still nothing\n", nil},
		{"one object", orcHeader + "metadata: {name: a}\n", []string{"/a"}},
		{"leading separator", "---\n" + orcHeader + "metadata: {name: a, namespace: x}\n", []string{"x/a"}},
		{"two objects", orcHeader + "metadata: {name: a}\n---\n" + orcHeader + "metadata: {name: b}\n", []string{"/a", "/b"}},
		{"JSON", `{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController","metadata":{"name":"a"},"spec":{"verbs":["delete"]}}`, []string{"/a"}},
		{"typed list", "apiVersion: optionsrecord.io/v1alpha1\nkind: OptionsRecordControllerList\nitems:\n- metadata: {name: a}\n- " +
			"apiVersion: optionsrecord.io/v1alpha1\n  kind: OptionsRecordController\n  metadata: {name: b}\n", []string{"/a", "/b"}},
		{"kubectl List", "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n- " +
			"apiVersion: optionsrecord.io/v1alpha1\n  kind: OptionsRecordController\n  metadata: {name: a, namespace: ns}\n" +
			"  status: {recordedEvents: 3}\n", []string{"ns/a"}},
		{"separator with comment", orcHeader + "metadata: {name: a}\n--- # next\n" + orcHeader + "metadata: {name: b}\n", []string{"/a", "/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := Parse([]byte(tt.input))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, o := range objs {
				if o.APIVersion != v1alpha1.GroupVersion.String() || o.Kind != v1alpha1.Kind {
					t.Errorf("object %s has apiVersion %q, kind %q", o.Name, o.APIVersion, o.Kind)
				}
				got = append(got, o.Namespace+"/"+o.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("objects mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	valid := orcHeader + "metadata: {name: ok}\n"
	tests := []struct {
		name  string
		input string
		want  []string // the error must contain each
	}{
		{"wrong kind", valid + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			[]string{"document 2", `"apps/v1"`, `"Deployment"`, "want apiVersion optionsrecord.io/v1alpha1, kind OptionsRecordController"}},
		{"wrong version", "apiVersion: optionsrecord.io/v1\nkind: OptionsRecordController\nmetadata: {name: a}\n",
			[]string{"document 1", `"optionsrecord.io/v1"`}},
		{"no type", "metadata: {name: a}\n", []string{"document 1", `apiVersion ""`}},
		{"empty documents are not counted", "---\n# c\n---\n" + valid + "---\n" + orcHeader + "metadata: {name: a}\nspec: {verb: [delete]}\n",
			[]string{"document 2", `unknown field "spec.verb"`}},
		{"field names are case-sensitive", orcHeader + "metadata: {name: a}\nspec: {Verbs: [delete]}\n",
			[]string{"document 1", `unknown field "spec.Verbs"`}},
		{"duplicate field", orcHeader + "metadata: {name: a}\nspec:\n  verbs: [delete]\n  verbs: [create]\n",
			[]string{"document 1", "verbs"}},
		{"wrong type", orcHeader + "metadata: {name: a}\nspec: {users: alice}\n", []string{"document 1"}},
		{"not an object", "- a\n- b\n", []string{"document 1", "not a Kubernetes object"}},
		{"bad YAML", orcHeader + "metadata: {name: a\n", []string{"document 1"}},
		{"bad separator", valid + "--- x\n" + valid, []string{"document 1", "separator"}},
		{"bad list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
			[]string{"document 1", "item 0", `"ConfigMap"`}},
		{"bad typed list item", "apiVersion: optionsrecord.io/v1alpha1\nkind: OptionsRecordControllerList\nitems:\n- metadata: {name: a}\n  spek: {}\n",
			[]string{"document 1", `unknown field "items[0].spek"`}},
		{"every error", "kind: X\n---\nkind: Z\n", []string{"document 1", `"X"`, "document 2", `"Z"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := Parse([]byte(tt.input))
			if err == nil {
				t.Fatalf("Parse succeeded with %d objects, want an error", len(objs))
			}
			if objs != nil {
				t.Errorf("Parse returned objects with an error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	objs, err := LoadFile(filepath.Join("testdata", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 4 {
		t.Fatalf("LoadFile returned %d objects, want 4", len(objs))
	}
	prod := objs[0].Spec
	if prod.IgnoreStatusOnlyChanges == nil || !*prod.IgnoreStatusOnlyChanges || prod.Retention == nil || prod.Retention.Hours() != 720 {
		t.Errorf("prod-apps spec decoded as %+v", prod)
	}

	_, err = LoadFile(filepath.Join("testdata", "does-not-exist.yaml"))
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("LoadFile of a missing file: %v, want an error naming it", err)
	}
	_, err = LoadFile(filepath.Join("testdata", "events", "get-secret.json"))
	if err == nil || !strings.Contains(err.Error(), "get-secret.json") || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("LoadFile of an audit event: %v, want an error naming the file and document", err)
	}
}
