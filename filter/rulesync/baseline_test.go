package rulesync

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// countLists counts the LISTs of one collection path.
type countLists struct {
	next http.RoundTripper
	path string
	n    atomic.Int32
}

func (c *countLists) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.URL.Path == c.path && req.URL.Query().Get("watch") == "" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// configMapRule is a rule of the sink's namespace covering the ConfigMaps
// (and, with more, other resources) of namespaces.
func configMapRule(generation int64, rv string, nss []string, users []string, more ...v1alpha1.ResourceSelector) v1alpha1.OptionsRecordController {
	o := orc("options-record", "cm", "u-cm", rv, nss...)
	o.Generation = generation
	o.Spec.Users = users
	o.Spec.Resources = append([]v1alpha1.ResourceSelector{{Group: "", Resources: []string{"configmaps"}}}, more...)
	return o
}

// TestBaselineListsAResourceOncePerCoverage: a change of the rules LISTs
// again only the resources whose coverage it changed, and a resource at
// most once per BaselineMinInterval, against a real kube-apiserver.
func TestBaselineListsAResourceOncePerCoverage(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{DisableControllerManager: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	for _, ns := range []string{"prod", "dev"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	counter := &countLists{path: "/api/v1/configmaps"}
	cfg := cp.AdminConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	reg := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	s, err := New(Options{Config: cfg, Cluster: "c", Namespace: "options-record", Baseline: true, Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.base.now = func() time.Time { return now }
	step := func(what string, objs []v1alpha1.OptionsRecordController, rv int64, wantLists int32) passResult {
		t.Helper()
		reg.Replace("c", objs, rv)
		res := s.base.pass(ctx)
		if res.failed {
			t.Fatalf("%s: the pass failed", what)
		}
		if got := counter.n.Load(); got != wantLists {
			t.Fatalf("%s: %d LISTs of configmaps so far, want %d", what, got, wantLists)
		}
		return res
	}
	deployments := v1alpha1.ResourceSelector{Group: "apps", Resources: []string{"deployments"}}
	other := orc("options-record", "deploys", "u-d", "2", "prod")
	other.Spec.Resources = []v1alpha1.ResourceSelector{deployments}

	step("first pass", []v1alpha1.OptionsRecordController{configMapRule(1, "1", []string{"prod"}, nil)}, 1, 1)
	step("another rule, for other resources, added",
		[]v1alpha1.OptionsRecordController{configMapRule(1, "1", []string{"prod"}, nil), other}, 2, 1)
	step("the rule changed, not what it covers (users, another resource)",
		[]v1alpha1.OptionsRecordController{configMapRule(2, "3", []string{"prod"}, []string{"alice"}, deployments), other}, 3, 1)
	step("the other rule deleted", []v1alpha1.OptionsRecordController{configMapRule(2, "3", []string{"prod"}, []string{"alice"}, deployments)}, 4, 1)

	// Widened: a LIST is due, but not before a minute after the last one.
	widened := []v1alpha1.OptionsRecordController{configMapRule(3, "5", []string{"prod", "dev"}, nil)}
	now = now.Add(20 * time.Second)
	if res := step("widened within the interval", widened, 5, 1); res.deferred != 40*time.Second {
		t.Errorf("widened within the interval: deferred %s, want 40s", res.deferred)
	}
	now = now.Add(40 * time.Second)
	step("widened, the interval over", widened, 5, 2)
	for _, ns := range []string{"prod", "dev"} {
		if v, err := st.Newest(ctx, "c", "", "configmaps", ns, "app"); err != nil || v == nil {
			t.Errorf("no baseline of the ConfigMap %s/app: %v", ns, err)
		}
	}
	// Narrowed, then widened again at once: nothing new, then one LIST a minute later.
	narrowed := []v1alpha1.OptionsRecordController{configMapRule(4, "6", []string{"dev"}, nil)}
	step("narrowed", narrowed, 6, 2)
	again := []v1alpha1.OptionsRecordController{configMapRule(5, "7", []string{"dev", "prod"}, nil)}
	step("widened again within the interval", again, 7, 2)
	now = now.Add(time.Minute)
	step("widened again, the interval over", again, 7, 3)
}
