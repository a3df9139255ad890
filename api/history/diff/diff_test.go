package diff

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func load(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestDeploymentContainerInsertedInTheMiddle: containers and env are
// matched by name, as the apiserver matches them: the inserted container
// is one add, the env var put first one add, and nothing else moves
// (testdata/deployment.golden). Applied in order, the changes turn the
// state before into the state after.
func TestDeploymentContainerInsertedInTheMiddle(t *testing.T) {
	before, after := load(t, "deployment-before.yaml"), load(t, "deployment-after.yaml")
	got := Diff(before, after, Options{})
	out, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, '\n')
	path := filepath.Join("testdata", "deployment.golden")
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("diff:\n%s\nwant:\n%s", out, want)
	}
	applied := apply(t, withoutNoise(before, Options{}), got)
	if d := Diff(applied, after, Options{}); len(d) != 0 {
		t.Errorf("the changes applied in order do not give the state after: %+v", d)
	}
}

// TestListsWithoutKeysArePositional: a custom resource's lists, and lists
// whose elements lack the key or share it, are compared by position; a
// reordered keyed list too (a patch of moves would not be one).
func TestListsWithoutKeysArePositional(t *testing.T) {
	for name, c := range map[string]struct {
		from, to map[string]any
		want     []Change
	}{
		"custom resource": {
			from: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]any{"items": []any{
				map[string]any{"name": "a"}, map[string]any{"name": "b"}}}},
			to: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]any{"items": []any{
				map[string]any{"name": "x"}, map[string]any{"name": "a"}, map[string]any{"name": "b"}}}},
			want: []Change{{Op: "replace", Path: "/spec/items/0/name", From: "a", To: "x"},
				{Op: "replace", Path: "/spec/items/1/name", From: "b", To: "a"},
				{Op: "add", Path: "/spec/items/2", To: map[string]any{"name": "b"}}},
		},
		"duplicate keys": {
			from: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{
				map[string]any{"name": "a", "image": "1"}, map[string]any{"name": "a", "image": "2"}}}},
			to: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{
				map[string]any{"name": "a", "image": "2"}}}},
			want: []Change{{Op: "replace", Path: "/spec/containers/0/image", From: "1", To: "2"},
				{Op: "remove", Path: "/spec/containers/1", From: map[string]any{"name": "a", "image": "2"}}},
		},
		"reordered": {
			from: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{
				map[string]any{"name": "a"}, map[string]any{"name": "b"}}}},
			to: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"containers": []any{
				map[string]any{"name": "b"}, map[string]any{"name": "a"}}}},
			want: []Change{{Op: "replace", Path: "/spec/containers/0/name", From: "a", To: "b"},
				{Op: "replace", Path: "/spec/containers/1/name", From: "b", To: "a"}},
		},
		"keyed removal and addition": {
			from: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"ports": []any{
				map[string]any{"port": int64(80)}, map[string]any{"port": int64(443)}, map[string]any{"port": int64(9090)}}}},
			to: map[string]any{"apiVersion": "v1", "kind": "Service", "spec": map[string]any{"ports": []any{
				map[string]any{"port": float64(80)}, map[string]any{"port": float64(8443)}, map[string]any{"port": float64(9090)}}}},
			want: []Change{{Op: "remove", Path: "/spec/ports/1", From: map[string]any{"port": int64(443)}},
				{Op: "add", Path: "/spec/ports/1", To: map[string]any{"port": float64(8443)}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := Diff(c.from, c.to, Options{})
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(c.want)
			if !bytes.Equal(g, w) {
				t.Errorf("got  %s\nwant %s", g, w)
			}
			if d := Diff(apply(t, c.from, got), c.to, Options{}); len(d) != 0 {
				t.Errorf("applied: %+v", d)
			}
		})
	}
}

func TestServerFieldsAndStatus(t *testing.T) {
	from := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "1", "uid": "u"}, "status": map[string]any{"a": "1"}}
	to := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "2", "uid": "u"}, "status": map[string]any{"a": "2"}}
	if d := Diff(from, to, Options{}); len(d) != 0 {
		t.Errorf("default: %+v, want nothing", d)
	}
	if d := Diff(from, to, Options{IncludeStatus: true, IncludeServerFields: true}); len(d) != 2 {
		t.Errorf("with status and server fields: %+v, want 2", d)
	}
}

// apply applies changes in order as a JSON patch (add, remove, replace).
func apply(t *testing.T, obj map[string]any, changes []Change) map[string]any {
	t.Helper()
	data, _ := json.Marshal(obj)
	var doc any
	_ = json.Unmarshal(data, &doc)
	for _, c := range changes {
		doc = patch(t, doc, splitPointer(c.Path), c)
	}
	out, _ := doc.(map[string]any)
	return out
}

func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	var out []string
	for _, s := range bytes.Split([]byte(p[1:]), []byte("/")) {
		out = append(out, string(bytes.ReplaceAll(bytes.ReplaceAll(s, []byte("~1"), []byte("/")), []byte("~0"), []byte("~"))))
	}
	return out
}

func patch(t *testing.T, doc any, path []string, c Change) any {
	t.Helper()
	value := func() any { data, _ := json.Marshal(c.To); var v any; _ = json.Unmarshal(data, &v); return v }
	if len(path) == 0 {
		if c.Op == "remove" {
			return nil
		}
		return value()
	}
	switch d := doc.(type) {
	case map[string]any:
		if len(path) == 1 {
			if c.Op == "remove" {
				delete(d, path[0])
			} else {
				d[path[0]] = value()
			}
			return d
		}
		d[path[0]] = patch(t, d[path[0]], path[1:], c)
		return d
	case []any:
		var i int
		if err := json.Unmarshal([]byte(path[0]), &i); err != nil || i < 0 || i > len(d) {
			t.Fatalf("bad index %q in %+v", path[0], c)
		}
		if len(path) == 1 {
			switch c.Op {
			case "add":
				d = append(d[:i], append([]any{value()}, d[i:]...)...)
			case "remove":
				d = append(d[:i], d[i+1:]...)
			default:
				d[i] = value()
			}
			return d
		}
		d[i] = patch(t, d[i], path[1:], c)
		return d
	}
	t.Fatalf("cannot apply %+v", c)
	return nil
}
