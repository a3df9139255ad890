package aggregated

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"

	agg "github.com/options-record/options-record/api/aggregated"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

const (
	serverUser   = "options-record-aggregated" // the aggregated server's own identity
	svcNamespace = "options-record"
	svcName      = "options-record-api"
	apiService   = "v1alpha1.record.optionsrecord.io"
)

// env is a control plane with aggregation, an audit log and the aggregated
// server registered by an APIService.
type env struct {
	cp       *controlplane.ControlPlane
	admin    kubernetes.Interface
	auditLog string
	srv      *backend
	caPEM    []byte // signed the aggregated server's serving certificate
}

// backend is the aggregated server running in this process; it can be
// stopped and started again on the same address.
type backend struct {
	t     *testing.T
	addr  string
	opts  agg.Options
	stop  context.CancelFunc
	done  chan error
	hooks []string
}

func (b *backend) start() {
	b.t.Helper()
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may linger briefly after a stop
		if l, err = net.Listen("tcp", b.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("listen on %s: %v", b.addr, err)
	}
	b.addr = l.Addr().String()
	opts := b.opts
	opts.Listener = l
	s, err := agg.New(opts)
	if err != nil {
		l.Close()
		b.t.Fatalf("new aggregated server: %v", err)
	}
	b.hooks = s.PostStartHooks()
	ctx, cancel := context.WithCancel(context.Background())
	b.stop, b.done = cancel, make(chan error, 1)
	go func() { b.done <- s.Run(ctx) }()
}

func (b *backend) shutdown() {
	if b.stop == nil {
		return
	}
	b.stop()
	select {
	case err := <-b.done:
		if err != nil {
			b.t.Logf("aggregated server stopped: %v", err)
		}
	case <-time.After(30 * time.Second):
		b.t.Errorf("aggregated server did not stop within 30s")
	}
	b.stop = nil
}

func (b *backend) port() string {
	_, p, _ := net.SplitHostPort(b.addr)
	return p
}

var auditPolicy = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`)

// setup starts the control plane, the aggregated server and registers it.
func setup(t *testing.T, users []controlplane.User) *env {
	t.Helper()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, auditPolicy, 0o600); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	cp := controlplane.Start(t, controlplane.Options{
		Users:              append([]controlplane.User{{Name: serverUser}}, users...),
		Aggregation:        true,
		AuditPolicyFile:    policy,
		ExtraAPIServerArgs: []string{"--audit-log-path=" + auditLog, "--audit-log-format=json"},
	})
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{svcNamespace, "shop", "other"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// TokenReview and SubjectAccessReview: the only rights the server needs.
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "options-record-aggregated:auth-delegator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: serverUser}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Serving certificate for the name the aggregator verifies.
	ca, err := certs.NewCA("options-record-aggregated-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue(svcName, []string{svcName + "." + svcNamespace + ".svc", "localhost", "127.0.0.1"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := serving.Write(dir, "serving")
	if err != nil {
		t.Fatal(err)
	}
	hist, svc := emptyRecord(t)
	b := &backend{t: t, addr: "127.0.0.1:0", opts: agg.Options{
		CertFile:                  certFile,
		KeyFile:                   keyFile,
		RequestHeaderCAFile:       cp.FrontProxyCAFile(),
		RequestHeaderAllowedNames: []string{controlplane.FrontProxyClientName},
		Kubeconfig:                cp.WriteKubeconfig(t, serverUser),
		History:                   hist,
		Restore:                   svc,
		Cluster:                   "e2e",
	}}
	b.start()
	t.Cleanup(b.shutdown)
	t.Logf("aggregated server on %s; post-start hooks: %v", b.addr, b.hooks)

	e := &env{cp: cp, admin: admin, auditLog: auditLog, srv: b, caPEM: ca.CertPEM}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  type: ExternalName
  externalName: localhost
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %[3]s}
spec:
  group: record.optionsrecord.io
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {namespace: %[2]s, name: %[1]s, port: %[4]s}
  caBundle: %[5]s
`, svcName, svcNamespace, apiService, b.port(), b64(ca.CertPEM))
	e.kubectl(t, controlplane.AdminUser, []byte(manifest), "apply", "-f", "-")
	begin := time.Now()
	e.waitAvailable(t, "True", 60*time.Second)
	t.Logf("APIService Available after %s", time.Since(begin).Round(100*time.Millisecond))
	// The aggregator downloads the backend's OpenAPI v3 a moment after it
	// becomes available; until then kubectl explain fails and kubectl
	// create cannot find the kind's schema.
	deadline := time.Now().Add(60 * time.Second)
	for {
		root, _, _ := cp.Kubectl(t, controlplane.AdminUser, nil, "get", "--raw", "/openapi/v3")
		if strings.Contains(root, "apis/record.optionsrecord.io/v1alpha1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/openapi/v3 never listed apis/record.optionsrecord.io/v1alpha1")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("OpenAPI v3 of the group aggregated %s after apply", time.Since(begin).Round(100*time.Millisecond))

	return e
}

// emptyRecord serves an empty record: the measurement needs the server up,
// not its answers.
func emptyRecord(t *testing.T) (*history.Service, *restore.Service) {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	h, err := history.New(history.Options{Reader: st, Authorizer: authorizerfactory.NewAlwaysDenyAuthorizer()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := restore.New(restore.Options{History: h, Reader: st})
	if err != nil {
		t.Fatal(err)
	}
	return h, svc
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// kubectl runs kubectl as a token user and fails the test on an error.
func (e *env) kubectl(t *testing.T, user string, stdin []byte, args ...string) string {
	t.Helper()
	out, errOut, err := e.cp.Kubectl(t, user, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s as %s: %v\n%s%s", strings.Join(args, " "), user, err, out, errOut)
	}
	return out
}

// waitAvailable waits for the APIService's Available condition.
func (e *env) waitAvailable(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, _, _ := e.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "apiservice", apiService,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		if last = out; strings.HasPrefix(out, want) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("APIService %s not Available=%s within %s (last: %q)", apiService, want, timeout, last)
}
