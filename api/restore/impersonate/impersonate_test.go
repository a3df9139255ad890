package impersonate

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
)

// TestUnknownKindsCostBoundedDiscovery: recorded ownerReferences to kinds
// no one serves (any user can write them) do not make a discovery round
// each: a miss is remembered, and discovery is refreshed for unknown kinds
// at most once a refreshInterval. A kind that appears (a CRD a plan
// created) is found after ResetDiscovery.
func TestUnknownKindsCostBoundedDiscovery(t *testing.T) {
	fd := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	fd.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"get"}}}}}
	k := newAccess(&rest.Config{}, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(fd)))
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	k.now = func() time.Time { return now }

	if m, err := k.Mapping("v1", "ConfigMap"); err != nil || m.Resource.Resource != "configmaps" {
		t.Fatalf("ConfigMap: %v %v", m, err)
	}
	before := len(fd.Actions())
	for i := range 100 {
		if _, err := k.Mapping("example.com/v1", fmt.Sprintf("Made%d", i)); !meta.IsNoMatchError(err) {
			t.Fatalf("an unknown kind: %v", err)
		}
	}
	first := len(fd.Actions()) - before
	if first == 0 {
		t.Fatal("an unknown kind refreshed no discovery: nothing is tested")
	}
	for range 100 {
		_, _ = k.Mapping("example.com/v1", "Made0")
		_, _ = k.Mapping("example.com/v1", "Made1")
	}
	now = now.Add(5 * time.Second)
	for i := range 100 {
		_, _ = k.Mapping("example.com/v1", fmt.Sprintf("Other%d", i))
	}
	if got := len(fd.Actions()) - before; got != first {
		t.Errorf("300 more lookups of unknown kinds within %v made %d discovery requests after the first refresh's %d", refreshInterval, got-first, first)
	}

	// A CRD appears and a plan resets discovery: found at once.
	fd.Resources = append(fd.Resources, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "mades", Kind: "Made0", Namespaced: true, Verbs: []string{"get"}}}})
	k.ResetDiscovery()
	if m, err := k.Mapping("example.com/v1", "Made0"); err != nil || m.Resource.Resource != "mades" {
		t.Errorf("after ResetDiscovery: %v %v", m, err)
	}
}
