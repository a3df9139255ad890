package shipcheck

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/filter/rulesync"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// statusLease is the Lease the sink's replicas elect their status writer with
// (rulesync).
const statusLease = "options-record-status"

// testSinkRBAC runs as the sink's ServiceAccount, bound by nothing but the
// RBAC of the rendered manifests: the sink's own code (rulesync: LIST of
// rules, status writes, the status Lease, baselines) does its job, each
// permission of the issue works, and actions outside them are forbidden.
// The restore API's permissions exist only with deploy/ (deploy/base is
// the sink without it), the Secret baseline's only with its component.
func testSinkRBAC(t *testing.T, c *cluster, vs []variant) {
	ctx := context.Background()
	admin := c.admin
	// What the sink will find: a namespace the sample rules cover, with a
	// ConfigMap (baselined) and a Secret (not readable by default).
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.CoreV1().ConfigMaps("prod").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
			Data: map[string]string{"LOG_LEVEL": "info"}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Secrets("prod").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password"},
			StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
		return err
	})
	// The baseline role is aggregated by kube-controller-manager.
	eventually(t, time.Minute, "aggregated ClusterRole options-record-baseline", func() error {
		r, err := admin.RbacV1().ClusterRoles().Get(ctx, "options-record-baseline", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(r.Rules) == 0 {
			return fmt.Errorf("no rules aggregated yet")
		}
		return nil
	})

	sa := c.saConfig(t)
	kube := kubernetes.NewForConfigOrDie(sa)
	dyn := dynamic.NewForConfigOrDie(sa)
	orcs := dyn.Resource(v1alpha1.GroupVersionResource)
	sample, err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(sinkNamespace).Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("sample OptionsRecordController options-record/prod: %v", err)
	}

	t.Run("sink", func(t *testing.T) { runSink(t, sa, c) })

	allowed := []action{
		{"list optionsrecordcontrollers in all namespaces", func() error {
			_, err := orcs.List(ctx, metav1.ListOptions{})
			return err
		}},
		{"get an optionsrecordcontroller", func() error {
			_, err := orcs.Namespace(sinkNamespace).Get(ctx, "prod", metav1.GetOptions{})
			return err
		}},
		{"create a selfsubjectreview", func() error {
			r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err == nil && r.Status.UserInfo.Username != sinkSA {
				err = fmt.Errorf("the sink is %q, want %q", r.Status.UserInfo.Username, sinkSA)
			}
			return err
		}},
		{"get the status Lease", func() error {
			_, err := kube.CoordinationV1().Leases(sinkNamespace).Get(ctx, statusLease, metav1.GetOptions{})
			return err
		}},
		{"list configmaps, deployments, namespaces, clusterroles (baselines)", func() error {
			if _, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return err
			}
			if _, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return err
			}
			if _, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return err
			}
			_, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
	}
	forbiddenAlways := []action{
		{"watch optionsrecordcontrollers", func() error { return watch(orcs.Watch(ctx, metav1.ListOptions{})) }},
		{"watch configmaps", func() error {
			return watch(dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Watch(ctx, metav1.ListOptions{}))
		}},
		{"create an optionsrecordcontroller", func() error {
			u := sample.DeepCopy()
			u.SetName("intruder")
			u.SetResourceVersion("")
			_, err := orcs.Namespace(sinkNamespace).Create(ctx, u, metav1.CreateOptions{})
			return err
		}},
		{"update an optionsrecordcontroller's spec", func() error {
			_, err := orcs.Namespace(sinkNamespace).Update(ctx, sample, metav1.UpdateOptions{})
			return err
		}},
		{"patch an optionsrecordcontroller's status", func() error {
			_, err := orcs.Namespace(sinkNamespace).Patch(ctx, "prod", "application/merge-patch+json", []byte(`{"status":{"recordedEvents":1}}`), metav1.PatchOptions{}, "status")
			return err
		}},
		{"delete an optionsrecordcontroller", func() error {
			return orcs.Namespace(sinkNamespace).Delete(ctx, "prod", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"get a configmap (baselines only list)", func() error {
			_, err := kube.CoreV1().ConfigMaps("prod").Get(ctx, "app-config", metav1.GetOptions{})
			return err
		}},
		{"delete a configmap", func() error {
			return kube.CoreV1().ConfigMaps("prod").Delete(ctx, "app-config", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"create a configmap in its own namespace", func() error {
			_, err := kube.CoreV1().ConfigMaps(sinkNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"get a secret", func() error {
			_, err := kube.CoreV1().Secrets("prod").Get(ctx, "db-password", metav1.GetOptions{})
			return err
		}},
		{"watch secrets", func() error { return watch(kube.CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{})) }},
		{"list pods", func() error {
			_, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
		{"create a lease in kube-system", func() error {
			_, err := kube.CoordinationV1().Leases("kube-system").Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"get another lease in its namespace", func() error {
			_, err := kube.CoordinationV1().Leases(sinkNamespace).Get(ctx, "some-other-lease", metav1.GetOptions{})
			return err
		}},
		{"delete the status Lease", func() error {
			return kube.CoordinationV1().Leases(sinkNamespace).Delete(ctx, statusLease, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
	}
	restore := restoreActions(ctx, sa, sinkSA)
	listSecrets := action{"list secrets", func() error {
		_, err := kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}}

	// The observing webhook's configuration (components/admission-observer)
	// and another one the sink must never touch.
	vwcs := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	mustCreate(t, func() error {
		_, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx,
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}, metav1.CreateOptions{})
		return err
	})
	for _, u := range find(variantNamed(t, vs, "deploy+components/admission-observer").objects, "ValidatingWebhookConfiguration", "") {
		if err := c.apply(t, u, false); err != nil {
			t.Fatal(err)
		}
	}
	observer := []action{
		{"get the observing webhook's configuration", func() error {
			_, err := vwcs.Get(ctx, filter.DefaultWebhookConfigName, metav1.GetOptions{})
			return err
		}},
		{"update the observing webhook's configuration", func() error {
			cur, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, filter.DefaultWebhookConfigName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = vwcs.Update(ctx, cur, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
	}
	observerNever := []action{
		{"list webhook configurations", func() error {
			_, err := vwcs.List(ctx, metav1.ListOptions{})
			return err
		}},
		{"watch the observing webhook's configuration", func() error {
			return watch(vwcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + filter.DefaultWebhookConfigName}))
		}},
		{"create a webhook configuration", func() error {
			_, err := vwcs.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"get another webhook configuration", func() error {
			_, err := vwcs.Get(ctx, "someone-elses", metav1.GetOptions{})
			return err
		}},
		{"update another webhook configuration", func() error {
			o := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}
			_, err := vwcs.Update(ctx, o, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"delete the observing webhook's configuration", func() error {
			return vwcs.Delete(ctx, filter.DefaultWebhookConfigName, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"patch the observing webhook's configuration", func() error {
			_, err := vwcs.Patch(ctx, filter.DefaultWebhookConfigName, "application/merge-patch+json", []byte(`{"webhooks":[]}`),
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"create a mutating webhook configuration", func() error {
			_, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx,
				&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
	}

	t.Run("deploy/base", func(t *testing.T) {
		expect(t, true, allowed...)
		expect(t, false, forbiddenAlways...)
		expect(t, false, restore...)
		expect(t, false, listSecrets)
		expect(t, false, observer...)
		expect(t, false, observerNever...)
	})
	t.Run("deploy", func(t *testing.T) {
		applyRBAC(t, c, vs, "deploy")
		apiConfig := c.saConfigFor(t, apiName)
		apiRestore := restoreActions(ctx, apiConfig, apiSA)
		eventually(t, 30*time.Second, "restore API permissions", apiRestore[0].do)
		// Only the API's ServiceAccount may impersonate and review.
		expect(t, true, allowed...)
		expect(t, false, restore...)
		expect(t, false, forbiddenAlways...)
		expect(t, false, listSecrets)
		expect(t, true, apiRestore...)
		expect(t, false, ingestOnly(ctx, apiConfig, sample)...)
	})
	t.Run("components/baseline-secrets", func(t *testing.T) {
		applyRBAC(t, c, vs, "deploy+components/baseline-secrets")
		eventually(t, time.Minute, "Secret baselines aggregated", listSecrets.do)
		expect(t, true, listSecrets)
		expect(t, false, forbiddenAlways...) // get and watch stay forbidden
	})
	t.Run("components/admission-observer", func(t *testing.T) {
		applyRBAC(t, c, vs, "deploy+components/admission-observer")
		eventually(t, 30*time.Second, "the observing webhook's configuration readable", observer[0].do)
		expect(t, true, observer...)
		expect(t, false, observerNever...)
		expect(t, false, forbiddenAlways...)
		testObserverGuard(t, c, vs, vwcs)
		runObserverSync(t, sa, c)
	})
}

// runObserverSync runs the sink's rule sync as its ServiceAccount with
// --admission-webhook-config-name, as the component's StatefulSet does, and
// waits until the shipped configuration (without rules) selects what the
// sample rules select.
func runObserverSync(t *testing.T, sa *rest.Config, c *cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	reg := rulesync.NewRegistry(nil, rulesync.RegistryOptions{Compile: filter.Options{SinkNamespace: sinkNamespace}, HomeCluster: "shipcheck"})
	s, err := rulesync.New(rulesync.Options{
		Config: sa, Cluster: "shipcheck", Namespace: sinkNamespace, Identity: "shipcheck-sink-0",
		Resync: 5 * time.Second, StatusInterval: time.Second, WebhookConfigName: filter.DefaultWebhookConfigName,
		Registry: reg, Store: &fakeStore{}, Logger: slog.New(slog.NewTextHandler(&testWriter{t: t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, time.Minute, "the observing webhook selecting what the samples select", func() error {
		cur, err := c.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, filter.DefaultWebhookConfigName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(cur.Webhooks) != 1 || len(cur.Webhooks[0].Rules) == 0 {
			return fmt.Errorf("webhooks %+v", cur.Webhooks)
		}
		return nil
	})
}

// ingestOnly are what the ingest role does and the API's ServiceAccount
// must not: write rules' statuses, hold the status Lease, list the rules and
// the baselined resources.
func ingestOnly(ctx context.Context, sa *rest.Config, sample *unstructured.Unstructured) []action {
	kube := kubernetes.NewForConfigOrDie(sa)
	orcs := dynamic.NewForConfigOrDie(sa).Resource(v1alpha1.GroupVersionResource)
	return []action{
		{"list optionsrecordcontrollers", func() error {
			_, err := orcs.List(ctx, metav1.ListOptions{})
			return err
		}},
		{"update an optionsrecordcontroller's status", func() error {
			_, err := orcs.Namespace(sinkNamespace).UpdateStatus(ctx, sample, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"create an optionsrecordcontroller", func() error {
			u := sample.DeepCopy()
			u.SetName("intruder")
			u.SetResourceVersion("")
			_, err := orcs.Namespace(sinkNamespace).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"create a lease", func() error {
			_, err := kube.CoordinationV1().Leases(sinkNamespace).Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"update the status Lease", func() error {
			l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: statusLease}}
			_, err := kube.CoordinationV1().Leases(sinkNamespace).Update(ctx, l, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{"list configmaps (baselines)", func() error {
			_, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
			return err
		}},
	}
}

// restoreActions are what the restore API does with its ServiceAccount
// (sa, which authenticates as user).
func restoreActions(ctx context.Context, sa *rest.Config, user string) []action {
	kube := kubernetes.NewForConfigOrDie(sa)
	return []action{
		{"create a tokenreview", func() error {
			r, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: sa.BearerToken}}, metav1.CreateOptions{})
			if err == nil && (!r.Status.Authenticated || r.Status.User.Username != user) {
				err = fmt.Errorf("token review: %+v", r.Status)
			}
			return err
		}},
		{"create a subjectaccessreview", func() error {
			_, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: "alice", Groups: []string{"developers"},
				ResourceAttributes: &authzv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "prod", Name: "app-config"},
			}}, metav1.CreateOptions{})
			return err
		}},
		{"impersonate a user with groups, uid and extras", func() error {
			cfg := rest.CopyConfig(sa)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", UID: "alice-uid", Groups: []string{"developers"},
				Extra: map[string][]string{"example.com/ticket": {"42"}}}
			r, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err == nil && (r.Status.UserInfo.Username != "alice" || !slices.Contains(r.Status.UserInfo.Groups, "developers") ||
				len(r.Status.UserInfo.Extra["example.com/ticket"]) != 1) {
				err = fmt.Errorf("impersonated identity %+v", r.Status.UserInfo)
			}
			return err
		}},
		{"impersonate a service account", func() error {
			cfg := rest.CopyConfig(sa)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:prod:default"}
			_, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		}},
	}
}

type action struct {
	name string
	do   func() error
}

// expect runs actions that must all succeed (allowed) or all be refused
// with 403 Forbidden.
func expect(t *testing.T, allowed bool, as ...action) {
	t.Helper()
	for _, a := range as {
		err := a.do()
		switch {
		case allowed && err != nil:
			t.Errorf("the sink cannot %s: %v", a.name, err)
		case !allowed && !apierrors.IsForbidden(err):
			t.Errorf("the sink may %s (want 403 Forbidden, got %v)", a.name, err)
		}
	}
}

func watch(w interface{ Stop() }, err error) error {
	if w != nil && err == nil {
		w.Stop()
	}
	return err
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// applyRBAC applies, for real, the ServiceAccounts and RBAC objects of a
// rendered variant.
func applyRBAC(t *testing.T, c *cluster, vs []variant, name string) {
	t.Helper()
	v := variantNamed(t, vs, name)
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, u := range find(v.objects, kind, "") {
			if err := c.apply(t, u, false); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runSink runs the sink's cluster-facing code (rulesync, as `serve
// --in-cluster` does) with the ServiceAccount's credentials and waits for it
// to have done its job: rules listed, the status Lease taken, the samples'
// statuses written, a baseline of the covered ConfigMap stored.
func runSink(t *testing.T, sa *rest.Config, c *cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	reg := rulesync.NewRegistry(nil, rulesync.RegistryOptions{Compile: filter.Options{SinkNamespace: sinkNamespace}, HomeCluster: "shipcheck"})
	st := &fakeStore{}
	s, err := rulesync.New(rulesync.Options{
		Config: sa, Cluster: "shipcheck", Namespace: sinkNamespace, Identity: "shipcheck-sink-0",
		Resync: 5 * time.Second, StatusInterval: time.Second, Baseline: true,
		Registry: reg, Store: st, Logger: slog.New(slog.NewTextHandler(&testWriter{t: t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("the sink does not start as its ServiceAccount: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if n := len(reg.Objects("shipcheck")); n == 0 {
		t.Error("the sink listed no OptionsRecordControllers")
	}
	eventually(t, time.Minute, "status Lease held by the sink", func() error {
		l, err := c.admin.CoordinationV1().Leases(sinkNamespace).Get(ctx, statusLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "shipcheck-sink-0" {
			return fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		return nil
	})
	eventually(t, time.Minute, "status of options-record/prod written by the sink", func() error {
		u, err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(sinkNamespace).Get(ctx, "prod", metav1.GetOptions{})
		if err != nil {
			return err
		}
		var o v1alpha1.OptionsRecordController
		if err := fromUnstructured(u, &o); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		if cond == nil || o.Status.ObservedGeneration != o.Generation {
			return fmt.Errorf("status %+v", o.Status)
		}
		return nil
	})
	eventually(t, time.Minute, "baseline of prod/app-config", func() error {
		if st.has("configmaps", "prod", "app-config") {
			return nil
		}
		return fmt.Errorf("baselined so far: %v", st.names())
	})
	if st.has("secrets", "prod", "db-password") {
		t.Error("the sink baselined a Secret without components/baseline-secrets")
	}
}

// fakeStore is the part of the record rulesync writes to.
type fakeStore struct {
	mu       sync.Mutex
	versions []model.Version
}

func (f *fakeStore) AddRuleStats(context.Context, string, map[string]store.RuleStat) error {
	return nil
}

func (f *fakeStore) RuleStats(context.Context, string) (map[string]store.RuleStat, error) {
	return nil, nil
}

func (f *fakeStore) WriteBaseline(_ context.Context, vs []model.Version) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions = append(f.versions, vs...)
	return len(vs), nil
}

func (f *fakeStore) has(resource, namespace, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.versions, func(v model.Version) bool {
		return v.Resource == resource && v.Namespace == namespace && v.Name == name
	})
}

func (f *fakeStore) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, v := range f.versions {
		out = append(out, v.Resource+":"+v.Namespace+"/"+v.Name)
	}
	return out
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// testWriter sends the sink's log to the test log while the test runs.
// runSink stops the sink before it returns.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testObserverGuard applies the component's ValidatingAdmissionPolicy and
// checks that the sink's ServiceAccount may not make its webhook refuse
// writes, send the reviews elsewhere or wait longer, though RBAC lets it
// update the object.
func testObserverGuard(t *testing.T, c *cluster, vs []variant, vwcs admissionv1client.ValidatingWebhookConfigurationInterface) {
	ctx := context.Background()
	v := variantNamed(t, vs, "deploy+components/admission-observer")
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		objs := find(v.objects, kind, "")
		if len(objs) != 1 {
			t.Fatalf("%d %s objects in the component", len(objs), kind)
		}
		if err := c.apply(t, objs[0], false); err != nil {
			t.Fatal(err)
		}
	}
	update := func(mut func(w *admissionregistrationv1.ValidatingWebhook)) error {
		cur, err := c.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, filter.DefaultWebhookConfigName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mut(&cur.Webhooks[0])
		_, err = vwcs.Update(ctx, cur, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	denied := func(err error) error {
		if err == nil || !strings.Contains(err.Error(), "options-record-observer-guard") {
			return fmt.Errorf("not denied by the guard: %v", err)
		}
		return nil
	}
	// The policy takes effect once the apiserver has loaded it.
	eventually(t, time.Minute, "the guard in force", func() error {
		return denied(update(func(w *admissionregistrationv1.ValidatingWebhook) {
			w.FailurePolicy = ptr(admissionregistrationv1.Fail)
		}))
	})
	for name, mut := range map[string]func(w *admissionregistrationv1.ValidatingWebhook){
		"another URL": func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.Service, w.ClientConfig.URL = nil, ptr("https://elsewhere.example/observe")
		},
		"another CA":       func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.CABundle = []byte("x") },
		"a longer timeout": func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr(int32(30)) },
		"side effects": func(w *admissionregistrationv1.ValidatingWebhook) {
			w.SideEffects = ptr(admissionregistrationv1.SideEffectClassNoneOnDryRun)
		},
		"another name": func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "observe2.optionsrecord.io" },
		"failurePolicy Fail": func(w *admissionregistrationv1.ValidatingWebhook) {
			w.FailurePolicy = ptr(admissionregistrationv1.Fail)
		},
	} {
		if err := denied(update(mut)); err != nil {
			t.Errorf("the sink may change its webhook's %s: %v", name, err)
		}
	}
	// What the rules change is allowed.
	if err := update(func(w *admissionregistrationv1.ValidatingWebhook) {
		w.Rules = []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"configmaps"}}}}
	}); err != nil {
		t.Errorf("the sink may not change its webhook's rules: %v", err)
	}
}
