package chart

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// fixedClusterIP is in the service range the test's apiserver is given.
const fixedClusterIP = "10.96.0.30"

func startControlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	return controlplane.Start(t, controlplane.Options{
		DisableControllerManager: true,
		ExtraAPIServerArgs:       []string{"--service-cluster-ip-range=10.96.0.0/16"},
	})
}

func kubectl(t *testing.T, cp *controlplane.ControlPlane, stdin []byte, args ...string) string {
	t.Helper()
	out, errOut, err := cp.Kubectl(t, controlplane.AdminUser, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// manifest is the rendered objects as one YAML stream.
func manifest(t *testing.T, r rendered, skipKinds ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, u := range r.objects {
		if contains(skipKinds, u.GetKind()) {
			continue
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestChartOnRealAPIServer applies the rendered chart server-side to the
// real kube-apiserver of the end-to-end harness, as `kubectl apply
// --server-side --dry-run=server --validate=strict` (the CRDs and the
// namespace for real first), with the default values, with every switch on,
// and with every Secret generated. Then it installs the chart for real with
// the Helm SDK into a namespace Helm creates, upgrades it, and uninstalls it:
// the generated certificate names the Services and the fixed clusterIP and
// is the APIService's caBundle, an upgrade keeps every generated Secret
// (lookup), and uninstalling removes the APIService and keeps the digest key
// and the demo database's passwords.
func TestChartOnRealAPIServer(t *testing.T) {
	c := loadChart(t)
	cp := startControlPlane(t)

	everything := pairings()[len(pairings())-1]
	if everything.name != "everything" {
		t.Fatalf("the last pairing is %q, not everything", everything.name)
	}
	all := renderChart(t, c, everything.values)
	var crds bytes.Buffer
	for _, u := range all.objects {
		if u.GetKind() == "CustomResourceDefinition" {
			data, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			crds.WriteString("---\n")
			crds.Write(data)
		}
	}
	// cert-manager's CRDs as test/shipcheck has them (a stand-in schema).
	cm, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "shipcheck", "testdata", "cert-manager-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crds.WriteString("---\n")
	crds.Write(cm)
	kubectl(t, cp, crds.Bytes(), "apply", "--server-side", "--field-manager=test-chart", "-f", "-")
	kubectl(t, cp, nil, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	nsObj := find(all.objects, "Namespace", namespace)
	if nsObj == nil {
		t.Fatal("namespace.create rendered no Namespace")
	}
	kubectl(t, cp, manifest(t, rendered{objects: []*unstructured.Unstructured{nsObj}}),
		"apply", "--server-side", "--field-manager=test-chart", "-f", "-")

	for _, v := range []struct {
		name   string
		values map[string]any
	}{
		{"defaults", nil},
		{"everything", everything.values},
		{"generated secrets", generatedValues()},
		{"scheduled verify", verifyValues(map[string]any{"verifierKey": verifierKey})},
	} {
		t.Run("dry-run "+v.name, func(t *testing.T) {
			r := renderChart(t, c, v.values)
			out := kubectl(t, cp, manifest(t, r, "CustomResourceDefinition"),
				"apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=helm", "-f", "-")
			if n, want := strings.Count(out, "(server dry run)"), len(without(r.objects, "CustomResourceDefinition")); n != want {
				t.Errorf("kubectl applied %d objects, the chart rendered %d:\n%s", n, want, out)
			}
		})
	}

	t.Run("helm install, upgrade, uninstall", func(t *testing.T) {
		helmLifecycle(t, cp, c)
	})
}

func helmLifecycle(t *testing.T, cp *controlplane.ControlPlane, c *chart.Chart) {
	const ns = "or-helm"
	ctx := context.Background()
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig := cp.WriteKubeconfig(t, controlplane.AdminUser)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = ptr(ns)
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	dyn := dynamic.NewForConfigOrDie(cp.AdminConfig())
	apiservices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})

	install := action.NewInstall(cfg)
	install.ReleaseName = releaseName
	install.Namespace = ns
	install.CreateNamespace = true
	install.Timeout = time.Minute
	rel, err := install.Run(c, generatedValues())
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	if !strings.Contains(rel.Info.Notes, "https://"+fixedClusterIP+"/audit") {
		t.Errorf("NOTES name no webhook URL on the fixed clusterIP:\n%s", rel.Info.Notes)
	}

	secrets := func() map[string]map[string][]byte {
		out := map[string]map[string][]byte{}
		for _, name := range []string{"options-record-tls", "options-record-webhook", "options-record-secret-digest",
			"options-record-postgres", "options-record-database", "options-record-database-api"} {
			s, err := admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("secret %s: %v", name, err)
			}
			if len(s.Data) == 0 {
				t.Fatalf("secret %s is empty", name)
			}
			out[name] = s.Data
		}
		return out
	}
	before := secrets()

	// The generated certificate: from its CA, for the Services' names and
	// both addresses (the fixed clusterIP and tls.ipAddresses).
	tls := before["options-record-tls"]
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(tls["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(tls["tls.crt"])
	if block == nil {
		t.Fatal("tls.crt holds no certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"options-record-webhook." + ns + ".svc", "options-record-api." + ns + ".svc",
		"options-record-aggregated." + ns + ".svc", fixedClusterIP, "10.96.0.31"} {
		opts := x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if net.ParseIP(name) != nil {
			opts.DNSName = ""
			if err := cert.VerifyHostname(name); err != nil {
				t.Errorf("certificate: %v", err)
			}
		}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("certificate for %s: %v", name, err)
		}
	}
	svc, err := admin.CoreV1().Services(ns).Get(ctx, "options-record-webhook", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != fixedClusterIP {
		t.Errorf("webhook Service: clusterIP %v, %v", svc.Spec.ClusterIP, err)
	}
	as, err := apiservices.Get(ctx, "v1alpha1.record.optionsrecord.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caBundle, _, _ := unstructuredString(as.Object, "spec", "caBundle")
	if caBundle == "" || !bytes.Equal(mustB64(t, caBundle), tls["ca.crt"]) {
		t.Errorf("APIService caBundle is not the generated CA")
	}
	vwc, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "options-record-observer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := vwc.Webhooks; len(w) != 1 || !bytes.Equal(w[0].ClientConfig.CABundle, tls["ca.crt"]) || w[0].ClientConfig.Service == nil ||
		w[0].ClientConfig.Service.Namespace != ns || len(w[0].Rules) != 0 {
		t.Errorf("the observing webhook's configuration: %+v, want the generated CA, the release's namespace and no rules", w)
	}

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = ns
	upgrade.Timeout = time.Minute
	if _, err := upgrade.Run(releaseName, c, generatedValues()); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	after := secrets()
	for name, data := range before {
		for k, v := range data {
			if !bytes.Equal(after[name][k], v) {
				t.Errorf("helm upgrade changed %s's %s", name, k)
			}
		}
	}

	if _, err := action.NewUninstall(cfg).Run(releaseName); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	if _, err := apiservices.Get(ctx, "v1alpha1.record.optionsrecord.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the APIService outlived helm uninstall: %v", err)
	}
	for name, kept := range map[string]bool{"options-record-secret-digest": true, "options-record-postgres": true, "options-record-tls": false} {
		_, err := admin.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if kept && err != nil {
			t.Errorf("helm uninstall deleted %s (helm.sh/resource-policy: keep): %v", name, err)
		}
		if !kept && !apierrors.IsNotFound(err) {
			t.Errorf("helm uninstall kept %s: %v", name, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
