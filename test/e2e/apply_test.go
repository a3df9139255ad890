package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// applier creates the objects of YAML files, as kubectl create would.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dynamic.NewForConfigOrDie(cfg), mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// createFile creates every object of a multi-document YAML file; objects
// that exist already are left alone. namespace applies to namespaced
// objects without one.
func (a *applier) createFile(t *testing.T, path, namespace string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a.create(t, data, namespace)
}

func (a *applier) create(t *testing.T, data []byte, namespace string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("decode YAML: %v", err)
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		out = append(out, a.createObject(t, u, namespace))
	}
}

func (a *applier) createObject(t *testing.T, u *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	t.Helper()
	gvk := u.GroupVersionKind()
	var m *schema.GroupVersionResource
	var namespaced bool
	deadline := time.Now().Add(30 * time.Second)
	for {
		mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			m, namespaced = &mapping.Resource, mapping.Scope.Name() == "namespace"
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no resource for %s: %v", gvk, err)
		}
		a.mapper.Reset() // a CRD just created takes a moment to be served
		time.Sleep(200 * time.Millisecond)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(*m)
	if namespaced {
		if u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		ri = a.dyn.Resource(*m).Namespace(u.GetNamespace())
	}
	got, err := ri.Create(context.Background(), u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return u
	}
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return got
}
