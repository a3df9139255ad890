package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLargeWritesDoNotHideADeletion: one user writes 80 ConfigMaps of
// 1 MiB within a few seconds while another deletes a Deployment. With the
// shipped apiserver settings (the kind config's 5 s batch window, no event
// truncation) the apiserver posts batches of a hundred megabytes and more;
// the sink takes them whole, so the deletion is recorded with its prior
// state, and so is every ConfigMap. (A sink that refused such a batch with
// 413 lost every event in it: the apiserver never retries a 413.)
func TestLargeWritesDoNotHideADeletion(t *testing.T) {
	w := startWorldWith(t, worldOptions{batchMaxWait: 5 * time.Second})
	const ns = "e2e-bulk"
	w.namespace(t, ns)
	ctx := context.Background()
	bob := w.kube(t, "bob")
	ok(bob.AppsV1().Deployments(ns).Create(ctx, deployment("web"), metav1.CreateOptions{}))(t)
	eventually(t, 30*time.Second, "the Deployment's creation recorded", func() error {
		if n := w.count(t, `SELECT count(*) FROM object_versions WHERE namespace = '`+ns+`' AND name = 'web' AND object IS NOT NULL`); n == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})

	alice := w.kube(t, "alice")
	value := strings.Repeat("x", 1000<<10) // 1,000 KiB: a ConfigMap holds at most 1 MiB
	const n = 80
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%02d", i)}, Data: map[string]string{"v": value}}
				if _, err := alice.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", cm.Name, err)
				}
			}
		})
	}
	wg.Go(func() {
		time.Sleep(time.Second)
		if err := bob.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			errs <- fmt.Errorf("delete the Deployment: %w", err)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("80 ConfigMaps of 1,000 KiB created and the Deployment deleted in %v", time.Since(start).Round(time.Millisecond))

	eventually(t, 3*time.Minute, "every ConfigMap and the deletion recorded", func() error {
		cms := w.count(t, `SELECT count(*) FROM object_versions WHERE namespace = '`+ns+`' AND resource = 'configmaps'
			AND name LIKE 'big-%' AND octet_length(object->'data'->>'v') = `+fmt.Sprint(len(value)))
		del := w.count(t, `SELECT count(*) FROM deletions WHERE namespace = '`+ns+`' AND name = 'web'
			AND username = 'bob' AND prior_object IS NOT NULL`)
		if cms != n || del != 1 {
			return fmt.Errorf("%d of %d ConfigMaps with their data, %d deletions with the prior state", cms, n, del)
		}
		return nil
	})
	if v := w.metric(t, `options_record_batches_total{outcome="rejected"}`); v != 0 {
		t.Errorf("%v batches rejected", v)
	}
	if v := w.metric(t, `options_record_events_dropped_total{cluster="e2e",reason="too_large"}`); v != 0 {
		t.Errorf("%v events dropped as too large", v)
	}
}
