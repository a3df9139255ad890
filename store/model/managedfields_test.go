package model

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestWithoutManagedFields: metadata.managedFields go, wherever they stand
// among metadata's members; every other byte stays as it was; anything
// else (no metadata, managedFields elsewhere, not JSON up to the last
// metadata with managedFields) is left alone.
func TestWithoutManagedFields(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"first": {`{"apiVersion":"v1","metadata":{"managedFields":[{"manager":"kubectl"}],"name":"a"},"data":{"k":"v"}}`,
			`{"apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}}`},
		"middle": {`{"metadata":{"name":"a","managedFields":[{"m":"x","f":{"f:data":{}}}],"uid":"u"}}`,
			`{"metadata":{"name":"a","uid":"u"}}`},
		"last": {`{"kind":"ConfigMap","metadata":{"name":"a","managedFields":[]}}`,
			`{"kind":"ConfigMap","metadata":{"name":"a"}}`},
		"alone":  {`{"metadata":{"managedFields":[1]}}`, `{"metadata":{}}`},
		"spaces": {"{\n  \"metadata\": {\n    \"managedFields\": [ {\"a\": \"}]\\\"\"} ],\n    \"name\": \"a\"\n  }\n}", "{\n  \"metadata\": {\n    \"name\": \"a\"\n  }\n}"},
		"metadata after a large spec": {`{"spec":{"x":[1,2,{"managedFields":1}]},"metadata":{"name":"a","managedFields":[{}]}}`,
			`{"spec":{"x":[1,2,{"managedFields":1}]},"metadata":{"name":"a"}}`},
		"not in metadata":    {`{"spec":{"managedFields":[1]},"metadata":{"name":"a"}}`, `{"spec":{"managedFields":[1]},"metadata":{"name":"a"}}`},
		"a value, not a key": {`{"metadata":{"name":"managedFields"}}`, `{"metadata":{"name":"managedFields"}}`},
		"not an object":      {`["managedFields"]`, `["managedFields"]`},
		"not JSON":           {`{"metadata":{"managedFields":[`, `{"metadata":{"managedFields":[`},
		// The walk stops after the last metadata with managedFields
		// after it; whoever stores the text validates it.
		"not JSON after the metadata": {`{"metadata":{"managedFields":1,"name":"a"},"spec":[`, `{"metadata":{"name":"a"},"spec":[`},
		"managedFields after the metadata": {`{"metadata":{"managedFields":1},"spec":{"managedFields":1},"metadata":{"managedFields":2}}`,
			`{"metadata":{},"spec":{"managedFields":1},"metadata":{}}`},
		"metadata a string": {`{"metadata":"managedFields"}`, `{"metadata":"managedFields"}`},
		"repeated, first":   {`{"metadata":{"managedFields":1,"managedFields":2,"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		"repeated, last":    {`{"metadata":{"a":1,"managedFields":1, "managedFields":2}}`, `{"metadata":{"a":1}}`},
		"repeated metadata": {`{"metadata":{"managedFields":1},"metadata":{"name":"b","managedFields":2}}`, `{"metadata":{},"metadata":{"name":"b"}}`},
		"metadata an array": {`{"metadata":["managedFields"],"kind":"X"}`, `{"metadata":["managedFields"],"kind":"X"}`},
	} {
		got := string(withoutManagedFields([]byte(c.in))) // a copy: the cut is in place
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, c.want)
		}
		if json.Valid([]byte(c.in)) && !json.Valid([]byte(got)) {
			t.Errorf("%s: the result is not JSON: %s", name, got)
		}
	}
}

// FuzzWithoutManagedFields: on any JSON object, the result is JSON, and
// decodes to the object without metadata.managedFields.
func FuzzWithoutManagedFields(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a","managedFields":[{"manager":"m"}],"labels":{"x":"y"}},"spec":{}}`))
	f.Add([]byte(`{"metadata":{"managedFields":null}}`))
	f.Add([]byte(`{"metadata":{"managedFields":1,"managedFields":2,"name":"a"}}`))
	f.Add([]byte(`{"metadata":{"managedFields":1},"metadata":{"name":"b","managedFields":2}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var obj map[string]any
		if json.Unmarshal(in, &obj) != nil {
			return
		}
		out := withoutManagedFields(append([]byte(nil), in...)) // the cut is in place
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s -> %s: %v", in, out, err)
		}
		if md, ok := obj["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
		if !reflect.DeepEqual(got, obj) {
			t.Fatalf("%s -> %s: want %v", in, out, obj)
		}
	})
}
