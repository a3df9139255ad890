package tamper

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// The ids of the observations the audit events below name.
const (
	obsUpdate = "0123456789abcdef0123456789abcdef"
	obsDelete = "fedcba9876543210fedcba9876543210"
)

// metadataWrite is the audit event of a successful write logged at
// Metadata (no bodies, no uid: its change is recorded under an unknown-
// uid) whose annotation names an observation.
func metadataWrite(id, verb, user string, at time.Time, claim string) *auditv1.Event {
	return &auditv1.Event{
		Level: auditv1.LevelMetadata, AuditID: types.UID("audit-" + id), Stage: auditv1.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/prod/configmaps/app", Verb: verb,
		User:           authnv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}},
		ObjectRef:      &auditv1.ObjectReference{Resource: "configmaps", Namespace: "prod", Name: "app", APIVersion: "v1"},
		ResponseStatus: &metav1.Status{Code: 200},
		Annotations: map[string]string{
			fmt.Sprintf("%s/%s-0", model.ObservingWebhookName, model.ObservationKeyPrefix): claim,
		},
		RequestReceivedTimestamp: metav1.NewMicroTime(at.Add(-time.Millisecond)),
		StageTimestamp:           metav1.NewMicroTime(at),
	}
}

func (e *env) writeEvents(evs ...*auditv1.Event) int {
	e.t.Helper()
	d, err := model.NewSecretDigester([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		e.t.Fatal(err)
	}
	var b model.Batch
	for _, ev := range evs {
		c, err := model.Convert("default", ev, model.Selection{Rules: []string{"r"}}, d)
		if err != nil {
			e.t.Fatal(err)
		}
		b.Events, b.Versions = append(b.Events, c.Event), append(b.Versions, c.Versions...)
	}
	res, err := e.st.WriteBatch(context.Background(), &b)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Confirmed
}

// observed is what the reviewer stores of the admission review of a
// write of the ConfigMap prod/app (uid u1): its state before the write.
func (e *env) observed(id, op string, rv int, value string) model.Observation {
	e.t.Helper()
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "prod", "uid": "u1", "resourceVersion": fmt.Sprint(rv)},
		"data":     map[string]string{"k": value}})
	d, err := model.NewSecretDigester([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		e.t.Fatal(err)
	}
	v, err := model.BaselineVersion(model.BaselineObject{Cluster: "default", APIVersion: "v1", Resource: "configmaps",
		Raw: raw, Digester: d, ObservedAt: time.Now(), Origin: model.OriginAdmission})
	if err != nil {
		e.t.Fatal(err)
	}
	return model.Observation{ID: id, Cluster: "default", ReceivedAt: time.Now(), Source: "10.0.0.1", Operation: op,
		Resource: "configmaps", Namespace: "prod", Name: "app", Version: v}
}

func (e *env) writeObservations(obs ...model.Observation) int {
	e.t.Helper()
	res, err := e.st.WriteObservations(context.Background(), obs, 1<<20)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Confirmed
}

// TestConfirmedObservationsVerify: admission observations confirmed by
// their audit events, whichever came first and however long after the
// events were logged (the maintenance pass), leave a record that
// verifies: each version confirmation stores is logged, and the change
// first recorded under an unknown- uid is kept as it was logged.
func TestConfirmedObservationsVerify(t *testing.T) {
	for _, order := range []string{"event first", "observation first", "maintenance pass"} {
		t.Run(order, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			now := time.Now()
			upd := metadataWrite("1", "update", "alice", now, obsUpdate)
			del := metadataWrite("2", "delete", "bob", now.Add(time.Second), obsDelete)
			obsU, obsD := e.observed(obsUpdate, "UPDATE", 5, "v1"), e.observed(obsDelete, "DELETE", 7, "v2")
			confirmed := 0
			switch order {
			case "event first":
				e.writeEvents(upd, del)
				e.integrate() // the unknown- changes are logged before they are named
				confirmed += e.writeObservations(obsU, obsD)
			case "observation first":
				confirmed += e.writeObservations(obsU, obsD)
				confirmed += e.writeEvents(upd, del)
			case "maintenance pass":
				e.writeEvents(upd, del)
				e.integrate()
				// The observations as their transactions stored them,
				// before the events' committed: no join in them. (Stored
				// under ids no event names, then given theirs.)
				obsU.ID, obsD.ID = "00000000000000000000000000000001", "00000000000000000000000000000002"
				e.writeObservations(obsU, obsD)
				e.exec(`UPDATE observations SET observation_id = CASE observation_id WHEN $1 THEN $2 ELSE $3 END`,
					obsU.ID, obsUpdate, obsDelete)
				n, err := e.st.ConfirmObservations(ctx)
				if err != nil {
					t.Fatal(err)
				}
				confirmed += n
			}
			if confirmed != 2 {
				t.Fatalf("confirmed %d, want 2", confirmed)
			}
			e.integrate()
			if rep := e.verify(true); !rep.OK() {
				t.Fatalf("verify failed after confirmation (%s):\n%s", order, problems(rep))
			}
			// Both admission states and the two changes of u1 are rows of
			// the record, and in the log.
			if n := e.count(`SELECT count(*) FROM object_versions WHERE uid = 'u1'`); n != 4 {
				t.Errorf("versions of u1: %d; want 2 admission states and 2 changes", n)
			}
			if n := e.count(`SELECT count(*) FROM log_leaves WHERE row_table = 'object_versions' AND uid = 'u1'`); n != 4 {
				t.Errorf("leaves of u1's versions: %d; want 4", n)
			}
			// The record reads as one object: bob's deletion of u1, its
			// state before known.
			ds, err := e.st.Deletions(ctx, store.DeletionQuery{Cluster: "default", Name: "app", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].UID != "u1" || ds[0].Username != "bob" || ds[0].StateKey == nil {
				t.Errorf("deletions of app: %+v; want one, bob's of u1, state known", ds)
			}
		})
	}
}
