package aggregated

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestNamespaceDeletionWhileAggregatedAPIDown measures the coupling
// docs/aggregated-api.md documents: while the APIService is unavailable the namespace
// controller cannot finish deleting a namespace. It records how long the
// namespace stays Terminating and how long it takes to go once the server
// is back. It is a measurement of several minutes, not part of make test:
// `make measure-aggregated-outage` runs it, and OPTIONS_RECORD_AGG_DOWN (a
// duration, 90s there) sets how long the server stays down.
func TestNamespaceDeletionWhileAggregatedAPIDown(t *testing.T) {
	v := os.Getenv("OPTIONS_RECORD_AGG_DOWN")
	if v == "" {
		t.Skip("a measurement of several minutes: run it with make measure-aggregated-outage")
	}
	down, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("OPTIONS_RECORD_AGG_DOWN: %v", err)
	}
	e := setup(t, nil)
	ctx := context.Background()
	nss := e.admin.CoreV1().Namespaces()
	mkns := func(name string) {
		t.Helper()
		if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "content"}, Data: map[string]string{"k": "v"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name string, timeout time.Duration) (time.Duration, bool) {
		begin := time.Now()
		for time.Since(begin) < timeout {
			if _, err := nss.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return time.Since(begin), true
			}
			time.Sleep(250 * time.Millisecond)
		}
		return time.Since(begin), false
	}

	// Baseline, with the aggregated server up.
	mkns("baseline")
	if err := nss.Delete(ctx, "baseline", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took, ok := gone("baseline", 2*time.Minute)
	if !ok {
		t.Fatalf("baseline namespace not deleted within %s", took)
	}
	t.Logf("MEASURE baseline: namespace with the aggregated API up deleted in %s", took.Round(100*time.Millisecond))

	mkns("quick")
	mkns("doomed")
	stopped := time.Now()
	e.srv.shutdown()
	t.Logf("aggregated server stopped (shutdown took %s)", time.Since(stopped).Round(100*time.Millisecond))

	// Deleted at once, while the aggregator still believes the API is
	// available: discovery is served from the aggregator's cache, and our
	// resources have no delete verb, so the namespace controller never
	// calls the backend.
	if err := nss.Delete(ctx, "quick", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	quickDeleted := time.Now()
	quickGone := time.Duration(0)

	var unavailableAfter time.Duration
	for unavailableAfter == 0 {
		if time.Since(stopped) > 3*time.Minute {
			t.Fatalf("APIService still Available 3m after the server stopped")
		}
		out, _, _ := e.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "apiservice", apiService,
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}: {.status.conditions[?(@.type=="Available")].message}`)
		if strings.HasPrefix(out, "False") {
			unavailableAfter = time.Since(stopped)
			t.Logf("MEASURE APIService Available=False %s after the stop: %s", unavailableAfter.Round(100*time.Millisecond), out)
		}
		if _, err := nss.Get(ctx, "quick", metav1.GetOptions{}); quickGone == 0 && apierrors.IsNotFound(err) {
			quickGone = time.Since(quickDeleted)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if quickGone > 0 {
		t.Logf("MEASURE namespace deleted right after the stop (APIService not yet marked unavailable) went in %s", quickGone.Round(100*time.Millisecond))
	} else {
		t.Logf("MEASURE namespace deleted right after the stop was still there when the APIService became unavailable")
	}

	if err := nss.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	var conditionAfter time.Duration
	var lastCond string
	for time.Since(deleted) < down {
		ns, err := nss.Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace doomed while the API is down: %v (deleted after %s)", err, time.Since(deleted))
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				if conditionAfter == 0 {
					conditionAfter = time.Since(deleted)
					t.Logf("MEASURE NamespaceDeletionDiscoveryFailure=True %s after the delete: %s", conditionAfter.Round(100*time.Millisecond), c.Message)
				}
				lastCond = c.Message
			}
		}
		time.Sleep(time.Second)
	}
	ns, err := nss.Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace doomed: %v", err)
	}
	t.Logf("MEASURE after %s down: namespace phase %s, discovery-failure condition: %q", down, ns.Status.Phase, lastCond)
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("namespace phase %s, want Terminating", ns.Status.Phase)
	}
	// What a kubectl user sees meanwhile, with a cold discovery cache.
	fresh := e.cp.WriteKubeconfigAuth(t, "fresh-admin", &clientcmdapi.AuthInfo{Token: e.cp.Token(controlplane.AdminUser)})
	_, stderr, err := e.cp.KubectlConfig(t, fresh, nil, "get", "configmaps", "-n", "default")
	t.Logf("MEASURE kubectl get configmaps while down (cold cache): err=%v stderr:\n%s", err, stderr)
	stdout, stderr, err := e.cp.KubectlConfig(t, fresh, nil, "api-resources", "--api-group=record.optionsrecord.io")
	t.Logf("MEASURE kubectl api-resources --api-group=record.optionsrecord.io while down: err=%v stdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	stdout, stderr, err = e.cp.KubectlConfig(t, fresh, nil, "get", "deletions", "-n", "shop")
	t.Logf("MEASURE kubectl get deletions while down: err=%v stdout: %s stderr:\n%s", err, stdout, stderr)

	e.srv.start()
	back := time.Now()
	took, ok = gone("doomed", 5*time.Minute)
	if !ok {
		t.Fatalf("namespace doomed still there %s after the server came back", took)
	}
	t.Logf("MEASURE namespace deleted %s after the server came back (%s after the delete, %s of it with the API down)",
		took.Round(100*time.Millisecond), time.Since(deleted).Round(100*time.Millisecond), back.Sub(deleted).Round(100*time.Millisecond))
}
