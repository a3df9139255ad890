package rulesync

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestWebhookConfigFollowsTheRules, on a real kube-apiserver: the shipped
// configuration (deploy/components/admission-observer) is accepted and
// reviews nothing; once the sink has read the rules it selects what they
// select, follows a change of them, is not rewritten while they stay the
// same, keeps the installed clientConfig and timeout; and with the
// endpoint down (every connection reset) a ConfigMap update the webhook
// reviews still succeeds (failurePolicy Ignore).
func TestWebhookConfigFollowsTheRules(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{DisableControllerManager: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	dyn := dynamic.NewForConfigOrDie(cp.AdminConfig())

	// The endpoint is down: it accepts and closes every connection, and
	// counts them, so the test knows the apiserver did call it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var calls atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			calls.Add(1)
			c.Close()
		}
	}()

	for _, ns := range []string{"options-record", "prod", "staging"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	installCRD(ctx, t, dyn)
	// The shipped configuration, pointed at the test's endpoint.
	data, err := os.ReadFile(controlplane.RepoFile(t, "deploy/components/admission-observer/validatingwebhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &shipped); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s/observe", ln.Addr())
	shipped.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: cp.CAData()}
	vwcs := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := vwcs.Create(ctx, &shipped, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the apiserver refuses the shipped configuration: %v", err)
	}

	// Every golden configuration of package filter, and one from a
	// thousand controllers, is accepted (dry run).
	goldens, _ := filepath.Glob(filepath.Join(controlplane.RepoFile(t, "filter/testdata/webhook"), "*.golden.yaml"))
	var many []v1alpha1.OptionsRecordController
	for i := range 1000 {
		o := v1alpha1.OptionsRecordController{ObjectMeta: metav1.ObjectMeta{Namespace: "options-record", Name: fmt.Sprintf("r%d", i)}}
		o.Spec.Namespaces = []string{fmt.Sprintf("ns-%d", i)}
		o.Spec.Resources = []v1alpha1.ResourceSelector{{Group: fmt.Sprintf("g%d.example.com", i%500), Resources: []string{fmt.Sprintf("things%d", i)}}}
		many = append(many, o)
	}
	bounded := filter.AdmissionWebhook(many, filter.WebhookOptions{ConfigName: "bounded",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}})
	for _, g := range append(goldens, "") {
		c := bounded
		if g != "" {
			data, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			c = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(data, c); err != nil {
				t.Fatalf("%s: %v", g, err)
			}
			c.Name = strings.TrimSuffix(filepath.Base(g), ".golden.yaml")
		}
		if _, err := vwcs.Create(ctx, c, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the apiserver refuses %s: %v", cmp.Or(filepath.Base(g), "the configuration of 1000 controllers"), err)
		}
	}
	if len(goldens) < 4 {
		t.Errorf("only %d golden configurations", len(goldens))
	}

	reg := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Options{Config: cp.AdminConfig(), Cluster: "c", Namespace: "options-record", Resync: 500 * time.Millisecond,
		StatusInterval: 100 * time.Millisecond, WebhookConfigName: shipped.Name, Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go s.Run(ctx)

	// No rule yet: a sync leaves the configuration reviewing nothing.
	waitFor(t, "a first sync", func() bool { return s.webhookSyncs.Load() > 0 })
	rules := dyn.Resource(v1alpha1.GroupVersionResource).Namespace("options-record")
	rule := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": "prod", "namespace": "options-record"},
		"spec":     map[string]any{"namespaces": []any{"prod"}, "resources": []any{map[string]any{"group": "", "resources": []any{"configmaps"}}}}}}
	if _, err := rules.Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *admissionregistrationv1.ValidatingWebhookConfiguration
	var extra []metav1.LabelSelectorRequirement // others' expressions
	follows := func(namespaces []string, resources ...string) func() bool {
		return func() bool {
			got, err = vwcs.Get(ctx, shipped.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w := got.Webhooks[0]
			if len(w.Rules) == 0 || len(w.NamespaceSelector.MatchExpressions) == 0 {
				return false
			}
			return slices.Equal(w.Rules[0].Resources, resources) && slices.Equal(w.NamespaceSelector.MatchExpressions[0].Values, namespaces) &&
				len(w.NamespaceSelector.MatchExpressions) == 1+len(extra)
		}
	}
	waitFor(t, "the configuration to select configmaps in prod", follows([]string{"prod"}, "configmaps"))
	w := got.Webhooks[0]
	if *w.ClientConfig.URL != url || string(w.ClientConfig.CABundle) != string(cp.CAData()) || *w.TimeoutSeconds != 2 ||
		*w.FailurePolicy != admissionregistrationv1.Ignore || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("the sink changed how the webhook is reached or fails: %+v", w)
	}

	// The rules stay the same: more syncs, no update.
	rv, updates := got.ResourceVersion, s.webhookUpdates.Load()
	syncs := s.webhookSyncs.Load()
	waitFor(t, "three more syncs", func() bool { return s.webhookSyncs.Load() >= syncs+3 })
	if now, _ := vwcs.Get(ctx, shipped.Name, metav1.GetOptions{}); now.ResourceVersion != rv || s.webhookUpdates.Load() != updates {
		t.Errorf("rewritten without a change of the rules: resourceVersion %s -> %s, updates %d -> %d", rv, now.ResourceVersion, updates, s.webhookUpdates.Load())
	}

	// An expression someone else adds to the namespace selector (AKS's
	// Admissions Enforcer does) stays, and is no reason to rewrite.
	foreign := metav1.LabelSelectorRequirement{Key: "control-plane", Operator: metav1.LabelSelectorOpDoesNotExist}
	got.Webhooks[0].NamespaceSelector.MatchExpressions = append(got.Webhooks[0].NamespaceSelector.MatchExpressions, foreign)
	if got, err = vwcs.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	extra = append(extra, foreign)
	updates, syncs = s.webhookUpdates.Load(), s.webhookSyncs.Load()
	waitFor(t, "three more syncs", func() bool { return s.webhookSyncs.Load() >= syncs+3 })
	now, _ := vwcs.Get(ctx, shipped.Name, metav1.GetOptions{})
	if s.webhookUpdates.Load() != updates || !slices.ContainsFunc(now.Webhooks[0].NamespaceSelector.MatchExpressions,
		func(e metav1.LabelSelectorRequirement) bool { return e.Key == foreign.Key }) {
		t.Errorf("another's namespace selector expression: updates %d -> %d, selector now %+v", updates, s.webhookUpdates.Load(), now.Webhooks[0].NamespaceSelector)
	}

	// A change of the rules: the configuration follows.
	cur, err := rules.Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedSlice(cur.Object, []any{"prod", "staging"}, "spec", "namespaces")
	unstructured.SetNestedSlice(cur.Object, []any{map[string]any{"group": "", "resources": []any{"configmaps", "secrets"}}}, "spec", "resources")
	if _, err := rules.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the configuration to follow the changed rule", follows([]string{"prod", "staging"}, "configmaps", "secrets"))

	// The endpoint is down: a reviewed write succeeds all the same. The
	// apiserver reads webhook configurations from its own cache: retry
	// until it has called the endpoint, so the write was truly reviewed.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "prod"}, Data: map[string]string{"k": "0"}}
	if cm, err = kube.CoreV1().ConfigMaps("prod").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; calls.Load() == 0; i++ {
		cm.Data["k"] = fmt.Sprint(i)
		if cm, err = kube.CoreV1().ConfigMaps("prod").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %d with the webhook down: %v", i, err)
		}
		if i == 300 {
			t.Fatal("the apiserver never called the webhook")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := kube.CoreV1().ConfigMaps("prod").Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete with the webhook down: %v", err)
	}
	t.Logf("the webhook was called %d times; every write succeeded", calls.Load())
}

func installCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
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
	waitFor(t, "the CRD to be served", func() bool {
		_, err := dyn.Resource(v1alpha1.GroupVersionResource).List(ctx, metav1.ListOptions{})
		return err == nil
	})
}

// waitFor polls cond every 50 ms, for at most a minute (a bound on a hung
// test, not an assertion on time).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 1200 {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
