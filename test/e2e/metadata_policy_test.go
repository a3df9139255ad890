package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEKSPolicyDeletionsAreRecorded runs the apiserver with EKS's audit
// policy as AWS documents it (test/fixtures/eks-audit-policy.yaml): it logs
// ConfigMaps and Secrets at Metadata, with no bodies. A ConfigMap and a
// Secret alice creates and bob deletes are still deletions, by bob, with
// their state unknown; a Deployment (logged with bodies) keeps its state.
func TestEKSPolicyDeletionsAreRecorded(t *testing.T) {
	w := startWorldWith(t, worldOptions{policy: func(t *testing.T, _ string) string {
		p, err := filepath.Abs("../fixtures/eks-audit-policy.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}})
	ctx := context.Background()
	const ns = "e2e-eks"
	w.namespace(t, ns)
	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"level": "one"}}, metav1.CreateOptions{}))(t)
	ok(alice.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"},
		StringData: map[string]string{"password": "hunter2-eks"}}, metav1.CreateOptions{}))(t)
	ok(alice.AppsV1().Deployments(ns).Create(ctx, deployment("api"), metav1.CreateOptions{}))(t)
	for _, del := range []func() error{
		func() error { return bob.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}) },
		func() error { return bob.CoreV1().Secrets(ns).Delete(ctx, "token", metav1.DeleteOptions{}) },
		func() error { return bob.AppsV1().Deployments(ns).Delete(ctx, "api", metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "deletions by bob", func() error {
		if n := w.count(t, `SELECT count(*) FROM deletions WHERE namespace = '`+ns+`' AND username = 'bob'`); n != 3 {
			return fmt.Errorf("%d deletions by bob, want 3", n)
		}
		return nil
	})
	for _, c := range []struct {
		resource, name string
		unknown        bool
	}{{"configmaps", "settings", true}, {"secrets", "token", true}, {"deployments", "api", false}} {
		var unknown, known bool
		err := w.db.QueryRow(ctx, `SELECT state_unknown, prior_known FROM deletions
			WHERE namespace = $1 AND resource = $2 AND name = $3 AND username = 'bob' AND verb = 'delete'`,
			ns, c.resource, c.name).Scan(&unknown, &known)
		if err != nil {
			t.Fatalf("%s/%s: %v", c.resource, c.name, err)
		}
		if unknown != c.unknown || known == c.unknown {
			t.Errorf("%s/%s: state_unknown %v prior_known %v, want state_unknown %v", c.resource, c.name, unknown, known, c.unknown)
		}
	}
	// Their creations are changes too, by alice.
	if n := w.count(t, `SELECT count(*) FROM object_history WHERE namespace = '`+ns+`' AND username = 'alice' AND created`); n != 3 {
		t.Errorf("creations by alice = %d, want 3", n)
	}
	// Nothing of the Secret's value reached the record.
	if n := w.count(t, `SELECT count(*) FROM object_history WHERE namespace = '`+ns+`' AND coalesce(object::text,'') || coalesce(request_object::text,'') LIKE '%hunter2%'`); n != 0 {
		t.Error(errors.New("the Secret's value is in the record"))
	}
}
