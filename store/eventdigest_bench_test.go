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

// BenchmarkVersionDigest: what the ingest spends on a version's row digest,
// with a Deployment's object of about 3 KB: its SHA-256 (about 2 µs) must
// stay, the rest is the encoding.
func BenchmarkVersionDigest(b *testing.B) {
	k := sha256.Sum256([]byte("x"))
	rv := int64(123456)
	obj := benchDeployment()
	v := &model.Version{Cluster: "default", UID: "9b0c6e1e-6f1d-4b7a-9a55-0d8c7f5e2a11", Key: k[:], ResourceVersion: &rv,
		Origin: model.OriginChange, Verb: "patch", ChangedAt: time.Now(), EventKey: k[:], APIGroup: "apps", APIVersion: "v1",
		Kind: "Deployment", Resource: "deployments", Namespace: "prod", Name: "web", Object: obj,
		Rules: []string{"deployments", "prod-apps"}}
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := versionDigest(v, tamper.VersionDigest); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDeployment is a Deployment as the apiserver sends it, about 3 KB.
func benchDeployment() []byte {
	return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"deployment.kubernetes.io/revision":"7",` +
		`"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"annotations\":{},\"labels\":{\"app\":\"web\"},\"name\":\"web\",\"namespace\":\"prod\"},\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"image\":\"registry.example.com/web:1.27.3\",\"name\":\"web\",\"ports\":[{\"containerPort\":8080}]}]}}}}\n"},` +
		`"creationTimestamp":"2026-10-01T08:00:00Z","generation":7,"labels":{"app":"web","team":"storefront"},"name":"web","namespace":"prod",` +
		`"resourceVersion":"123456","uid":"9b0c6e1e-6f1d-4b7a-9a55-0d8c7f5e2a11"},"spec":{"progressDeadlineSeconds":600,"replicas":3,` +
		`"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"web"}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},` +
		`"template":{"metadata":{"annotations":{"prometheus.io/port":"9090","prometheus.io/scrape":"true"},"labels":{"app":"web","team":"storefront"}},` +
		`"spec":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"},"weight":100}]}},` +
		`"containers":[{"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"DB_HOST","value":"postgres.prod.svc"},{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"key":"password","name":"web-db"}}}],` +
		`"image":"registry.example.com/web:1.27.3","imagePullPolicy":"IfNotPresent","livenessProbe":{"failureThreshold":3,"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"periodSeconds":10,"successThreshold":1,"timeoutSeconds":1},` +
		`"name":"web","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"},{"containerPort":9090,"name":"metrics","protocol":"TCP"}],` +
		`"readinessProbe":{"failureThreshold":3,"httpGet":{"path":"/ready","port":8080,"scheme":"HTTP"},"periodSeconds":5,"successThreshold":1,"timeoutSeconds":1},` +
		`"resources":{"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"250m","memory":"256Mi"}},"securityContext":{"allowPrivilegeEscalation":false,"readOnlyRootFilesystem":true,"runAsNonRoot":true},` +
		`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","volumeMounts":[{"mountPath":"/tmp","name":"tmp"},{"mountPath":"/etc/web","name":"config","readOnly":true}]}],` +
		`"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{"fsGroup":2000},"serviceAccountName":"web","terminationGracePeriodSeconds":30,` +
		`"volumes":[{"emptyDir":{},"name":"tmp"},{"configMap":{"defaultMode":420,"name":"web-config"},"name":"config"}]}}},` +
		`"status":{"availableReplicas":3,"conditions":[{"lastTransitionTime":"2026-10-01T08:00:10Z","lastUpdateTime":"2026-10-01T08:00:10Z","message":"Deployment has minimum availability.","reason":"MinimumReplicasAvailable","status":"True","type":"Available"},` +
		`{"lastTransitionTime":"2026-10-01T08:00:00Z","lastUpdateTime":"2026-11-20T14:12:31Z","message":"ReplicaSet \"web-7d9f8c6b5d\" has successfully progressed.","reason":"NewReplicaSetAvailable","status":"True","type":"Progressing"}],` +
		`"observedGeneration":7,"readyReplicas":3,"replicas":3,"updatedReplicas":3}}`)
}
