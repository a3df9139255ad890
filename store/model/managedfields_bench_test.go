package model

import (
	"strings"
	"testing"
)

// BenchmarkWithoutManagedFields: the cut of managedFields from a
// Deployment's state, which the ingest makes on every state it keeps.
func BenchmarkWithoutManagedFields(b *testing.B) {
	obj := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod","uid":"5b1c","resourceVersion":"42",` +
		`"labels":{"app":"web","tier":"frontend"},"annotations":{"deployment.kubernetes.io/revision":"3","note":"` + strings.Repeat("n", 300) + `"},` +
		`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","time":"2026-11-25T10:00:00Z","fieldsType":"FieldsV1",` +
		`"fieldsV1":{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}}]},` +
		`"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27","args":["` + strings.Repeat("a", 500) + `"]}]}}},` +
		`"status":{"replicas":3,"conditions":[{"type":"Available","status":"True"}]}}`
	buf := make([]byte, len(obj))
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, obj)
		if out := withoutManagedFields(buf); len(out) == len(obj) {
			b.Fatal("nothing cut")
		}
	}
}
