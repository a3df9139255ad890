package shipcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/options-record/options-record/test/framework/controlplane"
)

const fieldManager = "shipcheck"

// cluster is the test's real control plane and an admin's clients.
type cluster struct {
	cp     *controlplane.ControlPlane
	admin  *kubernetes.Clientset
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	// The service range of the kind cluster, so that the kind overlay's
	// fixed clusterIP is judged as kind's apiserver would.
	cp := controlplane.Start(t, controlplane.Options{
		ExtraAPIServerArgs: []string{"--service-cluster-ip-range=" + kindCluster(t).Networking.ServiceSubnet},
	})
	cfg := cp.AdminConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{
		cp:     cp,
		admin:  kubernetes.NewForConfigOrDie(cfg),
		dyn:    dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}
}

// resource maps an object to its resource, waiting for a CRD just created
// to be served.
func (c *cluster) resource(t *testing.T, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			if m.Scope.Name() == "namespace" {
				return c.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
			}
			return c.dyn.Resource(m.Resource)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no resource for %s: %v", gvk, err)
		}
		c.mapper.Reset()
		time.Sleep(200 * time.Millisecond)
	}
}

// apply server-side applies an object with strict field validation, for
// real or as a dry run.
func (c *cluster) apply(t *testing.T, u *unstructured.Unstructured, dryRun bool) error {
	t.Helper()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: ptr(true), FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = c.resource(t, u).Patch(context.Background(), u.GetName(), types.ApplyPatchType, data, opts)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// readYAML decodes the objects of a multi-document YAML file.
func readYAML(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// realKinds are applied for real (not only dry-run): the CRD, the
// namespace, the identity and its RBAC. The workloads are dry-run only: the
// test apiserver has no nodes.
var realKinds = []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}

// TestOnRealAPIServer applies what deploy/ ships to a real kube-apiserver:
// the CRD, namespace, ServiceAccount, RBAC and the sample
// OptionsRecordControllers for real, every object of every kustomization as
// a server-side dry run with strict field validation, and the pods of every
// workload through the real Pod Security admission of the namespace. Then it
// runs the sink's cluster-facing code as its ServiceAccount (rbac_test.go),
// and the binary with the StatefulSet's command line (serve_test.go).
func TestOnRealAPIServer(t *testing.T) {
	vs := renderAll(t)
	c := startCluster(t)
	ctx := context.Background()

	// The sink without the restore API first: testSinkRBAC adds the rest.
	base := variantNamed(t, vs, "deploy/base")
	crd := find(variantNamed(t, vs, "deploy").objects, "CustomResourceDefinition", "")
	for _, kind := range realKinds {
		for _, u := range find(append(crd, base.objects...), kind, "") {
			if err := c.apply(t, u, false); err != nil {
				t.Fatalf("apply: %v", err)
			}
		}
	}
	for _, u := range readYAML(t, "testdata/cert-manager-crds.yaml") {
		if err := c.apply(t, u, false); err != nil {
			t.Fatalf("stand-in cert-manager CRDs: %v", err)
		}
	}
	samples, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "samples", "*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples under deploy/samples: %v", err)
	}
	for _, f := range samples {
		for _, u := range readYAML(t, f) {
			if err := c.apply(t, u, false); err != nil {
				t.Errorf("sample %s: %v", filepath.Base(f), err)
			}
		}
	}

	t.Run("dry-run", func(t *testing.T) {
		for _, v := range vs {
			for _, u := range v.objects {
				if err := c.apply(t, u, true); err != nil {
					t.Errorf("%s: %v", v.name, err)
				}
			}
		}
	})

	t.Run("pod-security", func(t *testing.T) {
		// Pod admission needs the pods' ServiceAccounts (the restore API's,
		// which binds nothing until testSinkRBAC applies deploy/'s RBAC) and
		// the namespace's "default" (the postgres StatefulSet runs as it).
		for _, u := range find(variantNamed(t, vs, "deploy").objects, "ServiceAccount", "") {
			if err := c.apply(t, u, false); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, time.Minute, "default ServiceAccount", func() error {
			_, err := c.admin.CoreV1().ServiceAccounts(sinkNamespace).Get(ctx, "default", metav1.GetOptions{})
			return err
		})
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager}
		// The namespace enforces "restricted": a privileged pod is refused,
		// so the checks below have teeth.
		bad := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: sinkNamespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}},
		}
		if _, err := c.admin.CoreV1().Pods(sinkNamespace).Create(ctx, bad, dry); !apierrors.IsForbidden(err) {
			t.Fatalf("a privileged pod was not refused by Pod Security admission: %v", err)
		}
		seen := map[string]bool{}
		for _, v := range vs {
			for _, w := range workloads(t, v.objects) {
				key := w.kind + "/" + w.name
				if seen[key] {
					continue
				}
				seen[key] = true
				pod := &corev1.Pod{ObjectMeta: w.template.ObjectMeta, Spec: w.template.Spec}
				pod.Name, pod.Namespace = "shipcheck-"+w.name, sinkNamespace
				for _, claim := range w.claims { // what the StatefulSet controller adds
					pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim + "-" + pod.Name}}})
				}
				if _, err := c.admin.CoreV1().Pods(sinkNamespace).Create(ctx, pod, dry); err != nil {
					t.Errorf("%s %s (%s): a pod of it is not admitted: %v", w.kind, w.name, v.name, err)
				}
			}
		}
	})

	t.Run("rbac", func(t *testing.T) { testSinkRBAC(t, c, vs) })
	t.Run("serve-as-deployed", func(t *testing.T) { testServeAsDeployed(t, c, vs) })
}

func variantNamed(t *testing.T, vs []variant, name string) variant {
	t.Helper()
	i := slices.IndexFunc(vs, func(v variant) bool { return v.name == name })
	if i < 0 {
		t.Fatalf("no variant %s", name)
	}
	return vs[i]
}

// eventually polls check until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}

// saConfig returns a client config that authenticates as the sink's
// (ingest) ServiceAccount with a real token (TokenRequest), as the pod would.
func (c *cluster) saConfig(t *testing.T) *rest.Config {
	t.Helper()
	return c.saConfigFor(t, sinkName)
}

// saConfigFor is saConfig for the ServiceAccount name of the namespace.
func (c *cluster) saConfigFor(t *testing.T, name string) *rest.Config {
	t.Helper()
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}
	tr, err := c.admin.CoreV1().ServiceAccounts(sinkNamespace).CreateToken(context.Background(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the ServiceAccount %s: %v", name, err)
	}
	cfg := rest.AnonymousClientConfig(c.cp.AdminConfig())
	cfg.BearerToken = tr.Status.Token
	return cfg
}
