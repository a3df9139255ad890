package store

// Integration tests of the exact join of admission observations with the
// audit events that name them, on a real PostgreSQL: events go through
// model.Convert as the pipeline's do (logged at Metadata: no bodies), and
// observations through model.BaselineVersion as the reviewer's do.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

var testDigester = func() *model.SecretDigester {
	d, err := model.NewSecretDigester([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return d
}()

// auditEvent is an audit event of a successful write; claims are the
// observation ids its annotations name; response, if set, is the response
// body (the RequestResponse level).
func auditEvent(id, verb, user, resource, ns, name string, at time.Duration, response []byte, claims ...string) *auditv1.Event {
	ev := &auditv1.Event{
		Level: auditv1.LevelMetadata, AuditID: types.UID("audit-" + id), Stage: auditv1.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/" + ns + "/" + resource + "/" + name, Verb: verb,
		User:                     authnv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}},
		ObjectRef:                &auditv1.ObjectReference{Resource: resource, Namespace: ns, Name: name, APIVersion: "v1"},
		ResponseStatus:           &metav1.Status{Code: 200},
		RequestReceivedTimestamp: metav1.NewMicroTime(t0.Add(at - time.Millisecond)),
		StageTimestamp:           metav1.NewMicroTime(t0.Add(at)),
	}
	if response != nil {
		ev.Level = auditv1.LevelRequestResponse
		ev.ResponseObject = &runtime.Unknown{Raw: response}
	}
	if len(claims) > 0 {
		ev.Annotations = map[string]string{}
		for i, c := range claims {
			ev.Annotations[fmt.Sprintf("%s/%s-%d", model.ObservingWebhookName, model.ObservationKeyPrefix, i)] = c
		}
	}
	return ev
}

func storeEvents(t *testing.T, s *Store, evs ...*auditv1.Event) model.WriteResult {
	t.Helper()
	var b model.Batch
	for _, ev := range evs {
		c, err := model.Convert("default", ev, model.Selection{Rules: []string{"r"}}, testDigester)
		if err != nil {
			t.Fatal(err)
		}
		b.Events, b.Versions = append(b.Events, c.Event), append(b.Versions, c.Versions...)
	}
	if err := s.EnsurePartitionsAround(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	res, err := s.WriteBatch(context.Background(), &b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func obj(kind, resource, ns, name, uid string, rv int, data map[string]string) []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": uid, "resourceVersion": fmt.Sprint(rv)}, "data": data})
	return b
}

// observation is what the reviewer stores of an admission review.
func observation(t *testing.T, id, op, resource, ns, name, source string, oldObject []byte) model.Observation {
	t.Helper()
	v, err := model.BaselineVersion(model.BaselineObject{Cluster: "default", APIVersion: "v1", Resource: resource,
		Raw: oldObject, Digester: testDigester, ObservedAt: t0, Origin: model.OriginAdmission})
	if err != nil {
		t.Fatal(err)
	}
	return model.Observation{ID: id, Cluster: "default", ReceivedAt: time.Now(), Source: source, Operation: op,
		Resource: resource, Namespace: ns, Name: name, Version: v}
}

func storeObservations(t *testing.T, s *Store, obs ...model.Observation) model.ObservationResult {
	t.Helper()
	res, err := s.WriteObservations(context.Background(), obs, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func oneDeletion(t *testing.T, s *Store, name string) Deletion {
	t.Helper()
	got, err := s.Deletions(context.Background(), DeletionQuery{Cluster: "default", Name: name, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("deletions of %s: %d, want 1: %+v", name, len(got), got)
	}
	return got[0]
}

// stateBefore is the state the deletions name for d, or "" when unknown.
func stateBefore(t *testing.T, s *Store, d Deletion) string {
	t.Helper()
	if d.StateKey == nil {
		return ""
	}
	v, err := s.Version(context.Background(), "default", d.UID, d.StateKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(v.Object)
}

const (
	idA = "0123456789abcdef0123456789abcdef"
	idB = "fedcba9876543210fedcba9876543210"
	idC = "00000000000000000000000000000001"
	idF = "ffffffffffffffffffffffffffffffff"
)

// A Metadata-level delete gets its prior state from the observation its
// audit event names, whichever of the two is stored first; and the
// update before it too.
func TestObservationConfirmedInEitherOrder(t *testing.T) {
	for _, eventFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("event first %v", eventFirst), func(t *testing.T) {
			s := openStore(t)
			upd := auditEvent("1", "update", "alice", "configmaps", "prod", "app", time.Minute, nil, idA)
			del := auditEvent("2", "delete", "bob", "configmaps", "prod", "app", 2*time.Minute, nil, idB)
			obsA := observation(t, idA, "UPDATE", "configmaps", "prod", "app", "10.0.0.1", obj("ConfigMap", "configmaps", "prod", "app", "u1", 5, map[string]string{"k": "v1"}))
			obsB := observation(t, idB, "DELETE", "configmaps", "prod", "app", "10.0.0.1", obj("ConfigMap", "configmaps", "prod", "app", "u1", 7, map[string]string{"k": "v2"}))
			var confirmed int
			if eventFirst {
				confirmed += storeEvents(t, s, upd, del).Confirmed
				confirmed += storeObservations(t, s, obsA, obsB).Confirmed
			} else {
				confirmed += storeObservations(t, s, obsA, obsB).Confirmed
				confirmed += storeEvents(t, s, upd, del).Confirmed
			}
			if confirmed != 2 {
				t.Errorf("confirmed %d, want 2", confirmed)
			}
			d := oneDeletion(t, s, "app")
			if d.Username != "bob" || d.UID != "u1" || d.Kind != "ConfigMap" {
				t.Errorf("deletion: by %q of uid %q kind %q; want bob, u1, ConfigMap", d.Username, d.UID, d.Kind)
			}
			if st := stateBefore(t, s, d); !strings.Contains(st, `"v2"`) {
				t.Errorf("state before bob's delete: %s; want data v2", st)
			}
			// alice's update, logged at Metadata, is a change of u1 whose
			// prior state is the first observation.
			hist, err := s.Changes(context.Background(), ChangeQuery{Cluster: "default", UID: "u1", Limit: 10, ChangesOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(hist); len(got) != 2 {
				t.Errorf("changes of u1: %v; want alice's update and bob's delete", got)
			}
			// The changes first recorded under unknown- uids are kept
			// (the record is append-only), superseded: the views show
			// the changes of u1 alone.
			var kept, views int
			if err := s.Pool().QueryRow(context.Background(), `SELECT
				(SELECT count(*) FROM object_versions WHERE uid LIKE 'unknown-%'),
				(SELECT count(*) FROM object_history WHERE name = 'app') + (SELECT count(*) FROM deletions WHERE name = 'app' AND uid = 'u1')`).Scan(&kept, &views); err != nil || kept != 2 || views != 3 {
				t.Errorf("unknown- rows kept %d, rows of the views %d, %v; want 2 kept, alice's and bob's changes and bob's deletion of u1", kept, views, err)
			}
			var pending int
			if err := s.Pool().QueryRow(context.Background(), "SELECT (SELECT count(*) FROM observations) + (SELECT count(*) FROM observation_claims)").Scan(&pending); err != nil || pending != 0 {
				t.Errorf("pending observations and claims after confirmation: %d, %v; want 0", pending, err)
			}
		})
	}
}

// A forged review never becomes a state: no audit event names its id, and
// an event naming it about another object does not match; it expires.
func TestForgedObservationNeverBecomesAState(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	forged := observation(t, idF, "DELETE", "configmaps", "prod", "app", "10.9.9.9", obj("ConfigMap", "configmaps", "prod", "app", "u1", 7, map[string]string{"k": "forged"}))
	// Another object, or another verb, naming the forged id.
	other := observation(t, idC, "UPDATE", "configmaps", "prod", "app", "10.9.9.9", obj("ConfigMap", "configmaps", "prod", "app", "u1", 6, map[string]string{"k": "forged"}))
	storeObservations(t, s, forged, other)
	res := storeEvents(t, s,
		auditEvent("1", "delete", "bob", "configmaps", "prod", "app", time.Minute, nil, idB),
		auditEvent("2", "delete", "bob", "configmaps", "prod", "other", 2*time.Minute, nil, idF),
		auditEvent("3", "delete", "bob", "configmaps", "prod", "app2", 3*time.Minute, nil, idC))
	if res.Confirmed != 0 {
		t.Errorf("confirmed %d, want 0", res.Confirmed)
	}
	if n, err := s.ConfirmObservations(ctx); err != nil || n != 0 {
		t.Errorf("confirmation pass: %d, %v; want 0", n, err)
	}
	d := oneDeletion(t, s, "app")
	if d.StateKey != nil {
		t.Errorf("deletion: state %q; want unknown", stateBefore(t, s, d))
	}
	var admission int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM object_versions WHERE origin = 'admission' OR object::text LIKE '%forged%'").Scan(&admission); err != nil || admission != 0 {
		t.Errorf("versions from forged observations: %d, %v", admission, err)
	}
	n, err := s.ExpireObservations(ctx, time.Now().Add(time.Hour))
	if err != nil || n != 2 {
		t.Errorf("expired %d, %v; want 2", n, err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, "SELECT (SELECT count(*) FROM observations) + (SELECT count(*) FROM observation_claims)").Scan(&left); err != nil || left != 0 {
		t.Errorf("left after expiry: %d, %v", left, err)
	}
}

// Each source holds at most its bound of unconfirmed bytes.
func TestObservationsBoundedPerSource(t *testing.T) {
	s := openStore(t)
	big := map[string]string{"k": strings.Repeat("x", 600)}
	o1 := observation(t, idA, "DELETE", "configmaps", "prod", "a", "10.9.9.9", obj("ConfigMap", "configmaps", "prod", "a", "u1", 7, big))
	o2 := observation(t, idB, "DELETE", "configmaps", "prod", "b", "10.9.9.9", obj("ConfigMap", "configmaps", "prod", "b", "u2", 7, big))
	o3 := observation(t, idC, "DELETE", "configmaps", "prod", "c", "10.0.0.1", obj("ConfigMap", "configmaps", "prod", "c", "u3", 7, big))
	res, err := s.WriteObservations(context.Background(), []model.Observation{o1, o2, o3}, int64(o1.Bytes()+100))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != 2 || res.OverBound != 1 {
		t.Errorf("stored %d, over bound %d; want 2 and 1 (one per source)", res.Stored, res.OverBound)
	}
	res, err = s.WriteObservations(context.Background(), []model.Observation{observation(t, idF, "DELETE", "configmaps", "prod", "d", "10.9.9.9",
		obj("ConfigMap", "configmaps", "prod", "d", "u4", 7, nil))}, int64(o1.Bytes()+100))
	if err != nil || res.OverBound != 1 {
		t.Errorf("a later write of a full source: %+v, %v; want it over bound", res, err)
	}
}

// Where the audit policy logs bodies too, the observation of a state a
// body gave is not stored again, and the states agree.
func TestObservationOfAStateStoredFromABody(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	created := obj("ConfigMap", "configmaps", "prod", "app", "u1", 5, map[string]string{"k": "v1"})
	status := []byte(`{"kind":"Status","apiVersion":"v1","status":"Success","details":{"name":"app","kind":"configmaps","uid":"u1"}}`)
	storeEvents(t, s,
		auditEvent("1", "create", "alice", "configmaps", "prod", "app", time.Minute, created),
		auditEvent("2", "delete", "bob", "configmaps", "prod", "app", 2*time.Minute, status, idA))
	res := storeObservations(t, s, observation(t, idA, "DELETE", "configmaps", "prod", "app", "10.0.0.1", created))
	if res.Confirmed != 1 {
		t.Errorf("confirmed %d, want 1", res.Confirmed)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM object_versions WHERE uid = 'u1' AND resource_version = 5").Scan(&n); err != nil || n != 1 {
		t.Errorf("versions of u1 at 5: %d, %v; want 1 (stored once)", n, err)
	}
	if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM object_versions WHERE uid = 'u1' AND deleted").Scan(&n); err != nil || n != 1 {
		t.Errorf("deletions of u1: %d, %v; want 1", n, err)
	}
	d := oneDeletion(t, s, "app")
	if st := stateBefore(t, s, d); !strings.Contains(st, `"v1"`) || d.Username != "bob" {
		t.Errorf("deletion by %s, state %s; want bob, v1", d.Username, st)
	}
}

// A Secret's observed values are digested as every other path digests
// them; the deletion's state is the digested Secret.
func TestObservedSecretIsDigested(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	secret, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "prod", "uid": "s1", "resourceVersion": "9"},
		"data":     map[string]string{"password": "aHVudGVyMg=="}})
	storeObservations(t, s, observation(t, idA, "DELETE", "secrets", "prod", "db", "10.0.0.1", secret))
	storeEvents(t, s, auditEvent("1", "delete", "bob", "secrets", "prod", "db", time.Minute, nil, idA))
	d := oneDeletion(t, s, "db")
	st := stateBefore(t, s, d)
	if st == "" || strings.Contains(st, "aHVudGVyMg==") {
		t.Fatalf("state before the Secret's deletion: %q; want it known, values digested", st)
	}
	var digested bool
	if err := s.Pool().QueryRow(ctx, "SELECT secret_digested FROM object_versions WHERE uid = 's1' AND origin = 'admission'").Scan(&digested); err != nil || !digested {
		t.Errorf("admission version secret_digested %v, %v", digested, err)
	}
}

// The namespace controller's deletecollection, logged at Metadata, names
// no object: each object's review does. Every ConfigMap's deletion is
// recorded with its state and attributed to whoever deleted the namespace.
func TestNamespaceDeletionKeepsObservedStates(t *testing.T) {
	s := openStore(t)
	nsDel := auditEvent("1", "delete", "carol", "namespaces", "team", "team", time.Minute, nil)
	nsDel.ObjectRef = &auditv1.ObjectReference{Resource: "namespaces", Namespace: "team", Name: "team", APIVersion: "v1"}
	dc := auditEvent("2", "deletecollection", "system:serviceaccount:kube-system:namespace-controller", "configmaps", "team", "", 2*time.Minute, nil, idA, idB)
	storeEvents(t, s, nsDel, dc)
	storeObservations(t, s,
		observation(t, idA, "DELETE", "configmaps", "team", "one", "10.0.0.1", obj("ConfigMap", "configmaps", "team", "one", "c1", 5, map[string]string{"k": "1"})),
		observation(t, idB, "DELETE", "configmaps", "team", "two", "10.0.0.1", obj("ConfigMap", "configmaps", "team", "two", "c2", 6, map[string]string{"k": "2"})))
	for _, name := range []string{"one", "two"} {
		d := oneDeletion(t, s, name)
		if st := stateBefore(t, s, d); d.InitiatedBy != "carol" || d.Verb != "deletecollection" || !bytes.Contains([]byte(st), []byte(`"data"`)) {
			t.Errorf("deletion of %s: %s initiated by %q, state %s; want a deletecollection started by carol, with its state", name, d.Verb, d.InitiatedBy, st)
		}
	}
}

// Two transactions storing an event and its observation at once each miss
// the other's row: the confirmation pass joins them.
func TestConfirmationPassJoinsWhatTwoTransactionsMissed(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	storeEvents(t, s, auditEvent("1", "delete", "bob", "configmaps", "prod", "app", time.Minute, nil, idA))
	// The observation as its transaction stored it, before the event's
	// committed: no join in it.
	o := observation(t, idA, "DELETE", "configmaps", "prod", "app", "10.0.0.1", obj("ConfigMap", "configmaps", "prod", "app", "u1", 7, map[string]string{"k": "v1"}))
	if err := s.Transact(ctx, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"observations"}, observationColumns, pgx.CopyFromRows([][]any{observationRow(&o)}))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if d := oneDeletion(t, s, "app"); d.StateKey != nil {
		t.Fatalf("state known before the pass")
	}
	if n, err := s.ConfirmObservations(ctx); err != nil || n != 1 {
		t.Fatalf("confirmation pass: %d, %v; want 1", n, err)
	}
	if st := stateBefore(t, s, oneDeletion(t, s, "app")); !strings.Contains(st, `"v1"`) {
		t.Errorf("state after the pass: %s", st)
	}
}

// A dry run is a true observation of the stored object, never a change:
// an event naming it (none does: the filter drops dry runs) would store the
// state, but neither a deletion nor a uid for the event's change.
func TestDryRunObservationMakesNoChange(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	o := observation(t, idA, "DELETE", "configmaps", "prod", "app", "10.0.0.1", obj("ConfigMap", "configmaps", "prod", "app", "u1", 7, map[string]string{"k": "v1"}))
	o.DryRun = true
	storeObservations(t, s, o)
	dc := auditEvent("1", "deletecollection", "bob", "configmaps", "prod", "", time.Minute, nil, idA)
	storeEvents(t, s, dc)
	var admission, changes int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE origin = 'admission'), count(*) FILTER (WHERE origin = 'change')
		FROM object_versions WHERE uid = 'u1'`).Scan(&admission, &changes); err != nil {
		t.Fatal(err)
	}
	if admission != 1 || changes != 0 {
		t.Errorf("versions of u1: %d admission, %d changes; want the observed state only", admission, changes)
	}
}

// A claim that cannot be recorded (here its table is gone) costs its
// state, never the events: refused, they would come back from the
// apiserver again and again.
func TestAClaimThatCannotBeRecordedCostsOnlyItsState(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE observation_claims RENAME TO observation_claims_gone`); err != nil {
		t.Fatal(err)
	}
	var b model.Batch
	c, err := model.Convert("default", auditEvent("1", "delete", "bob", "configmaps", "prod", "app", time.Minute, nil, idA), model.Selection{}, testDigester)
	if err != nil {
		t.Fatal(err)
	}
	b.Events, b.Versions = []model.Event{c.Event}, c.Versions
	if err := s.EnsurePartitionsAround(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if res, err := s.WriteBatch(ctx, &b); err != nil || res.Events != 1 {
		t.Fatalf("events with a claim that cannot be recorded: %+v, %v; want them stored", res, err)
	}
	if d := oneDeletion(t, s, "app"); d.StateKey != nil || d.Username != "bob" {
		t.Errorf("deletion %+v; want bob's, state unknown", d)
	}
}

// storeRouted stores events as storeEvents does, each routed (a rule's
// spec.notify) to the destination "chat" by the rule "ops/deletes".
func storeRouted(t *testing.T, s *Store, evs ...*auditv1.Event) model.WriteResult {
	t.Helper()
	var b model.Batch
	for _, ev := range evs {
		c, err := model.Convert("default", ev, model.Selection{Rules: []string{"r"},
			Notify: []model.Route{{Rule: "ops/deletes", Destination: "chat"}}}, testDigester)
		if err != nil {
			t.Fatal(err)
		}
		b.Events, b.Versions = append(b.Events, c.Event), append(b.Versions, c.Versions...)
	}
	if err := s.EnsurePartitionsAround(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	res, err := s.WriteBatch(context.Background(), &b)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A deletecollection logged at Metadata (what managed clusters log for
// ConfigMaps, Secrets and custom resources) stores no version of its own:
// the deletions confirmation records from the observations are its
// changes, and are sent as one incident, whichever of the event and the
// observations is stored first. A redelivery, a second confirmation pass
// and a single Metadata-level delete (sent through the change its event
// recorded) queue nothing more.
func TestConfirmedDeletionsAreNotified(t *testing.T) {
	for _, c := range []struct{ eventFirst, logged bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		eventFirst := c.eventFirst
		t.Run(fmt.Sprintf("event first %v tamper log %v", c.eventFirst, c.logged), func(t *testing.T) {
			s, err := Open(context.Background(), Options{URL: pgtest.NewDatabase(t), TamperLog: c.logged})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			ctx := context.Background()
			dc := auditEvent("1", "deletecollection", "bob", "configmaps", "prod", "", time.Minute, nil, idA, idB, idC)
			del := auditEvent("2", "delete", "bob", "configmaps", "prod", "solo", 2*time.Minute, nil, idF)
			var obs []model.Observation
			for i, id := range []string{idA, idB, idC} {
				name := fmt.Sprintf("cm-%d", i)
				obs = append(obs, observation(t, id, "DELETE", "configmaps", "prod", name, "10.0.0.1",
					obj("ConfigMap", "configmaps", "prod", name, fmt.Sprintf("c%d", i), 5+i, map[string]string{"k": "v"})))
			}
			obs = append(obs, observation(t, idF, "DELETE", "configmaps", "prod", "solo", "10.0.0.1",
				obj("ConfigMap", "configmaps", "prod", "solo", "s1", 9, map[string]string{"k": "v"})))
			if eventFirst {
				storeRouted(t, s, dc, del)
				storeObservations(t, s, obs...)
			} else {
				storeObservations(t, s, obs...)
				storeRouted(t, s, dc, del)
			}
			// Again: the apiserver's redelivery, and the maintenance pass.
			storeRouted(t, s, dc, del)
			if _, err := s.ConfirmObservations(ctx); err != nil {
				t.Fatal(err)
			}
			rows, err := s.Pool().Query(ctx, `SELECT group_key, uid, name, verb, username, kind, destination, rule, deleted
				FROM notification_outbox ORDER BY name`)
			if err != nil {
				t.Fatal(err)
			}
			type row struct {
				group, uid, name, verb, user, kind, dest, rule string
				deleted                                        bool
			}
			var got []row
			var r row
			if _, err := pgx.ForEachRow(rows, []any{&r.group, &r.uid, &r.name, &r.verb, &r.user, &r.kind, &r.dest, &r.rule, &r.deleted}, func() error {
				got = append(got, r)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var collection string
			if err := s.Pool().QueryRow(ctx, `SELECT 'collection:' || encode(event_key, 'hex') FROM events WHERE verb = 'deletecollection'`).Scan(&collection); err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 {
				t.Fatalf("outbox: %+v; want the 3 ConfigMaps of the collection and the single delete", got)
			}
			for i, r := range got[:3] {
				want := row{collection, fmt.Sprintf("c%d", i), fmt.Sprintf("cm-%d", i), "deletecollection", "bob", "ConfigMap", "chat", "ops/deletes", true}
				if r != want {
					t.Errorf("outbox row %d: %+v; want %+v", i, r, want)
				}
			}
			if r := got[3]; r.name != "solo" || r.group != "user:bob" || !strings.HasPrefix(r.uid, model.UnknownUIDPrefix) {
				t.Errorf("single delete's outbox row: %+v; want its unknown- change's, once", r)
			}
			if _, err := s.GroupNotifications(ctx, 0); err != nil {
				t.Fatal(err)
			}
			items := map[string]int{}
			for {
				m, err := s.ClaimNotification(ctx, "chat", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if m == nil {
					break
				}
				items[m.GroupKey] = len(m.Items)
			}
			if items[collection] != 3 || len(items) != 2 {
				t.Errorf("messages (group: items): %v; want one of the collection's 3 deletions", items)
			}
			if c.logged {
				var pending int
				if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM log_pending WHERE kind = $1 AND uid IN ('c0', 'c1', 'c2')`, pendingVersion).Scan(&pending); err != nil || pending != 6 {
					t.Errorf("log_pending rows of the collection's objects: %d, %v; want 6 (3 states, 3 deletions)", pending, err)
				}
			}
		})
	}
}

// The namespace controller's deletecollection logged at Metadata: the
// deletions confirmation records of it are queued into the incident of
// the namespace's deletion.
func TestConfirmedCascadeJoinsItsNamespaceIncident(t *testing.T) {
	s := openStore(t)
	nsDel := auditEvent("1", "delete", "carol", "namespaces", "team", "team", time.Minute, nil)
	nsDel.ObjectRef = &auditv1.ObjectReference{Resource: "namespaces", Namespace: "team", Name: "team", APIVersion: "v1"}
	dc := auditEvent("2", "deletecollection", "system:serviceaccount:kube-system:namespace-controller", "configmaps", "team", "", 2*time.Minute, nil, idA, idB)
	storeRouted(t, s, nsDel, dc)
	storeObservations(t, s,
		observation(t, idA, "DELETE", "configmaps", "team", "one", "10.0.0.1", obj("ConfigMap", "configmaps", "team", "one", "c1", 5, map[string]string{"k": "1"})),
		observation(t, idB, "DELETE", "configmaps", "team", "two", "10.0.0.1", obj("ConfigMap", "configmaps", "team", "two", "c2", 6, map[string]string{"k": "2"})))
	var groups []string
	rows, err := s.Pool().Query(context.Background(), `SELECT group_key || ' ' || resource || '/' || name FROM notification_outbox ORDER BY resource, name`)
	if err != nil {
		t.Fatal(err)
	}
	if groups, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	want := []string{"namespace:team configmaps/one", "namespace:team configmaps/two", "namespace:team namespaces/team"}
	if fmt.Sprint(groups) != fmt.Sprint(want) {
		t.Errorf("outbox: %q; want %q", groups, want)
	}
}
