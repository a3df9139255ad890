package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionLatency (make bench-admission; skipped unless
// OPTIONS_RECORD_ADMISSION_BENCH is set to a number of writes) measures
// what the observing webhook adds to a write on the real kube-apiserver:
// the p50 and p99 of ConfigMap updates by one client, with the webhook
// registered and without it, and the observations confirmed per second. It
// reports; it asserts only that every observation was confirmed.
func TestAdmissionLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("OPTIONS_RECORD_ADMISSION_BENCH"))
	if n <= 0 {
		t.Skip("set OPTIONS_RECORD_ADMISSION_BENCH to a number of writes (make bench-admission)")
	}
	w := startWorldWith(t, worldOptions{
		policy: func(t *testing.T, _ string) string {
			p, err := filepath.Abs("../fixtures/eks-audit-policy.yaml")
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		admission: true,
	})
	ctx := context.Background()
	const ns = "e2e-observe-bench"
	w.namespace(t, ns)
	alice := w.kube(t, "alice")
	cms := alice.CoreV1().ConfigMaps(ns)
	cm := ok(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Data: map[string]string{"k": "0"}}, metav1.CreateOptions{}))(t)
	run := func() []time.Duration {
		d := make([]time.Duration, 0, n)
		for i := range n {
			cm.Data["k"] = strconv.Itoa(i)
			start := time.Now()
			cm = ok(cms.Update(ctx, cm, metav1.UpdateOptions{}))(t)
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d
	}
	pct := func(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }

	without := run()
	w.registerObserver(t, "https://"+w.admissionAddr+"/observe", ns)
	w.probeObserver(t, ns, true)
	confirmed := w.metric(t, "options_record_observations_confirmed_total")
	start := time.Now()
	with := run()
	eventually(t, 2*time.Minute, "every observation confirmed", func() error {
		if got := w.metric(t, "options_record_observations_confirmed_total") - confirmed; got < float64(n) {
			return fmt.Errorf("%v of %d confirmed", got, n)
		}
		return nil
	})
	elapsed := time.Since(start)
	t.Logf("%d updates, one client: without the webhook p50 %v p99 %v; with it p50 %v p99 %v (added: p50 %v, p99 %v); %d observations confirmed in %v (%.0f/s)",
		n, pct(without, 50), pct(without, 99), pct(with, 50), pct(with, 99),
		pct(with, 50)-pct(without, 50), pct(with, 99)-pct(without, 99), n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
}
