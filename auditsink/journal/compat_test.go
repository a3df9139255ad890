package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// v1Dir holds segments written by the release before the journal had its
// own record types (payload version 1: model.Batch encoded by Go field
// names). The files are committed; TestGenerateJournalV1 wrote them.
const v1Dir = "testdata/journal-v1"

func key(s string) []byte {
	k := sha256.Sum256([]byte(s))
	return k[:]
}

func rv(n int64) *int64 { return &n }

// v1Batches are the batches in v1Dir: a ConfigMap created, a Secret updated
// (its data digested) by an impersonating user, a Deployment's status updated, a Deployment deleted, a
// baseline LIST's observation and a refused patch.
func v1Batches() []*model.Batch {
	t0 := time.Date(2026, 11, 20, 9, 15, 30, 123456000, time.UTC)
	cmEvent := key("default/audit-0001/ResponseComplete")
	secEvent := key("default/audit-0002/ResponseComplete")
	delEvent := key("default/audit-0003/ResponseComplete")
	statusEvent := key("default/audit-0005/ResponseComplete")
	return []*model.Batch{
		{
			Events: []model.Event{{
				Cluster: "default", Key: cmEvent, StageAt: t0, ReceivedAt: t0.Add(40 * time.Millisecond),
				AuditID: "6f1c2a7e-0b7d-4d43-9a43-0e5f1c2d0001", Stage: "ResponseComplete", Verb: "create",
				RequestURI: "/api/v1/namespaces/web/configmaps?fieldManager=kubectl-client-side-apply",
				Username:   "alice@example.com", UserUID: "u-alice", UserGroups: []string{"developers", "system:authenticated"},
				SourceIPs: []string{"10.0.3.17"}, UserAgent: "kubectl/v1.31.2 (linux/amd64) kubernetes/5864a46",
				APIVersion: "v1", Resource: "configmaps", Namespace: "web", Name: "web-config",
				ObjectUID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0001", ResponseCode: 201,
				Annotations: []byte(`{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by RoleBinding \"dev/web\""}`),
				Rules:       []string{"options-record/all"},
			}},
			Versions: []model.Version{{
				Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0001", Key: key("cm-version-1"),
				ResourceVersion: rv(184467), Origin: model.OriginChange, Verb: "create", ChangedAt: t0, EventKey: cmEvent,
				APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "web", Name: "web-config",
				Created: true, Complete: true,
				Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"web","uid":"0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0001","resourceVersion":"184467","labels":{"app":"web"}},"data":{"config.yaml":"a: 1\nb: [x, y, z]\n","greeting":"héllo, wörld"}}`),
				Rules:  []string{"options-record/all"},
			}},
		},
		{
			Events: []model.Event{{
				Cluster: "default", Key: statusEvent, StageAt: t0.Add(time.Minute), ReceivedAt: t0.Add(time.Minute),
				AuditID: "6f1c2a7e-0b7d-4d43-9a43-0e5f1c2d0005", Stage: "ResponseComplete", Verb: "update",
				RequestURI: "/apis/apps/v1/namespaces/web/deployments/frontend/status", Username: "system:serviceaccount:kube-system:deployment-controller",
				UserUID: "u-dc", UserGroups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
				SourceIPs: []string{"172.18.0.2"}, UserAgent: "kube-controller-manager/v1.31.2 (linux/amd64) kubernetes/5864a46/system:serviceaccount:kube-system:deployment-controller",
				APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "status", Namespace: "web", Name: "frontend",
				ObjectUID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0003", ResponseCode: 200, Rules: []string{"options-record/all"},
			}},
			Versions: []model.Version{{
				Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0003", Key: key("deploy-status-3"),
				ResourceVersion: rv(184480), Origin: model.OriginChange, Verb: "update", ChangedAt: t0.Add(time.Minute), EventKey: statusEvent,
				APIGroup: "apps", APIVersion: "v1", Kind: "Deployment", Resource: "deployments", Subresource: "status", Namespace: "web", Name: "frontend",
				Complete: true,
				Object:   []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"frontend","namespace":"web","resourceVersion":"184480","generation":4},"spec":{"replicas":3},"status":{"observedGeneration":4,"readyReplicas":3,"replicas":3}}`),
				Rules:    []string{"options-record/all"},
			}},
		},
		{
			Events: []model.Event{{
				Cluster: "default", Key: secEvent, StageAt: t0.Add(2 * time.Minute), ReceivedAt: t0.Add(2*time.Minute + 15*time.Millisecond),
				AuditID: "6f1c2a7e-0b7d-4d43-9a43-0e5f1c2d0002", Stage: "ResponseComplete", Verb: "patch",
				RequestURI: "/api/v1/namespaces/web/secrets/db-credentials", Username: "system:serviceaccount:ci:deployer",
				UserUID: "u-deployer", UserGroups: []string{"system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"},
				UserExtra:          []byte(`{"authentication.kubernetes.io/pod-name":["runner-7c9f"],"authentication.kubernetes.io/pod-uid":["a1b2"]}`),
				ImpersonatedUser:   "bob@example.com",
				ImpersonatedGroups: []string{"ops"},
				SourceIPs:          []string{"10.0.9.4", "192.168.1.20"},
				UserAgent:          "argocd-application-controller/v2.12.3",
				APIVersion:         "v1", Resource: "secrets", Namespace: "web", Name: "db-credentials",
				ObjectUID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0002", ResponseCode: 200,
				RequestObject:  []byte(`{"data":{"password":"sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"}}`),
				Annotations:    []byte(`{"authorization.k8s.io/decision":"allow"}`),
				Rules:          []string{"options-record/all", "web/secrets"},
				SecretDigested: true,
			}},
			Versions: []model.Version{{
				Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0002", Key: key("secret-version-7"),
				ResourceVersion: rv(184502), Origin: model.OriginChange, Verb: "patch", ChangedAt: t0.Add(2 * time.Minute), EventKey: secEvent,
				APIVersion: "v1", Kind: "Secret", Resource: "secrets", Namespace: "web", Name: "db-credentials", Complete: true,
				Object:         []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-credentials","namespace":"web","resourceVersion":"184502"},"type":"Opaque","data":{"password":"sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8","username":"sha256:8c6976e5b5410415bde908bd4dee15dfb167a9c873fc4bb8a81f6f2ab448a918"}}`),
				SecretDigested: true,
				Rules:          []string{"options-record/all", "web/secrets"},
			}},
		},
		{
			Events: []model.Event{
				{
					Cluster: "default", Key: delEvent, StageAt: t0.Add(5 * time.Minute), ReceivedAt: t0.Add(5*time.Minute + time.Second),
					AuditID: "6f1c2a7e-0b7d-4d43-9a43-0e5f1c2d0003", Stage: "ResponseComplete", Verb: "delete",
					RequestURI: "/apis/apps/v1/namespaces/web/deployments/frontend", Username: "alice@example.com", UserUID: "u-alice",
					UserGroups: []string{"developers"}, ImpersonatedGroups: []string{}, SourceIPs: []string{"10.0.3.17"},
					APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "web", Name: "frontend",
					ObjectUID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0003", ResponseCode: 200,
					RequestObject: []byte(`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Foreground"}`),
					Rules:         []string{"options-record/all"},
				},
				{
					Cluster: "default", Key: key("default/audit-0004/ResponseComplete"), StageAt: t0.Add(6 * time.Minute),
					AuditID: "6f1c2a7e-0b7d-4d43-9a43-0e5f1c2d0004", Stage: "ResponseComplete", Verb: "patch",
					RequestURI: "/apis/apps/v1/namespaces/kube-system/deployments/coredns/scale", Username: "mallory@example.com",
					UserGroups: []string{"contractors"}, SourceIPs: []string{"203.0.113.9"}, UserAgent: "curl/8.5.0",
					APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "scale", Namespace: "kube-system", Name: "coredns",
					ResponseCode: 403, ResponseReason: "Forbidden",
					ResponseMessage: `deployments.apps "coredns" is forbidden: User "mallory@example.com" cannot patch resource "deployments/scale" in API group "apps" in the namespace "kube-system"`,
					RequestObject:   []byte(`{"spec":{"replicas":0}}`),
					Annotations:     []byte(`{"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""}`),
					Rules:           []string{"options-record/all"},
				},
			},
			Versions: []model.Version{
				{
					Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0003", Key: key("deploy-deleted"),
					ResourceVersion: rv(184611), Origin: model.OriginChange, Verb: "delete", ChangedAt: t0.Add(5 * time.Minute), EventKey: delEvent,
					APIGroup: "apps", APIVersion: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "web", Name: "frontend",
					Deleted: true, Rules: []string{"options-record/all"},
				},
				{
					Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0005", Key: key("baseline/web/frontend-svc"),
					ResourceVersion: rv(170001), Origin: model.OriginBaseline, Verb: "list", ChangedAt: t0.Add(-time.Hour),
					APIVersion: "v1", Kind: "Service", Resource: "services", Namespace: "web", Name: "frontend-svc", Complete: true,
					Object: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"frontend-svc","namespace":"web","resourceVersion":"170001"},"spec":{"ports":[{"port":80,"targetPort":8080}],"selector":{"app":"frontend"}}}`),
				},
				{
					Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0006", Key: key("baseline/web/unknown-rv"),
					Origin: model.OriginBaseline, Verb: "list", ChangedAt: t0.Add(-time.Hour),
					APIVersion: "v1", Kind: "ServiceAccount", Resource: "serviceaccounts", Namespace: "web", Name: "default",
				},
			},
		},
	}
}

// TestGenerateJournalV1 rewrites v1Dir when JOURNAL_V1_GENERATE=1. The
// committed files were written by the release before version 2 (its
// journal, through WriteBatch, with SegmentBytes 2048); this writes the same
// records with encodeRecordV1, in segments rotated alike.
func TestGenerateJournalV1(t *testing.T) {
	if os.Getenv("JOURNAL_V1_GENERATE") != "1" {
		t.Skip("set JOURNAL_V1_GENERATE=1 to rewrite " + v1Dir)
	}
	if err := os.RemoveAll(v1Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(v1Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const segmentBytes = 2048
	var seg []byte
	seq := uint64(1)
	flush := func() {
		if err := os.WriteFile(filepath.Join(v1Dir, segmentName(seq)), seg, 0o644); err != nil {
			t.Fatal(err)
		}
		seq, seg = seq+1, nil
	}
	for _, b := range v1Batches() {
		if len(seg) >= segmentBytes {
			flush()
		}
		rec, err := encodeRecordV1(b, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		seg = append(seg, rec...)
	}
	flush()
	t.Logf("wrote %d segments to %s", seq-1, v1Dir)
}

// encodeRecordV1 encodes b as the release before version 2 did.
func encodeRecordV1(b *model.Batch, at time.Time) ([]byte, error) {
	r := toRecord(b)
	v1 := batchV1{Events: makeNil[eventV1](len(r.Events)), Versions: makeNil[versionV1](len(r.Versions))}
	for i := range r.Events {
		v1.Events[i] = eventV1(r.Events[i])
	}
	for i := range r.Versions {
		v1.Versions[i] = versionV1(r.Versions[i])
	}
	payload, err := json.Marshal(struct {
		V     int      `json:"v"`
		Batch *batchV1 `json:"batch"`
	}{payloadV1, &v1})
	if err != nil {
		return nil, err
	}
	return frame(payload, at)
}

// TestJournalV1DrainsIntoPostgreSQL opens a journal written by the release
// before payload version 2 and drains it into a real PostgreSQL: every
// event and version arrives with every field.
func TestJournalV1DrainsIntoPostgreSQL(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	dir := t.TempDir()
	segs, _ := filepath.Glob(filepath.Join(v1Dir, "*"+segmentExt))
	if len(segs) < 2 {
		t.Fatalf("%s holds %d segments, want 2 or more", v1Dir, len(segs))
	}
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(s)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := &model.Batch{}
	for _, b := range v1Batches() {
		want.Events = append(want.Events, b.Events...)
		want.Versions = append(want.Versions, b.Versions...)
	}
	j := open(t, dir, st, Options{RetryMin: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	if n := j.Backlog(); n != len(v1Batches()) {
		t.Fatalf("backlog = %d batches, want %d", n, len(v1Batches()))
	}
	run(t, j)
	waitDrained(t, j)
	if n := value(t, j.m.quarantined); n != 0 {
		t.Fatalf("%v batches quarantined", n)
	}
	got := storedBatch(t, st)
	if diff := cmp.Diff(sortBatch(want), got, jsonFields); diff != "" {
		t.Errorf("stored rows differ from the journaled batches (-want +got):\n%s", diff)
	}
}

// jsonFields compares the JSON columns by value: jsonb reformats them.
var jsonFields = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Index(-1).(cmp.StructField)
	if !ok {
		return false
	}
	switch sf.Name() {
	case "UserExtra", "Annotations", "RequestObject", "Object":
		return true
	}
	return false
}, cmp.Comparer(func(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}))

// storedBatch reads every event and version back, ordered by key. Arrays
// the store writes as '{}' for nil read back as nil.
func storedBatch(t *testing.T, st *store.Store) *model.Batch {
	t.Helper()
	ctx := context.Background()
	empty := func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	rows, err := st.Pool().Query(ctx, `
SELECT cluster, event_key, stage_at, received_at, audit_id, stage, verb, request_uri, username,
       coalesce(user_uid, ''), user_groups, user_extra, coalesce(impersonated_user, ''), impersonated_groups,
       source_ips, coalesce(user_agent, ''), api_group, api_version, resource, subresource, namespace, name,
       coalesce(object_uid, ''), response_code, coalesce(response_reason, ''), coalesce(response_message, ''),
       request_object, annotations, rules, secret_digested
FROM events ORDER BY audit_id`)
	if err != nil {
		t.Fatal(err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Event, error) {
		var e model.Event
		var received *time.Time
		err := r.Scan(&e.Cluster, &e.Key, &e.StageAt, &received, &e.AuditID, &e.Stage, &e.Verb, &e.RequestURI, &e.Username,
			&e.UserUID, &e.UserGroups, &e.UserExtra, &e.ImpersonatedUser, &e.ImpersonatedGroups,
			&e.SourceIPs, &e.UserAgent, &e.APIGroup, &e.APIVersion, &e.Resource, &e.Subresource, &e.Namespace, &e.Name,
			&e.ObjectUID, &e.ResponseCode, &e.ResponseReason, &e.ResponseMessage,
			&e.RequestObject, &e.Annotations, &e.Rules, &e.SecretDigested)
		if received != nil {
			e.ReceivedAt = *received
		}
		e.UserGroups, e.SourceIPs, e.Rules = empty(e.UserGroups), empty(e.SourceIPs), empty(e.Rules)
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err = st.Pool().Query(ctx, `
SELECT cluster, uid, version_key, resource_version, origin, verb, changed_at, event_key, api_group, api_version,
       kind, resource, subresource, namespace, name, created, deleted, complete, object, secret_digested, rules
FROM object_versions`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Version, error) {
		var v model.Version
		err := r.Scan(&v.Cluster, &v.UID, &v.Key, &v.ResourceVersion, &v.Origin, &v.Verb, &v.ChangedAt, &v.EventKey,
			&v.APIGroup, &v.APIVersion, &v.Kind, &v.Resource, &v.Subresource, &v.Namespace, &v.Name,
			&v.Created, &v.Deleted, &v.Complete, &v.Object, &v.SecretDigested, &v.Rules)
		v.Rules = empty(v.Rules)
		return v, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sortBatch(&model.Batch{Events: events, Versions: versions})
}

// sortBatch orders events by audit ID, versions by their event's audit ID
// (baselines, without an event, last) and uid.
func sortBatch(b *model.Batch) *model.Batch {
	auditID := map[string]string{}
	for _, e := range b.Events {
		auditID[string(e.Key)] = e.AuditID
	}
	slices.SortFunc(b.Events, func(x, y model.Event) int { return strings.Compare(x.AuditID, y.AuditID) })
	slices.SortFunc(b.Versions, func(x, y model.Version) int {
		kx, ky := auditID[string(x.EventKey)], auditID[string(y.EventKey)]
		if (kx == "") != (ky == "") {
			if kx == "" {
				return 1
			}
			return -1
		}
		if c := strings.Compare(kx, ky); c != 0 {
			return c
		}
		return strings.Compare(x.UID, y.UID)
	})
	return b
}
