package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestPaddedAuditIDDoesNotHideADeleteCollection: a user sends its
// deletecollection with an Audit-ID of hundreds of kilobytes, which the
// kube-apiserver writes into the event before the verb, making the event
// longer than the largest the sink keeps whole. The deletion is recorded
// all the same: the event names the user and what was deleted, marked
// truncated, with its Audit-ID shortened, and no event is skipped.
func TestPaddedAuditIDDoesNotHideADeleteCollection(t *testing.T) {
	w := startWorldWith(t, worldOptions{chunkBytes: 256 << 10, maxEventBytes: 256 << 10})
	const ns = "e2e-padded"
	w.namespace(t, ns)
	ctx := context.Background()
	alice := w.kube(t, "alice")
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}}
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}))(t)
	}
	eventually(t, 30*time.Second, "the ConfigMaps' creations recorded", func() error {
		if n := w.count(t, `SELECT count(*) FROM object_versions WHERE namespace = '`+ns+`' AND object IS NOT NULL`); n < 3 {
			return fmt.Errorf("%d of 3", n)
		}
		return nil
	})

	cfg := w.config("bob")
	pad := "padded-" + strings.Repeat("p", 400<<10)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Audit-ID", pad)
			return rt.RoundTrip(r)
		})
	}
	bob := kubernetes.NewForConfigOrDie(cfg)
	if err := bob.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection with a padded Audit-ID: %v", err)
	}
	eventually(t, 60*time.Second, "the deletecollection recorded", func() error {
		ev := w.count(t, `SELECT count(*) FROM events WHERE namespace = '`+ns+`' AND verb = 'deletecollection' AND username = 'bob'
			AND audit_id LIKE 'padded-%sha256:%' AND octet_length(audit_id) < 70000
			AND annotations::jsonb->>'audit.k8s.io/truncated' = 'true'`)
		if ev == 0 {
			return fmt.Errorf("no deletecollection by bob, shortened and marked, recorded")
		}
		return nil
	})
	if v := w.metric(t, `options_record_events_dropped_total{cluster="e2e",reason="too_large"}`); v != 0 {
		t.Errorf("%v events dropped as too large", v)
	}
	if v := w.metric(t, `options_record_events_truncated_total{cluster="e2e"}`); v == 0 {
		t.Errorf("no event counted as truncated")
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
