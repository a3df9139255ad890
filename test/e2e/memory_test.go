package e2e

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/options-record/options-record/api/history"
)

// apiMemoryLimit is the restore API Deployment's memory limit
// (deploy/components/restore-api), which it also gives the Go runtime as
// GOMEMLIMIT.
const apiMemoryLimit = 512 << 20

// TestViewOnlyCallerStaysUnderTheAPIMemoryLimit: a caller with view rights
// reads, as fast as the API lets it, the largest answers a record of
// 1 MiB objects gives (versions with their state, diffs of two 1 MiB
// states, YAML manifests, failed writes with 1 MiB request bodies, whole
// histories). The process that serves them (here the whole sink, ingest
// included) stays under the API pod's memory limit, run with the pod's
// GOMEMLIMIT: the caller's cap, the page bounds in bytes and the deadline
// bound what one view-only caller can make it hold.
func TestViewOnlyCallerStaysUnderTheAPIMemoryLimit(t *testing.T) {
	w := startRestoreWorld(t)
	ctx := context.Background()
	const ns = "e2e-mem"
	w.namespace(t, ns)
	alice := w.kube(t, "alice")
	value := strings.Repeat("m", 1000<<10)
	const n = 16
	for i := range n {
		name := fmt.Sprintf("big-%02d", i)
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"v": value}}, metav1.CreateOptions{}))(t)
		ok(alice.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"data":{"v":"`+strings.Repeat("n", 1000<<10)+`"}}`), metav1.PatchOptions{}))(t)
	}
	// Writes the apiserver refuses after reading their 1 MiB bodies:
	// failed mutations with their request bodies, about 100 MiB of them.
	const refusedWrites = 96
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < refusedWrites; i += 4 {
				_, _ = alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("Bad_%02d", i)},
					Data: map[string]string{"v": value}}, metav1.CreateOptions{})
			}
		})
	}
	wg.Wait()
	w.waitChanges(t, ns, fmt.Sprintf("big-%02d", n-1), 2)
	eventually(t, 2*time.Minute, "the refused writes recorded with their bodies", func() error {
		if c := w.count(t, `SELECT count(*) FROM events WHERE namespace = '`+ns+`' AND response_code >= 400 AND request_object IS NOT NULL`); c < refusedWrites {
			return fmt.Errorf("%d of %d", c, refusedWrites)
		}
		return nil
	})
	var page history.Page[history.Version]
	w.eventuallyGet(t, "eve", "/api/v1/clusters/e2e/changes?namespace="+ns+"&resource=configmaps&limit=500", &page, func() error {
		if len(page.Items) < 2*n {
			return fmt.Errorf("%d changes of %d", len(page.Items), 2*n)
		}
		return nil
	})
	var paths []string
	for _, v := range page.Items {
		paths = append(paths, v.Links.Self, v.Links.Diff, v.Links.Manifest+"?format=yaml", v.Links.History)
	}
	paths = append(paths, "/api/v1/clusters/e2e/failed-mutations?namespace="+ns+"&limit=500",
		"/api/v1/clusters/e2e/changes?namespace="+ns+"&limit=500")

	old := debug.SetMemoryLimit(apiMemoryLimit)
	defer debug.SetMemoryLimit(old)
	debug.FreeOSMemory()
	base, err := procStatus("VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss, err := procStatus("VmRSS"); err == nil && rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var served, refused atomic.Int64
	deadline := time.Now().Add(15 * time.Second)
	for g := range 8 {
		wg.Go(func() {
			for i := g; time.Now().Before(deadline); i++ {
				code, body := w.call(t, "eve", http.MethodGet, paths[i%len(paths)], nil)
				switch code {
				case http.StatusOK:
					served.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
					time.Sleep(50 * time.Millisecond)
				default:
					t.Errorf("GET %s as eve: %d %.200s", paths[i%len(paths)], code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	t.Logf("eve: %d answers of up to a few MiB served, %d refused (her cap); RSS %d MiB before, peak %d MiB (limit %d MiB)",
		served.Load(), refused.Load(), base>>20, peak.Load()>>20, apiMemoryLimit>>20)
	if served.Load() < 20 {
		t.Fatalf("only %d answers served: the load did not happen", served.Load())
	}
	if peak.Load() > apiMemoryLimit {
		t.Errorf("a view-only caller pushed the process to %d MiB, past the API pod's %d MiB", peak.Load()>>20, apiMemoryLimit>>20)
	}

}
