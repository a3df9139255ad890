package controlplane

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
)

func TestRenderWebhookKubeconfig(t *testing.T) {
	ca, err := certs.NewCA("render-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue("apiserver", nil, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := client.CertPEM, client.KeyPEM
	for _, tc := range []struct {
		name string
		cfg  WebhookKubeconfig
	}{
		{"client certificate", WebhookKubeconfig{Server: "https://127.0.0.1:8443/audit/v1", CAData: ca.CertPEM, ClientCertData: cert, ClientKeyData: key}},
		{"token", WebhookKubeconfig{Server: "https://sink.example:8443/audit", CAData: ca.CertPEM, Token: "abc.def"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := WriteWebhookKubeconfig(t, tc.cfg)
			kc, err := clientcmd.LoadFromFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
			if err != nil {
				t.Fatalf("rendered kubeconfig is not usable by client-go: %v", err)
			}
			if rc.Host != tc.cfg.Server || rc.BearerToken != tc.cfg.Token ||
				string(rc.CertData) != string(tc.cfg.ClientCertData) || string(rc.KeyData) != string(tc.cfg.ClientKeyData) {
				t.Errorf("rendered config %+v does not match %+v", rc, tc.cfg)
			}
		})
	}

	tmpl, err := os.ReadFile(RepoFile(t, WebhookKubeconfigTemplatePath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RenderWebhookKubeconfig(tmpl, WebhookKubeconfig{Server: "https://x", ClientCertData: cert}); err == nil {
		t.Error("a certificate without its key was accepted")
	}
	if _, err := RenderWebhookKubeconfig([]byte("apiVersion: v1\nkind: Config\n"), WebhookKubeconfig{Server: "https://x"}); err == nil {
		t.Error("a template without placeholders was accepted")
	}
}

func TestShippedPolicyLoads(t *testing.T) {
	data, err := os.ReadFile(PolicyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "kind: Policy") {
		t.Fatal("deploy/audit/policy.yaml is not an audit Policy")
	}
}

// TestControllers checks that kube-controller-manager's namespace and
// garbage-collector controllers work with both credential modes.
func TestControllers(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "service-account-credentials"
		if shared {
			name = "shared-credentials"
		}
		t.Run(name, func(t *testing.T) {
			logDir := filepath.Join(t.TempDir(), "logs")
			cp := Start(t, Options{SharedControllerCredentials: shared, LogDir: logDir})
			for _, f := range []string{"etcd.log", "kube-apiserver.log", "kube-controller-manager.log"} {
				if _, err := os.Stat(filepath.Join(logDir, f)); err != nil {
					t.Errorf("log file: %v", err)
				}
			}
			c, err := kubernetes.NewForConfig(cp.AdminConfig())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()

			ns := "ctl"
			if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			owner, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
			}}}}
			if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			// Garbage collector: deleting the owner removes the dependent.
			if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Fatalf("garbage collector did not delete the dependent ConfigMap: %v", err)
			}

			// Namespace controller: the namespace and its content go away.
			if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Fatalf("namespace controller did not finish deleting the namespace: %v", err)
			}
		})
	}
}

// TestStartTakesAnotherPortWhenOneIsTaken: a port chosen free and taken by
// another process before etcd or the kube-apiserver binds it costs a
// restart on new ports, not the test.
func TestStartTakesAnotherPortWhenOneIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	handedOut := 0
	pickPorts = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if err == nil && handedOut < 2 { // etcd's client port, then the apiserver's
			handedOut++
			ports[0] = port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	before := bindRetries.Load()

	cp := Start(t, Options{DisableControllerManager: true})
	if got := bindRetries.Load() - before; got != 2 {
		t.Errorf("%d processes started again, want 2 (etcd and the kube-apiserver)", got)
	}
	c, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the control plane started on other ports does not answer: %v", err)
	}
}
