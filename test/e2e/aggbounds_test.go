package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/options-record/options-record/test/framework/controlplane"
	"k8s.io/client-go/rest"
)

// TestAggregatedAPIBoundsThroughTheKubeAPIServer: the caps and the
// deadline of the API are wired into the aggregated server as kubectl
// users meet them, through the kube-apiserver: with every read held (the
// record's table locked), a caller's requests past its cap get 429 at
// once, requests past the global cap get 429, and the held ones end at the
// request deadline (504), not at the database's leisure.
func TestAggregatedAPIBoundsThroughTheKubeAPIServer(t *testing.T) {
	w := startWorldWith(t, worldOptions{aggregated: true,
		files:          []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"},
		apiMaxInFlight: 3, apiMaxInFlightPerUser: 2, apiRequestTimeout: 6 * time.Second})
	registerAggregated(t, w)
	const ns = "e2e-agg-bounds"
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", ns)
	kubectlOK(t, w, controlplane.AdminUser, []byte(strings.ReplaceAll(aggRBAC, "e2e-agg-shop", ns)), "apply", "-f", "-")
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "rolebinding", "bob-reads-records", "-n", ns,
		"--clusterrole", "options-record-e2e-record-reader", "--user", "bob")
	// Plain HTTP through the kube-apiserver: client-go would retry a 429
	// itself, and the test must see it.
	list := func(user string) (int, string) {
		cfg := w.config(user)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		resp, err := hc.Get(cfg.Host + "/apis/record.optionsrecord.io/v1alpha1/namespaces/" + ns + "/changes")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	eventually(t, 30*time.Second, "alice and bob may list changes", func() error {
		for _, u := range []string{"alice", "bob"} {
			if code, body := list(u); code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", u, code, body)
			}
		}
		return nil
	})

	ctx := context.Background()
	tx, err := w.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE object_versions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		user string
		code int
		body string
	}
	var (
		results = make(chan result, 5)
		wg      sync.WaitGroup
	)
	fire := func(user string) {
		wg.Go(func() {
			code, body := list(user)
			results <- result{user, code, body}
		})
	}
	// alice: 3 requests, her cap is 2: the first answer is her third,
	// refused while the other two are held. Then bob: 2, and the global
	// cap (3) is full with alice's 2 and bob's first.
	for range 3 {
		fire("alice")
	}
	first := <-results
	for range 2 {
		fire("bob")
	}
	wg.Wait()
	_ = tx.Rollback(ctx)
	close(results)

	var perCaller, global, timedOut int
	all := []result{first}
	for r := range results {
		all = append(all, r)
	}
	for _, r := range all {
		switch {
		case r.code == http.StatusTooManyRequests && strings.Contains(r.body, "of your requests are being served"):
			perCaller++
		case r.code == http.StatusTooManyRequests:
			global++
		// Held until the API's deadline ended them (the table stays
		// locked until every answer is in): 504 with the API's own
		// message (the kube-apiserver's timeout says otherwise), or 503
		// when the generic server's timeout resets the proxied HTTP/2
		// stream as the handler's own deadline ends it.
		case r.code == http.StatusGatewayTimeout && strings.Contains(r.body, "the request ran out of time"),
			r.code == http.StatusServiceUnavailable:
			timedOut++
		default:
			t.Errorf("%s: %d %.200s", r.user, r.code, r.body)
		}
	}
	if first.code != http.StatusTooManyRequests {
		t.Errorf("alice's first answer: %d %.200s, want her third request refused while the two are held", first.code, first.body)
	}
	if perCaller != 1 || global != 1 || timedOut != 3 {
		t.Errorf("%d refused per caller, %d refused by the global cap, %d held to the deadline; want 1, 1, 3", perCaller, global, timedOut)
	}
}
