package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/cmd/options-record/app"
)

// TestGeneratedPolicyOnARealAPIServer runs the apiserver with the policy
// `options-record policy` prints for the test's rules and checks that the
// changes the rules select still arrive, while reads no longer do.
func TestGeneratedPolicyOnARealAPIServer(t *testing.T) {
	w := startWorldWith(t, worldOptions{policy: func(t *testing.T, dir string) string {
		var out bytes.Buffer
		if err := app.Policy(context.Background(), app.PolicyOptions{
			Rules: app.RulesOptions{Files: []string{"testdata/rules.yaml"}, Namespace: sinkNS}, Out: &out,
		}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "generated-policy.yaml")
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}})
	ctx := context.Background()
	w.namespace(t, "e2e-policy")
	alice := w.kube(t, "alice")
	ok(alice.CoreV1().ConfigMaps("e2e-policy").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Data: map[string]string{"level": "one"}}, metav1.CreateOptions{}))(t)
	for i := 0; i < 5; i++ {
		ok(alice.CoreV1().ConfigMaps("e2e-policy").Get(ctx, "p", metav1.GetOptions{}))(t)
	}
	if err := alice.CoreV1().ConfigMaps("e2e-policy").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitHistory(t, "e2e-policy", "configmaps", "p", []row{
		{Verb: "create", User: "alice", PriorKnown: true, After: "one"},
		{Verb: "delete", User: "alice", PriorKnown: true, Prior: "one", Deleted: true},
	})
	// The sink received no read at all: the policy filtered them at the source.
	if n := w.metric(t, `options_record_events_dropped_total{cluster="e2e",reason="read_only"}`); n != 0 {
		t.Errorf("the sink received %v reads", n)
	}
	if n := w.metric(t, `options_record_events_received_total{cluster="e2e"}`); n == 0 {
		t.Errorf("the sink received nothing")
	}
}

// metric reads one sample of the sink's /metrics (0 when absent).
func (w *world) metric(t *testing.T, series string) float64 {
	t.Helper()
	var v float64
	eventually(t, 10*time.Second, "metrics", func() error {
		resp, err := http.Get("http://" + w.metrics + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return errors.New(resp.Status)
		}
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`).FindSubmatch(body)
		if m == nil {
			v = 0
			return nil
		}
		v, err = strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return fmt.Errorf("parse %s: %w", m[1], err)
		}
		return nil
	})
	return v
}
