package rulesync

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestStartsBeforeTheCRDIsInstalled: a sink started before its CRD is
// installed (or its RBAC bound) starts all the same, so the apiserver's
// batches are taken, and reads the rules once the cluster can answer,
// against a real kube-apiserver.
func TestStartsBeforeTheCRDIsInstalled(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{DisableControllerManager: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Options{Config: cp.AdminConfig(), Cluster: "c", Namespace: "options-record", Resync: 2 * time.Second, Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start without the CRD: %v", err)
	}
	if s.Started() {
		t.Fatal("started as if the rules had been read")
	}
	go s.Run(ctx)

	dyn := dynamic.NewForConfigOrDie(cp.AdminConfig())
	data, err := os.ReadFile(controlplane.RepoFile(t, "deploy/crd/optionsrecord.io_optionsrecordcontrollers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "options-record"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rule := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": "prod", "namespace": "options-record"},
		"spec":     map[string]any{"namespaces": []any{"prod"}, "resources": []any{map[string]any{"group": "", "resources": []any{"configmaps"}}}}}}
	deadline := time.Now().Add(90 * time.Second)
	for { // the CRD is served a moment after it is created
		_, err := dyn.Resource(v1alpha1.GroupVersionResource).Namespace("options-record").Create(ctx, rule, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create the rule: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for !s.Started() || len(reg.Objects("c")) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the rule created after the start was not read: started %v, objects %v", s.Started(), reg.Objects("c"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
