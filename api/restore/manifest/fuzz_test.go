package manifest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/options-record/options-record/api/history"
)

// FuzzCleanManifest feeds arbitrary JSON to CleanManifest: it must never
// panic nor modify its input, and a manifest it returns carries no
// server-set field, no status, and only the ownerReferences the check kept.
func FuzzCleanManifest(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u","resourceVersion":"1","managedFields":[]},"data":{"k":"v"},"status":{}}`,
		`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","ownerReferences":[{"uid":"keep","kind":"Deployment","name":"d"},{"uid":"drop"},7,null]}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"1.2.3.4","clusterIPs":null}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":"weird"}`,
		`{"apiVersion":1,"kind":[],"metadata":"x"}`,
		`{"metadata":{"name":"x","ownerReferences":"nope"}}`,
		`null`, `[]`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	keep := func(ref OwnerReference) (string, bool, string) {
		if strings.HasPrefix(ref.UID, "keep") {
			return ref.UID + "-new", true, ""
		}
		return "", false, "gone"
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := history.DecodeObject(data)
		if err != nil || in == nil {
			return
		}
		before, _ := json.Marshal(in)
		m, err := CleanManifest(in, keep)
		if after, _ := json.Marshal(in); string(after) != string(before) {
			t.Fatalf("input modified:\n%s\n%s", before, after)
		}
		if err != nil {
			return
		}
		if _, ok := m.Object["status"]; ok {
			t.Fatal("status kept")
		}
		md := m.Object["metadata"].(map[string]any)
		for _, f := range serverSetMetadata {
			if _, ok := md[f]; ok {
				t.Fatalf("metadata.%s kept", f)
			}
		}
		if refs, ok := md["ownerReferences"]; ok {
			list, ok := refs.([]any)
			if !ok || len(list) == 0 {
				t.Fatalf("ownerReferences kept as %v", refs)
			}
			for _, r := range list {
				uid, _ := r.(map[string]any)["uid"].(string)
				if !strings.HasSuffix(uid, "-new") {
					t.Fatalf("owner %q kept without the check's uid", uid)
				}
			}
		}
		if _, err := json.Marshal(m.Object); err != nil {
			t.Fatalf("manifest does not encode: %v", err)
		}
	})
}
