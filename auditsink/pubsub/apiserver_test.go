package pubsub_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/test/framework/controlplane"
)

var update = flag.Bool("update", false, "capture testdata/apiserver-audit.jsonl from a real kube-apiserver")

// testNamespace is where the workload acts.
const testNamespace = "gke"

// runWorkload starts a real kube-apiserver whose log backend writes the
// audit log (the shipped policy), does the changes the tests record, and
// returns the audit events of the test namespace, in the log's order.
func runWorkload(t *testing.T) []auditv1.Event {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	cp := controlplane.Start(t, controlplane.Options{
		Users: []controlplane.User{
			{Name: "alice", Groups: []string{"dev", "system:masters"}},
			{Name: "bob", Groups: []string{"ops", "system:masters"}},
		},
		AuditPolicyFile: controlplane.PolicyFile(t),
		// The log backend in blocking mode: an event is written before its
		// request is answered.
		ExtraAPIServerArgs:       []string{"--audit-log-path=" + logPath, "--audit-log-format=json", "--audit-log-mode=blocking"},
		DisableControllerManager: true,
	})
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	alice := kubernetes.NewForConfigOrDie(cp.UserConfig("alice"))
	bob := kubernetes.NewForConfigOrDie(cp.UserConfig("bob"))
	asCarol := rest.CopyConfig(cp.AdminConfig())
	asCarol.Impersonate = rest.ImpersonationConfig{UserName: "carol", Groups: []string{"system:masters"}}
	carol := kubernetes.NewForConfigOrDie(asCarol)
	asDave := rest.CopyConfig(cp.AdminConfig())
	asDave.Impersonate = rest.ImpersonationConfig{UserName: "dave"}
	dave := kubernetes.NewForConfigOrDie(asDave)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{})
	must(err)
	cms := alice.CoreV1().ConfigMaps(testNamespace)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "blue"}}, metav1.CreateOptions{})
	must(err)
	cm.Data["mode"] = "green"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	must(err)
	_, err = cms.Patch(ctx, "settings", "application/merge-patch+json", []byte(`{"data":{"size":"large"}}`), metav1.PatchOptions{})
	must(err)
	_, err = alice.CoreV1().Secrets(testNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
	must(err)
	// carol, impersonated by the admin, creates a ConfigMap; dave, with no
	// rights, is refused one.
	_, err = carol.CoreV1().ConfigMaps(testNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "by-carol"}}, metav1.CreateOptions{})
	must(err)
	if err := dave.CoreV1().ConfigMaps(testNamespace).Delete(ctx, "settings", metav1.DeleteOptions{}); err == nil {
		t.Fatal("dave deleted a ConfigMap without rights")
	}
	must(bob.CoreV1().ConfigMaps(testNamespace).Delete(ctx, "settings", metav1.DeleteOptions{}))
	must(bob.CoreV1().Secrets(testNamespace).Delete(ctx, "creds", metav1.DeleteOptions{}))
	return readAuditLog(t, logPath)
}

// readAuditLog reads the log backend's lines and keeps the events of the
// test namespace (the namespace itself included).
func readAuditLog(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line: %v", err)
		}
		r := ev.ObjectRef
		if r == nil || (r.Namespace != testNamespace && !(r.Resource == "namespaces" && r.Name == testNamespace)) {
			continue
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

const capturedLog = "testdata/apiserver-audit.jsonl"

// TestCaptureAPIServerAuditLog writes testdata/apiserver-audit.jsonl, the
// events a real kube-apiserver wrote for the workload, with -update.
func TestCaptureAPIServerAuditLog(t *testing.T) {
	if !*update {
		t.Skip("run with -update to capture testdata from a real kube-apiserver")
	}
	events := runWorkload(t)
	var buf bytes.Buffer
	for i := range events {
		line, err := json.Marshal(&events[i])
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(capturedLog, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// captured reads testdata/apiserver-audit.jsonl.
func captured(t testing.TB) []auditv1.Event {
	t.Helper()
	f, err := os.Open(capturedLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}
