package store

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/tamper"
)

// BenchmarkEventDigest: what the ingest spends on an event's row digest
// (the tamper-evident log), with a service account's user.extra and
// authorization annotations: jsonbText is most of it.
func BenchmarkEventDigest(b *testing.B) {
	k := sha256.Sum256([]byte("x"))
	e := &model.Event{Cluster: "default", Key: k[:], StageAt: time.Now(), ReceivedAt: time.Now(), AuditID: "a7c1f0b2-0000-4000-8000-000000000000",
		Stage: "ResponseComplete", Verb: "patch", RequestURI: "/apis/apps/v1/namespaces/prod/deployments/web", Username: "system:serviceaccount:kube-system:deployment-controller",
		UserGroups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
		UserExtra:  []byte(`{"authentication.kubernetes.io/credential-id":["JTI=0f1e2d3c"],"authentication.kubernetes.io/node-name":["node-1"],"authentication.kubernetes.io/pod-name":["p"],"authentication.kubernetes.io/pod-uid":["u"]}`),
		SourceIPs:  []string{"10.0.0.1"}, UserAgent: "kube-controller-manager/v1.31.0", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "prod", Name: "web",
		ObjectUID: "u", ResponseCode: 200, Annotations: []byte(`{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"system:controller:deployment-controller\""}`),
		Rules: []string{"r"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eventDigest(e, time.Now(), tamper.EventDigest); err != nil {
			b.Fatal(err)
		}
	}
}
