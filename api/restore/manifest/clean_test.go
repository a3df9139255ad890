package manifest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/options-record/options-record/api/history"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	o, err := history.DecodeObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestCleanManifest(t *testing.T) {
	t.Parallel()
	exists := func(ref OwnerReference) (string, bool, string) {
		switch ref.UID {
		case "live-owner":
			return ref.UID, true, ""
		case "restored-owner":
			return "new-uid", true, ""
		}
		return "", false, "owner no longer exists"
	}
	tests := []struct {
		name        string
		in          string
		owners      OwnerCheck
		want        string
		wantRemoved []string
		wantDropped []DroppedOwner
		wantErr     bool
	}{{
		name: "server-set metadata and status go, the rest stays",
		in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"42",
			"creationTimestamp":"2026-11-21T10:00:00Z","generation":3,"managedFields":[{"manager":"kubectl"}],"selfLink":"/x",
			"labels":{"app":"a"},"annotations":{"k":"v"},"finalizers":["f"]},"data":{"k":"v"},"status":{"x":1}}`,
		want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"app":"a"},
			"annotations":{"k":"v"},"finalizers":["f"]},"data":{"k":"v"}}`,
		wantRemoved: []string{"metadata.creationTimestamp", "metadata.generation", "metadata.managedFields",
			"metadata.resourceVersion", "metadata.selfLink", "metadata.uid", "status"},
	}, {
		name: "a terminating state loses its deletion fields",
		in: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team","deletionTimestamp":"2026-11-21T10:00:00Z",
			"deletionGracePeriodSeconds":0},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Terminating"}}`,
		want:        `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"},"spec":{"finalizers":["kubernetes"]}}`,
		wantRemoved: []string{"metadata.deletionGracePeriodSeconds", "metadata.deletionTimestamp", "status"},
	}, {
		name: "owners: kept when live, rewritten when restored, dropped and reported when gone",
		in: `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs","ownerReferences":[
			{"apiVersion":"apps/v1","kind":"Deployment","name":"live","uid":"live-owner","controller":true},
			{"apiVersion":"v1","kind":"ConfigMap","name":"back","uid":"restored-owner"},
			{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"gone-owner"}]}}`,
		owners: exists,
		want: `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs","ownerReferences":[
			{"apiVersion":"apps/v1","kind":"Deployment","name":"live","uid":"live-owner","controller":true},
			{"apiVersion":"v1","kind":"ConfigMap","name":"back","uid":"new-uid"}]}}`,
		wantDropped: []DroppedOwner{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "gone-owner", Reason: "owner no longer exists"}},
	}, {
		name: "every owner gone: no ownerReferences at all",
		in: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","ownerReferences":[
			{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"gone"}]},"spec":{}}`,
		owners:      exists,
		want:        `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}}`,
		wantDropped: []DroppedOwner{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "gone", Reason: "owner no longer exists"}},
	}, {
		name:        "owners not checked are dropped",
		in:          `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","ownerReferences":[{"kind":"X","name":"x","uid":"1"}]}}`,
		want:        `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
		wantDropped: []DroppedOwner{{Kind: "X", Name: "x", UID: "1", Reason: "owner not checked"}},
	}, {
		name: "a Service loses its allocated cluster IPs",
		in: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],
			"ports":[{"port":80}]}}`,
		want:        `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`,
		wantRemoved: []string{"spec.clusterIP", "spec.clusterIPs"},
	}, {
		name: "a headless Service keeps clusterIP None",
		in:   `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None"}}`,
		want: `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"clusterIP":"None"}}`,
	}, {
		name: "custom objects are cleaned alike",
		in: `{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController","metadata":{"name":"r","namespace":"n",
			"uid":"u","generation":2},"spec":{"verbs":["delete"]},"status":{"observedGeneration":2}}`,
		want:        `{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController","metadata":{"name":"r","namespace":"n"},"spec":{"verbs":["delete"]}}`,
		wantRemoved: []string{"metadata.generation", "metadata.uid", "status"},
	}, {
		name:    "not an object: no kind",
		in:      `{"apiVersion":"v1","metadata":{"name":"x"}}`,
		wantErr: true,
	}, {
		name:    "not an object: no name",
		in:      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`,
		wantErr: true,
	}, {
		name:    "not an object: a Status",
		in:      `{"apiVersion":"v1","kind":"Status","status":"Success","details":{"name":"x"}}`,
		wantErr: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := obj(t, tt.in)
			before, _ := json.Marshal(in)
			m, err := CleanManifest(in, tt.owners)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error, manifest %v", m.Object)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(obj(t, tt.want), m.Object); diff != "" {
				t.Errorf("manifest (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRemoved, m.Removed); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDropped, m.DroppedOwners); diff != "" {
				t.Errorf("dropped owners (-want +got):\n%s", diff)
			}
			if after, _ := json.Marshal(in); string(after) != string(before) {
				t.Errorf("the input was modified:\n%s\n%s", before, after)
			}
		})
	}
}
