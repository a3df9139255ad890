package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/options-record/options-record/api/history"
)

// TestCheckSingleObject runs hostile recorded states through the check:
// each must be refused, with its reason, or read back as exactly the
// recorded object.
func TestCheckSingleObject(t *testing.T) {
	cm := Identity{Group: "", Kind: "ConfigMap", Namespace: "prod", Name: "app"}
	widget := Identity{Group: "example.com", Kind: "Widget", Namespace: "prod", Name: "w"}
	tests := []struct {
		name   string
		want   Identity
		state  string
		refuse string // part of the reason; empty: accepted
	}{
		{"a ConfigMap", cm, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"prod"},"data":{"a":"b"}}`, ""},
		{"a custom resource with a top-level items array", widget,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"prod"},"items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x","namespace":"kube-system"}}]}`,
			"items"},
		{"a custom resource with items: null (kubectl reads a List too)", widget,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"prod"},"items":null}`, "items"},
		{"a custom resource with items: {}", widget,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"prod"},"items":{}}`, "items"},
		{"a List kind", cm, `{"apiVersion":"v1","kind":"List","metadata":{"name":"app","namespace":"prod"},"items":[]}`, "items"},
		{"a ConfigMapList kind", cm, `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"name":"app","namespace":"prod"}}`, "ConfigMapList"},
		{"apiVersion spoofed to another group", widget,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"prod"}}`, "record holds"},
		{"a kind with a line break and an escape sequence", cm,
			`{"apiVersion":"v1","kind":"ConfigMap\n\u001b[2J","metadata":{"name":"app","namespace":"prod"}}`, `ConfigMap\n\x1b[2J`},
		{"kind spoofed", cm, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"app","namespace":"prod"}}`, "Secret"},
		{"another namespace", cm, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"kube-system"}}`, "kube-system"},
		{"another name", cm, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"prod"}}`, "other"},
		{"several documents in a value", cm,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"prod"},"data":{"x":"a\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: evil}\n"}}`, ""},
		{"a document end marker in a key", cm,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"prod"},"data":{"---\n...":"x"}}`, ""},
		{"control characters, NEL and DEL in values", cm,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"prod"},"data":{"x":"a\u0001b\u0085---\u007f\u2028c\ufffe"}}`, ""},
		{"a kind unknown to the record", Identity{Group: "", Namespace: "prod", Name: "app"},
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"prod"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := history.DecodeObject([]byte(tc.state))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckSingleObject(obj, tc.want)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNotObject) {
				t.Fatalf("err = %v, want ErrNotObject", err)
			}
			if !strings.Contains(err.Error(), tc.refuse) {
				t.Errorf("reason %q does not say %q", err, tc.refuse)
			}
			if strings.ContainsAny(err.Error(), "\n\x1b") {
				t.Errorf("the reason carries a recorded control character: %q", err)
			}
		})
	}
}
