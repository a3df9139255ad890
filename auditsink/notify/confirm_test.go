package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/store/model"
)

// TestMetadataDeleteCollectionIsOneMessage: `kubectl delete cm --all -n
// prod` on a managed cluster, whose audit policy logs ConfigMaps at
// Metadata: the deletecollection's event names no object, the observing
// webhook's reviews name the three it deleted. Confirmed, whichever comes
// first, they are one deletecollection message naming the three.
func TestMetadataDeleteCollectionIsOneMessage(t *testing.T) {
	for _, eventFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("event first %v", eventFirst), func(t *testing.T) {
			hook := newReceiver(t)
			cfg := &notify.Config{Destinations: []notify.Destination{
				{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k")}}}
			r := newRig(t, cfg, rule("all", "", "hook"))
			ids := []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00000000000000000000000000000001"}
			dc := event(t, "deletecollection-configmaps-namespace-controller", func(ev *auditv1.Event) {
				ev.Level, ev.RequestObject, ev.ResponseObject = auditv1.LevelMetadata, nil, nil
				ev.User.Username, ev.UserAgent = "bob", "kubectl/v1.34.1"
				ev.RequestURI, ev.ObjectRef.Namespace = "/api/v1/namespaces/prod/configmaps", "prod"
				ev.Annotations = map[string]string{}
				for i, id := range ids {
					ev.Annotations[fmt.Sprintf("%s/%s-%d", model.ObservingWebhookName, model.ObservationKeyPrefix, i)] = id
				}
			})
			var obs []model.Observation
			for i, id := range ids {
				name := fmt.Sprintf("cm-%d", i)
				raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
					"name": name, "namespace": "prod", "uid": fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i),
					"resourceVersion": fmt.Sprint(47000 + i)}, "data": map[string]any{"k": "v"}})
				v, err := model.BaselineVersion(model.BaselineObject{Cluster: "default", APIVersion: "v1", Resource: "configmaps",
					Raw: raw, ObservedAt: dc.StageTimestamp.Time, Origin: model.OriginAdmission})
				if err != nil {
					t.Fatal(err)
				}
				obs = append(obs, model.Observation{ID: id, Cluster: "default", ReceivedAt: time.Now(), Source: "10.0.0.1",
					Operation: "DELETE", Resource: "configmaps", Namespace: "prod", Name: name, Version: v})
			}
			observe := func() {
				if res, err := r.st.WriteObservations(context.Background(), obs, 1<<20); err != nil || res.Stored != 3 {
					t.Fatalf("observations: %+v, %v", res, err)
				}
			}
			if eventFirst {
				r.ingest(dc)
				observe()
			} else {
				observe()
				r.ingest(dc)
			}
			r.ingest(dc) // the apiserver's retry of the same batch
			if _, err := r.st.ConfirmObservations(context.Background()); err != nil {
				t.Fatal(err)
			}
			r.start(notify.Options{})
			hook.wait(t, 1)
			r.drained(t)
			hook.mu.Lock()
			defer hook.mu.Unlock()
			if len(hook.bodies) != 1 {
				t.Fatalf("%d messages, want 1 for the deletecollection", len(hook.bodies))
			}
			var in notify.Incident
			if err := json.Unmarshal(hook.bodies[0], &in); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range in.Changes {
				if c.Verb == "deletecollection" && c.Deleted && c.User == "bob" && c.Namespace == "prod" {
					names = append(names, c.Name)
				}
			}
			slices.Sort(names)
			if in.Kind != notify.KindDeleteCollection || in.Count != 3 || in.ByResource["configmaps"] != 3 ||
				!slices.Equal(names, []string{"cm-0", "cm-1", "cm-2"}) {
				t.Fatalf("message: %s", hook.bodies[0])
			}
		})
	}
}
