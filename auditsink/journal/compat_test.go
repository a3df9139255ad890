package journal

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/options-record/options-record/store"
)

// v1Dir holds segments written by the release before the journal had its
// own record types (payload version 1: store.Batch encoded by Go field
// names). The files are committed; TestGenerateJournalV1 wrote them.
const v1Dir = "testdata/journal-v1"

func key(s string) []byte {
	k := sha256.Sum256([]byte(s))
	return k[:]
}

func rv(n int64) *int64 { return &n }

// v1Batches are the batches in v1Dir: a ConfigMap created, a Secret updated
// (its data digested) by an impersonating user, a Deployment deleted, a
// baseline LIST's observation and a refused patch.
func v1Batches() []*store.Batch {
	t0 := time.Date(2026, 11, 20, 9, 15, 30, 123456000, time.UTC)
	cmEvent := key("default/audit-0001/ResponseComplete")
	secEvent := key("default/audit-0002/ResponseComplete")
	delEvent := key("default/audit-0003/ResponseComplete")
	return []*store.Batch{
		{
			Events: []store.Event{{
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
			Versions: []store.Version{{
				Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0001", Key: key("cm-version-1"),
				ResourceVersion: rv(184467), Origin: store.OriginChange, Verb: "create", ChangedAt: t0, EventKey: cmEvent,
				APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "web", Name: "web-config",
				Created: true, Complete: true,
				Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"web","uid":"0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0001","resourceVersion":"184467","labels":{"app":"web"}},"data":{"config.yaml":"a: 1\nb: [x, y, z]\n","greeting":"héllo, wörld"}}`),
				Rules:  []string{"options-record/all"},
			}},
		},
		{
			Events: []store.Event{{
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
			Versions: []store.Version{{
				Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0002", Key: key("secret-version-7"),
				ResourceVersion: rv(184502), Origin: store.OriginChange, Verb: "patch", ChangedAt: t0.Add(2 * time.Minute), EventKey: secEvent,
				APIVersion: "v1", Kind: "Secret", Resource: "secrets", Namespace: "web", Name: "db-credentials", Complete: true,
				Object:         []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-credentials","namespace":"web","resourceVersion":"184502"},"type":"Opaque","data":{"password":"sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8","username":"sha256:8c6976e5b5410415bde908bd4dee15dfb167a9c873fc4bb8a81f6f2ab448a918"}}`),
				SecretDigested: true,
				Rules:          []string{"options-record/all", "web/secrets"},
			}},
		},
		{
			Events: []store.Event{
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
			Versions: []store.Version{
				{
					Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0003", Key: key("deploy-deleted"),
					ResourceVersion: rv(184611), Origin: store.OriginChange, Verb: "delete", ChangedAt: t0.Add(5 * time.Minute), EventKey: delEvent,
					APIGroup: "apps", APIVersion: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "web", Name: "frontend",
					Deleted: true, Rules: []string{"options-record/all"},
				},
				{
					Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0005", Key: key("baseline/web/frontend-svc"),
					ResourceVersion: rv(170001), Origin: store.OriginBaseline, Verb: "list", ChangedAt: t0.Add(-time.Hour),
					APIVersion: "v1", Kind: "Service", Resource: "services", Namespace: "web", Name: "frontend-svc", Complete: true,
					Object: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"frontend-svc","namespace":"web","resourceVersion":"170001"},"spec":{"ports":[{"port":80,"targetPort":8080}],"selector":{"app":"frontend"}}}`),
				},
				{
					Cluster: "default", UID: "0d6f4a9b-6e1e-4f55-8d1f-3c8a0b8e0006", Key: key("baseline/web/unknown-rv"),
					Origin: store.OriginBaseline, Verb: "list", ChangedAt: t0.Add(-time.Hour),
					APIVersion: "v1", Kind: "ServiceAccount", Resource: "serviceaccounts", Namespace: "web", Name: "default",
				},
			},
		},
	}
}

// TestGenerateJournalV1 rewrites v1Dir when JOURNAL_V1_GENERATE=1.
func TestGenerateJournalV1(t *testing.T) {
	if os.Getenv("JOURNAL_V1_GENERATE") != "1" {
		t.Skip("set JOURNAL_V1_GENERATE=1 to rewrite " + v1Dir)
	}
	dir := t.TempDir()
	f := &fakeStore{down: true}
	j := open(t, dir, f, Options{SegmentBytes: 2048})
	for _, b := range v1Batches() {
		if _, err := j.WriteBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(v1Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(v1Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	if len(segs) == 0 {
		t.Fatal("no segments written")
	}
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v1Dir, filepath.Base(s)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d segments to %s", len(segs), v1Dir)
}
