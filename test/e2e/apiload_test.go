package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// TestRestoreAPIUnderLoad is a load test, run on demand only
// (OPTIONS_RECORD_API_LOAD=1): a view-only caller (eve) sends as-of plans
// of a namespace of 5,000 recorded ConfigMaps and undo plans of the user
// who made them, 20 requests at a time, while alice's changes keep coming
// through the audit webhook. It reports the sink's resident memory and
// checks that the ingest acknowledges every batch, none refused, and keeps
// recording alice's changes at the rate she makes them.
//
//	OPTIONS_RECORD_API_LOAD=1 OPTIONS_RECORD_CONTROLPLANE_DIR=... go test ./test/e2e -run TestRestoreAPIUnderLoad -v
//
// The sink runs in the test's process: its memory is the process's.
func TestRestoreAPIUnderLoad(t *testing.T) {
	if os.Getenv("OPTIONS_RECORD_API_LOAD") == "" {
		t.Skip("a load test: set OPTIONS_RECORD_API_LOAD=1 to run it")
	}
	const (
		ns       = "e2e-load"
		objects  = 5000
		parallel = 20
		phase    = 20 * time.Second
	)
	w := startRestoreWorld(t)
	ctx := context.Background()
	w.namespace(t, ns)
	if _, err := w.admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-namespace"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "eve-reads-namespace"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-namespace"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "eve"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The record of a busy namespace: mallory created 5,000 ConfigMaps
	// (with 4 KiB of data each) in the last hour. Written straight into the
	// record: the apiserver need not hold them.
	st, err := store.Open(ctx, store.Options{URL: w.db.Config().ConnString(), Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now().Add(-time.Hour).UTC()
	data := string(make([]byte, 4096))
	for i := 0; i < objects; i += 500 {
		var b model.Batch
		for j := i; j < i+500; j++ {
			at := start.Add(time.Duration(j) * 100 * time.Millisecond)
			name, uid := fmt.Sprintf("cm-%05d", j), fmt.Sprintf("load-uid-%05d", j)
			ek := sha256.Sum256([]byte("load-event-" + uid))
			vk := sha256.Sum256([]byte("load-version-" + uid))
			rv := int64(1_000_000 + j)
			obj, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns, "uid": uid, "resourceVersion": strconv.FormatInt(rv, 10)},
				"data":     map[string]any{"blob": fmt.Sprintf("%x", data)}})
			b.Events = append(b.Events, model.Event{Cluster: "e2e", Key: ek[:], StageAt: at, AuditID: "load-" + uid, Stage: "ResponseComplete",
				Verb: "create", RequestURI: "/api/v1/namespaces/" + ns + "/configmaps", Username: "mallory", APIVersion: "v1",
				Resource: "configmaps", Namespace: ns, Name: name, ObjectUID: uid, ResponseCode: 201})
			b.Versions = append(b.Versions, model.Version{Cluster: "e2e", UID: uid, Key: vk[:], ResourceVersion: &rv, Origin: model.OriginChange,
				Verb: "create", ChangedAt: at, EventKey: ek[:], APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
				Namespace: ns, Name: name, Created: true, Complete: true, Object: obj})
		}
		if err := st.EnsurePartitionsAround(ctx, start); err != nil {
			t.Fatal(err)
		}
		if _, err := st.WriteBatch(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}

	// No ANALYZE: the plans run right after the burst, before autovacuum
	// has statistics of it, the worst case for the planner.

	// alice's steady changes, through the apiserver and the webhook.
	alice := w.kube(t, "alice")
	ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "heartbeat"}}, metav1.CreateOptions{}))(t)
	w.waitChanges(t, ns, "heartbeat", 1)
	var patches int
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case <-tick.C:
				p := fmt.Sprintf(`{"data":{"n":"%d"}}`, patches)
				if _, err := alice.CoreV1().ConfigMaps(ns).Patch(ctx, "heartbeat", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err == nil {
					patches++
				}
			}
		}
	}()
	kept := func() float64 { return w.metric(t, `options_record_events_kept_total{cluster="e2e"}`) }
	refused := func() float64 {
		return w.metric(t, `options_record_batches_total{outcome="throttled"}`) + w.metric(t, `options_record_batches_total{outcome="rejected"}`)
	}

	// A quiet phase, then the same length under the API load.
	k0, r0 := kept(), refused()
	time.Sleep(phase)
	k1 := kept()
	rssBefore, _ := procStatus("VmRSS")
	at := time.Now().UTC().Format(time.RFC3339)
	since := start.Add(-time.Minute).Format(time.RFC3339)
	codes, slowest, msgs := map[string]int{}, map[string]time.Duration{}, map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var peakRSS int64
	end := time.Now().Add(phase)
	for i := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				req := map[string]any{"kind": "as-of", "namespaces": []string{ns}, "at": at}
				kind := "as-of"
				if (i+n)%2 == 1 {
					req, kind = map[string]any{"kind": "undo", "user": "mallory", "since": since}, "undo"
				}
				t0 := time.Now()
				code, body := w.call(t, "eve", http.MethodPost, "/api/v1/clusters/e2e/restore-plans", req)
				took := time.Since(t0)
				rss, _ := procStatus("VmRSS")
				mu.Lock()
				k := fmt.Sprintf("%s %d", kind, code)
				codes[k]++
				if took > slowest[k] {
					slowest[k] = took
				}
				if code != http.StatusTooManyRequests && msgs[k] == "" {
					msgs[k] = string(body[:min(len(body), 300)])
				}
				peakRSS = max(peakRSS, rss)
				mu.Unlock()
				if code == http.StatusTooManyRequests {
					time.Sleep(time.Second) // Retry-After, as a client should
				}
			}
		}()
	}
	wg.Wait()
	k2, r2 := kept(), refused()
	close(stopBeat)
	<-beatDone
	hwm, _ := procStatus("VmHWM")
	quietRate, loadRate := (k1-k0)/phase.Seconds(), (k2-k1)/phase.Seconds()
	t.Logf("API answers (kind status: count): %v; slowest: %v", codes, slowest)
	for k, m := range msgs {
		t.Logf("%s: %s", k, m)
	}
	t.Logf("RSS: %d MiB before the API load, %d MiB at most during it (process high-water mark %d MiB)", rssBefore>>20, peakRSS>>20, hwm>>20)
	t.Logf("events kept: %.1f/s quiet, %.1f/s under the API load; batches refused: %.0f", quietRate, loadRate, r2-r0)
	if r2 != r0 {
		t.Errorf("the webhook refused %.0f batches under the API load", r2-r0)
	}
	if loadRate < 0.8*quietRate {
		t.Errorf("the ingest kept %.1f events/s under the API load, %.1f/s before", loadRate, quietRate)
	}
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no %s", field)
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	return n << 10, err
}
