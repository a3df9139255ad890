package filter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestPatchIsStatusOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want bool
	}{
		// Merge and strategic merge patches.
		{`{}`, true},
		{` { } `, true},
		{`{"status":{"replicas":3,"conditions":[{"type":"Available","status":"True","message":"a \"b\" \u00e9"}]}}`, true},
		{`{"status":null}`, true},
		{`{"metadata":{"resourceVersion":"42","managedFields":[{"manager":"kubectl"}]},"status":{"phase":"Running"}}`, true},
		{`{"metadata":{"uid":"5b1c","name":"web","namespace":"prod","creationTimestamp":null,"selfLink":""}}`, true},
		{`{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"type":"Ready","status":"False"}]}}`, true},
		{`{"metadata":{"labels":{"tier":"web"}}}`, false},
		{`{"metadata":{"annotations":null}}`, false},
		{`{"metadata":{"finalizers":null}}`, false},
		{`{"metadata":{"generation":2}}`, false},
		{`{"metadata":{"deletionTimestamp":"2026-11-21T10:00:00Z"}}`, false},
		{`{"metadata":null}`, false},
		{`{"metadata":"x"}`, false},
		{`{"spec":{"replicas":3}}`, false},
		{`{"status":{},"spec":{}}`, false},
		{`{"data":{"k":"v"}}`, false},
		{`{"$patch":"delete"}`, false},
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"status":{}}`, false},
		{`{"Status":{}}`, false},
		{`{"st\u0061tus":{}}`, false},
		{`{"status":{}} {"spec":{}}`, false},
		{`{"status":{},}`, false},
		{`{"status":{}`, false},
		{`{"status":01}`, false},
		{`{"status":"tab	in string"}`, false},
		{"status:\n  replicas: 3\n", false},
		{``, false},
		{`null`, false},
		{`"status"`, false},
		{strings.Repeat(`{"status":`, 1) + strings.Repeat(`[`, maxNoiseDepth+5) + strings.Repeat(`]`, maxNoiseDepth+5) + `}`, false},
		{`{"status":` + strings.Repeat(`[`, 50) + strings.Repeat(`]`, 50) + `}`, true},
		{`{"status":[1,-2.5e+3,0.1E2,true,false,null,"x",{}]}`, true},

		// JSON patches.
		{`[]`, true},
		{`[{"op":"replace","path":"/status/replicas","value":3}]`, true},
		{`[{"op":"add","path":"/status","value":{}}]`, true},
		{`[{"op":"remove","path":"/metadata/managedFields"}]`, true},
		{`[{"op":"replace","path":"/metadata/managedFields/0/time","value":"x"}]`, true},
		{`[{"op":"test","path":"/spec/replicas","value":3},{"op":"replace","path":"/status/replicas","value":3}]`, true},
		{`[{"op":"copy","from":"/spec/replicas","path":"/status/replicas"}]`, true},
		{`[{"op":"move","from":"/status/a","path":"/status/b"}]`, true},
		{`[{"op":"move","from":"/spec/replicas","path":"/status/replicas"}]`, false},
		{`[{"op":"move","path":"/status/replicas"}]`, false},
		{`[{"op":"add","path":"/metadata/labels/tier","value":"web"}]`, false},
		{`[{"op":"replace","path":"/metadata/name","value":"x"}]`, false},
		{`[{"op":"replace","path":"/metadata","value":{}}]`, false},
		{`[{"op":"replace","path":"","value":{}}]`, false},
		{`[{"op":"replace","path":"/statusx","value":1}]`, false},
		{`[{"op":"replace","path":"/st~0atus","value":1}]`, false},
		{`[{"op":"replace","path":"status/replicas","value":1}]`, false},
		{`[{"op":"replace","value":1}]`, false},
		{`[{"path":"/status"}]`, false},
		{`[{"op":"Replace","path":"/status/x","value":1}]`, false},
		{`[{"op":"replace","op":"add","path":"/status/x","value":1}]`, false},
		{`[{"op":"replace","path":"/status/x","path":"/spec/x","value":1}]`, false},
		{`[{"op":"replace","path":"/st\u0061tus/x","value":1}]`, false},
		{`[{"op":"replace","path":"/status/x","value":1},{"op":"remove","path":"/spec/x"}]`, false},
		{`[{"op":"replace","path":"/status/x","value":1},]`, false},
		{`[1]`, false},
	}
	for _, tt := range tests {
		if got := patchIsStatusOnly([]byte(tt.body)); got != tt.want {
			t.Errorf("patchIsStatusOnly(%s) = %v, want %v", tt.body, got, tt.want)
		}
		if tt.want && !statusOnlyReference([]byte(tt.body)) {
			t.Errorf("reference disagrees on %s", tt.body)
		}
	}
}

// statusOnlyReference is a slow, obvious version of patchIsStatusOnly built
// on encoding/json. The fast one may say "real change" where this one says
// "status-only" (it rejects escapes, duplicate keys and deep nesting), but
// never the other way round.
func statusOnlyReference(body []byte) bool {
	if !json.Valid(body) {
		return false
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		for k, val := range v {
			switch k {
			case "status":
			case "metadata":
				md, ok := val.(map[string]any)
				if !ok {
					return false
				}
				for mk := range md {
					switch mk {
					case "managedFields", "resourceVersion", "creationTimestamp", "selfLink", "uid", "name", "namespace":
					default:
						return false
					}
				}
			default:
				return false
			}
		}
		return true
	case []any:
		for _, op := range v {
			o, ok := op.(map[string]any)
			if !ok {
				return false
			}
			opName, _ := o["op"].(string)
			path, hasPath := o["path"].(string)
			from, hasFrom := o["from"].(string)
			switch opName {
			case "test":
			case "add", "remove", "replace", "copy":
				if !hasPath || !pointerReference(path) {
					return false
				}
			case "move":
				if !hasPath || !hasFrom || !pointerReference(path) || !pointerReference(from) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	return false
}

func pointerReference(p string) bool {
	segs := strings.Split(p, "/")
	if len(segs) < 2 || segs[0] != "" {
		return false
	}
	if segs[1] == "status" {
		return true
	}
	if segs[1] != "metadata" || len(segs) < 3 {
		return false
	}
	switch segs[2] {
	case "managedFields", "resourceVersion", "creationTimestamp", "selfLink":
		return true
	}
	return false
}

// FuzzPatchBody feeds arbitrary patch bodies through Match: it must not
// panic, and it may drop a patch as status-only only when the obvious
// reference implementation agrees.
func FuzzPatchBody(f *testing.F) {
	for _, seed := range []string{
		`{"status":{"replicas":3}}`,
		`{"metadata":{"resourceVersion":"1","labels":{"a":"b"}}}`,
		`[{"op":"replace","path":"/status/replicas","value":3}]`,
		`[{"op":"move","from":"/spec/x","path":"/status/x"}]`,
		`{"apiVersion":"v1","kind":"ConfigMap","status":{}}`,
		`{"status":{"a":[1,2.5e3,"\u00e9",null]}}`,
		"status:\n  x: 1\n",
		``,
	} {
		f.Add([]byte(seed))
	}
	set, _ := Compile(rules(all), Options{})
	f.Fuzz(func(t *testing.T, patch []byte) {
		ev := event(verb("patch"), body(string(patch)))
		d := set.Match(ev)
		statusOnly := d.Reason == DropStatusOnly
		if statusOnly == d.Keep {
			t.Fatalf("Decision %+v is neither kept nor status-only", d)
		}
		if statusOnly && !statusOnlyReference(patch) {
			t.Fatalf("dropped as status-only, but the reference sees a real change: %q", patch)
		}
		if !bytes.Equal(ev.RequestObject.Raw, patch) {
			t.Fatal("Match modified the request body")
		}
	})
}
