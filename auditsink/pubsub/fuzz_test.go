package pubsub_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/options-record/options-record/auditsink/pubsub"
)

// FuzzConvert: whatever a message holds, Convert does not panic; an entry
// it converts names a verb and an object, and converts to the same event
// every time (a redelivery must have the same event key).
func FuzzConvert(f *testing.F) {
	events := captured(f)
	for i := range events {
		e := toGKE(f, &events[i])
		data, err := json.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(entry("io.k8s.core.v1.namespaces.status.update", "core/v1/namespaces/team/status"))
	f.Add(entry("io.k8s.authorization.rbac.v1.clusterrolebindings.delete", "rbac.authorization.k8s.io/v1/clusterrolebindings/ops"))
	f.Add([]byte(`{"insertId":"a","timestamp":"2026-11-26T10:00:00Z","protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.x","resourceName":"a/b/c","request":[1]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := pubsub.Convert(data)
		if err != nil {
			return
		}
		if ev.Verb == "" || ev.ObjectRef == nil || ev.ObjectRef.Resource == "" || ev.AuditID == "" {
			t.Fatalf("converted without a verb, an object or an auditID: %+v", ev)
		}
		again, err := pubsub.Convert(data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ev, again, jsonEqual); diff != "" {
			t.Fatalf("two conversions differ:\n%s", diff)
		}
	})
}
