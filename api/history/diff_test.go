package history

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	base := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u1","resourceVersion":"1","generation":1,
		"creationTimestamp":"2026-11-21T10:00:00Z","managedFields":[{"manager":"a"}]},"data":{"level":"info","x":"1"}}`
	tests := []struct {
		name     string
		from, to string
		opts     DiffOptions
		want     []DiffChange
	}{{
		name: "server-set noise only: no change",
		from: base,
		to: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u2","resourceVersion":"9","generation":4,
			"creationTimestamp":"2026-11-22T10:00:00Z","deletionTimestamp":"2026-11-22T11:00:00Z","managedFields":[{"manager":"b"}]},
			"data":{"level":"info","x":"1"},"status":{"phase":"x"}}`,
	}, {
		name: "replace, add and remove, in path order",
		from: base,
		to: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"a/b":"c"}},
			"data":{"level":"debug","y":"2"}}`,
		want: []DiffChange{
			{Op: "replace", Path: "/data/level", From: "info", To: "debug"},
			{Op: "remove", Path: "/data/x", From: "1"},
			{Op: "add", Path: "/data/y", To: "2"},
			{Op: "add", Path: "/metadata/labels", To: map[string]any{"a/b": "c"}},
		},
	}, {
		name: "status only when asked",
		from: `{"kind":"Deployment","metadata":{"name":"w"},"status":{"replicas":1}}`,
		to:   `{"kind":"Deployment","metadata":{"name":"w"},"status":{"replicas":3}}`,
		opts: DiffOptions{IncludeStatus: true},
		want: []DiffChange{{Op: "replace", Path: "/status/replicas", From: int64(1), To: int64(3)}},
	}, {
		name: "lists: element changes, then removals from the end, then additions",
		from: `{"metadata":{"name":"x"},"spec":{"a":[1,2,3,4],"b":["x"]}}`,
		to:   `{"metadata":{"name":"x"},"spec":{"a":[1,5],"b":["x","y"]}}`,
		want: []DiffChange{
			{Op: "replace", Path: "/spec/a/1", From: int64(2), To: int64(5)},
			{Op: "remove", Path: "/spec/a/3", From: int64(4)},
			{Op: "remove", Path: "/spec/a/2", From: int64(3)},
			{Op: "add", Path: "/spec/b/1", To: "y"},
		},
	}, {
		name: "type changes are replaces; keys are escaped",
		from: `{"metadata":{"name":"x","annotations":{"a~b/c":"1"}},"spec":{"v":{"k":1}}}`,
		to:   `{"metadata":{"name":"x","annotations":{"a~b/c":"2"}},"spec":{"v":"flat"}}`,
		want: []DiffChange{
			{Op: "replace", Path: "/metadata/annotations/a~0b~1c", From: "1", To: "2"},
			{Op: "replace", Path: "/spec/v", From: map[string]any{"k": int64(1)}, To: "flat"},
		},
	}, {
		// A state recorded before the record cut managedFields, then one
		// recorded after: the server fields differ, managedFields do not.
		name: "server fields when asked, but never managedFields",
		from: base,
		to: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u1","resourceVersion":"2","generation":1,
			"creationTimestamp":"2026-11-21T10:00:00Z"},"data":{"level":"info","x":"1"}}`,
		opts: DiffOptions{IncludeServerFields: true},
		want: []DiffChange{{Op: "replace", Path: "/metadata/resourceVersion", From: "1", To: "2"}},
	}, {
		name: "integers and floats of the same value are equal",
		from: `{"metadata":{"name":"x"},"spec":{"n":3}}`,
		to:   `{"metadata":{"name":"x"},"spec":{"n":3.0}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Diff(obj(t, tt.from), obj(t, tt.to), tt.opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiffOfAbsentObjects(t *testing.T) {
	t.Parallel()
	o := obj(t, `{"metadata":{"name":"x","uid":"1"},"data":{"k":"v"}}`)
	if got := Diff(nil, o, DiffOptions{}); len(got) != 1 || got[0].Op != "add" || got[0].Path != "" {
		t.Errorf("create: %+v", got)
	}
	if got := Diff(o, nil, DiffOptions{}); len(got) != 1 || got[0].Op != "remove" {
		t.Errorf("delete: %+v", got)
	}
	if got := Diff(nil, nil, DiffOptions{}); got != nil {
		t.Errorf("nothing: %+v", got)
	}
	if _, ok := o["metadata"].(map[string]any)["uid"]; !ok {
		t.Error("Diff modified its input")
	}
}

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	o, err := DecodeObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}
