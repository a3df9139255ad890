package shipcheck

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
	"github.com/options-record/options-record/test/shipcheck/kindcreds"
)

const kindConfigPath = "kind-config/cluster.yaml"

// kindCluster decodes kind-config/cluster.yaml with kind's own v1alpha4
// types, strictly (an unknown or misplaced field fails), and applies kind's
// defaults.
func kindCluster(t testing.TB) *v1alpha4.Cluster {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), kindConfigPath))
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		t.Fatalf("%s does not decode as a kind v1alpha4 Cluster: %v", kindConfigPath, err)
	}
	if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Fatalf("%s: kind %q apiVersion %q", kindConfigPath, c.Kind, c.APIVersion)
	}
	v1alpha4.SetDefaultsCluster(&c)
	return &c
}

// kubeadmClusterConfiguration is the part of kubeadm's ClusterConfiguration
// the kind config patches: v1beta3's extraArgs map, which kind turns into
// v1beta4's name/value list for the patch has no apiVersion.
type kubeadmClusterConfiguration struct {
	Kind      string `json:"kind"`
	APIServer struct {
		ExtraArgs    map[string]string `json:"extraArgs"`
		ExtraVolumes []hostPathMount   `json:"extraVolumes"`
	} `json:"apiServer"`
}

type hostPathMount struct {
	Name      string `json:"name"`
	HostPath  string `json:"hostPath"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
	PathType  string `json:"pathType"`
}

func TestKindConfig(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	c := kindCluster(t)

	// What kind's own validation checks (pkg/internal/apis/config, not
	// importable): roles, one control plane, subnets, absolute container
	// paths.
	var cps []v1alpha4.Node
	for _, n := range c.Nodes {
		switch n.Role {
		case v1alpha4.ControlPlaneRole:
			cps = append(cps, n)
		case v1alpha4.WorkerRole:
		default:
			t.Errorf("node role %q", n.Role)
		}
	}
	if len(cps) != 1 {
		t.Fatalf("%d control-plane nodes, want 1 (the audit files are mounted into it)", len(cps))
	}
	cpNode := cps[0]
	subnet, err := netip.ParsePrefix(c.Networking.ServiceSubnet)
	if err != nil {
		t.Fatalf("serviceSubnet: %v", err)
	}
	if _, err := netip.ParsePrefix(c.Networking.PodSubnet); err != nil {
		t.Fatalf("podSubnet: %v", err)
	}

	// The node image: pinned, and the Kubernetes minor the e2e control plane
	// runs (test/cpbuild/versions.env).
	m := regexp.MustCompile(`^kindest/node:(v\d+\.\d+)\.\d+@sha256:[0-9a-f]{64}$`).FindStringSubmatch(cpNode.Image)
	if m == nil {
		t.Fatalf("node image %q is not pinned by version and digest", cpNode.Image)
	}
	if want := e2eKubernetesMinor(t); m[1] != want {
		t.Errorf("kind runs Kubernetes %s, the e2e control plane %s", m[1], want)
	}

	// Mounts: each names a file of the repository (or one `make
	// kind-credentials` writes) and lands where the apiserver's flags look.
	mounts := map[string]string{} // containerPath -> hostPath
	for _, mnt := range cpNode.ExtraMounts {
		if !path.IsAbs(mnt.ContainerPath) || filepath.IsAbs(mnt.HostPath) {
			t.Errorf("mount %s -> %s: the host path must be relative to the repository root, the container path absolute", mnt.HostPath, mnt.ContainerPath)
		}
		if !mnt.Readonly {
			t.Errorf("mount %s is writable", mnt.HostPath)
		}
		mounts[mnt.ContainerPath] = mnt.HostPath
	}
	var patches []kubeadmClusterConfiguration
	for _, p := range append(slices.Clone(c.KubeadmConfigPatches), cpNode.KubeadmConfigPatches...) {
		var cc kubeadmClusterConfiguration
		if err := yaml.UnmarshalStrict([]byte(p), &cc); err != nil {
			t.Fatalf("kubeadmConfigPatch: %v\n%s", err, p)
		}
		if cc.Kind == "ClusterConfiguration" {
			patches = append(patches, cc)
		}
	}
	if len(patches) != 1 {
		t.Fatalf("%d ClusterConfiguration patches, want 1", len(patches))
	}
	api := patches[0].APIServer
	// The flags the e2e harness gives its kube-apiserver for the same files
	// (test/framework/controlplane), and the files the e2e suite uses.
	want := map[string]string{
		"audit-policy-file":         controlplane.PolicyPath,
		"audit-webhook-config-file": "kind-config/credentials/" + kindcreds.KubeconfigFile,
	}
	for flag, hostFile := range want {
		inNode := api.ExtraArgs[flag]
		if inNode == "" {
			t.Errorf("the apiserver gets no --%s", flag)
			continue
		}
		if got := mounts[inNode]; got != hostFile {
			t.Errorf("--%s=%s is mounted from %q, want %q", flag, inNode, got, hostFile)
		}
		vol := slices.IndexFunc(api.ExtraVolumes, func(v hostPathMount) bool {
			return v.ReadOnly && v.HostPath == v.MountPath && strings.HasPrefix(inNode, v.MountPath+"/")
		})
		if vol < 0 {
			t.Errorf("--%s=%s is in no read-only extraVolume of the apiserver's static pod", flag, inNode)
		}
	}
	if _, err := os.Stat(filepath.Join(root, controlplane.PolicyPath)); err != nil {
		t.Error(err)
	}

	// The webhook kubeconfig kind mounts: rendered from the shipped template,
	// naming the clusterIP the kind overlay gives the webhook Service, which
	// lies in the service subnet, with a CA that verifies the serving
	// certificate the overlay's Secret holds, for that IP.
	tmpl, err := os.ReadFile(filepath.Join(root, controlplane.WebhookKubeconfigTemplatePath))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := kindcreds.Generate(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(creds[kindcreds.KubeconfigFile])
	if err != nil {
		t.Fatal(err)
	}
	cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	u, err := url.Parse(cluster.Server)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil || !subnet.Contains(ip) {
		t.Errorf("webhook URL %s: host is not an address in the service subnet %s", cluster.Server, subnet)
	}
	if kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token != string(creds[kindcreds.TokenFile]) {
		t.Error("the webhook kubeconfig's token is not the one the sink's Secret holds")
	}
	svc := kindWebhookService(t)
	if svc != u.Hostname() {
		t.Errorf("kind-config/kustomization.yaml gives the webhook Service clusterIP %q, the kubeconfig names %q", svc, u.Hostname())
	}
	if p := u.Port(); p != "" && p != "443" {
		t.Errorf("webhook URL port %s; the Service listens on 443", p)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cluster.CertificateAuthorityData) {
		t.Fatal("no CA in the webhook kubeconfig")
	}
	block, _ := pem.Decode(creds[kindcreds.CertFile])
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: u.Hostname(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the serving certificate does not verify for %s: %v", u.Hostname(), err)
	}
	if net.ParseIP(kindcreds.WebhookClusterIP) == nil {
		t.Errorf("WebhookClusterIP %q", kindcreds.WebhookClusterIP)
	}
}

// kindWebhookService returns the clusterIP of the webhook Service in the
// rendered kind overlay.
func kindWebhookService(t *testing.T) string {
	t.Helper()
	for _, v := range renderAll(t) {
		if v.name != "kind-config" {
			continue
		}
		for _, s := range find(v.objects, "Service", webhookService) {
			ip, _, _ := unstructured.NestedString(s.Object, "spec", "clusterIP")
			return ip
		}
	}
	t.Fatal("no webhook Service in the kind overlay")
	return ""
}

// e2eKubernetesMinor is the Kubernetes minor of the e2e control plane.
func e2eKubernetesMinor(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "test", "cpbuild", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^K8S_VERSION=(v\d+\.\d+)\.\d+`).FindSubmatch(data)
	if m == nil {
		t.Fatal("no K8S_VERSION in test/cpbuild/versions.env")
	}
	return string(m[1])
}
