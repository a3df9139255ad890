package aggregated

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/test/framework/controlplane"
)

const (
	alice  = "agg-alice" // token user
	carol  = "agg-carol" // client-certificate user
	dave   = "agg-dave"  // impersonated by the admin, with uid and extras
	nobody = "agg-nobody"
)

func TestAggregatedPrototype(t *testing.T) {
	e := setup(t, []controlplane.User{
		{Name: alice, Groups: []string{"shop-oncall"}},
		{Name: nobody, Groups: []string{"strangers"}},
	})
	ctx := context.Background()
	for _, u := range []string{alice, carol, dave} {
		for _, role := range []string{"options-record-reader", "options-record-restorer"} {
			if _, err := e.admin.RbacV1().RoleBindings("shop").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role + "-" + u},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u}},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	cfgs := map[string]string{
		alice: e.cp.WriteKubeconfig(t, alice),
		carol: e.cp.WriteKubeconfigAuth(t, carol, e.cp.ClientCertAuth(t, carol, []string{"cert-operators"})),
		dave: e.cp.WriteKubeconfigAuth(t, "admin-as-dave", &clientcmdapi.AuthInfo{
			Token:             e.cp.Token(controlplane.AdminUser),
			Impersonate:       dave,
			ImpersonateUID:    "dave-uid-7",
			ImpersonateGroups: []string{"incident-responders"},
			ImpersonateUserExtra: map[string][]string{
				"reason": {"incident-42"}, "ticket": {"OPS-1", "OPS-2"},
			},
		}),
		nobody:                 e.cp.WriteKubeconfig(t, nobody),
		controlplane.AdminUser: e.cp.WriteKubeconfig(t, controlplane.AdminUser),
	}
	run := func(t *testing.T, who string, stdin string, args ...string) (string, error) {
		t.Helper()
		out, errOut, err := e.cp.KubectlConfig(t, cfgs[who], []byte(stdin), args...)
		if err != nil {
			return out + errOut, err
		}
		return out, nil
	}
	must := func(t *testing.T, who, stdin string, args ...string) string {
		t.Helper()
		var out string
		var err error
		// RBAC bindings reach the authorizer a moment after they are made.
		for i := 0; i < 20; i++ {
			if out, err = run(t, who, stdin, args...); err == nil || !strings.Contains(out, "Forbidden") {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("kubectl %s as %s: %v\n%s", strings.Join(args, " "), who, err, out)
		}
		return out
	}

	t.Run("discovery and OpenAPI", func(t *testing.T) {
		out := must(t, alice, "", "api-resources", "--api-group=record.optionsrecord.io", "-o", "wide")
		t.Logf("api-resources:\n%s", out)
		for _, want := range []string{"deletions", "restores", "Deletion", "Restore"} {
			if !strings.Contains(out, want) {
				t.Errorf("api-resources lacks %q", want)
			}
		}
		v3 := must(t, controlplane.AdminUser, "", "get", "--raw", "/openapi/v3/apis/record.optionsrecord.io/v1alpha1")
		v2 := must(t, controlplane.AdminUser, "", "get", "--raw", "/openapi/v2")
		for name, doc := range map[string]string{"v3": v3, "v2": v2} {
			if !strings.Contains(doc, `"kind":"Deletion","version":"v1alpha1"`) && !strings.Contains(doc, `"kind": "Deletion"`) {
				t.Errorf("OpenAPI %s through the aggregator lacks the Deletion kind", name)
			}
			if i := strings.Index(doc, "v1alpha1.Deletion\""); i >= 0 {
				t.Logf("OpenAPI %s definition name: ...%s", name, doc[max(0, i-70):i+18])
			}
		}
	})

	t.Run("kubectl explain", func(t *testing.T) {
		out := must(t, alice, "", "explain", "deletions.spec.user")
		if !strings.Contains(out, "Who deleted it") && !strings.Contains(out, "User who deleted") {
			t.Errorf("kubectl explain (OpenAPI v3) does not show the field's doc:\n%s", out)
		}
	})

	t.Run("token user reads deletions", func(t *testing.T) {
		out := must(t, alice, "", "get", "deletions", "-n", "shop")
		t.Logf("kubectl get deletions -n shop:\n%s", out)
		for _, want := range []string{"NAME", "RESOURCE", "OBJECT", "USER", "DELETED", "d-app-config", "app-config", "bob", "mallory"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q", want)
			}
		}
		if strings.Contains(out, "d-elsewhere") {
			t.Errorf("deletions of another namespace listed")
		}
		out = must(t, alice, "", "get", "deletion", "d-web", "-n", "shop", "-o", "yaml")
		var d recordv1alpha1.Deletion
		if err := yaml.Unmarshal([]byte(out), &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind != "Deletion" || d.APIVersion != "record.optionsrecord.io/v1alpha1" || d.Spec.Name != "web" || d.Spec.User != "bob" {
			t.Errorf("-o yaml gave %+v", d)
		}
		out = must(t, alice, "", "get", "deletions", "-n", "shop", "--field-selector", "spec.user=bob,spec.resource=configmaps", "-o", "name")
		if got := strings.TrimSpace(out); got != "deletion.record.optionsrecord.io/d-app-config" {
			t.Errorf("field selector: got %q", got)
		}
		out, err := run(t, alice, "", "get", "deletions", "-n", "shop", "--field-selector", "spec.verb=delete")
		if err == nil || !strings.Contains(out, "not supported") {
			t.Errorf("unsupported field selector: err %v, out %s", err, out)
		}
		// kubectl pages with --chunk-size and follows continue tokens.
		out = must(t, alice, "", "get", "deletions", "-n", "shop", "--chunk-size=1", "-o", "name")
		names := strings.Fields(out)
		if len(names) != 3 {
			t.Errorf("chunked list: %v", names)
		}
		raw := must(t, alice, "", "get", "--raw", "/apis/record.optionsrecord.io/v1alpha1/namespaces/shop/deletions?limit=2")
		var page recordv1alpha1.DeletionList
		if err := yaml.Unmarshal([]byte(raw), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 2 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 1 {
			t.Errorf("limit=2: %d items, continue %q, remaining %v", len(page.Items), page.Continue, page.RemainingItemCount)
		}
		raw = must(t, alice, "", "get", "--raw", "/apis/record.optionsrecord.io/v1alpha1/namespaces/shop/deletions?limit=2&continue="+page.Continue)
		var next recordv1alpha1.DeletionList
		if err := yaml.Unmarshal([]byte(raw), &next); err != nil {
			t.Fatal(err)
		}
		if len(next.Items) != 1 || next.Continue != "" {
			t.Errorf("second page: %d items, continue %q", len(next.Items), next.Continue)
		}
	})

	restore := func(name string) string {
		return fmt.Sprintf("apiVersion: record.optionsrecord.io/v1alpha1\nkind: Restore\nmetadata:\n  name: %s\n  namespace: shop\nspec:\n  deletion: d-app-config\n", name)
	}
	create := func(t *testing.T, who, name string, extra ...string) recordv1alpha1.Restore {
		t.Helper()
		out := must(t, who, restore(name), append([]string{"create", "-f", "-", "-o", "yaml"}, extra...)...)
		var r recordv1alpha1.Restore
		if err := yaml.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return r
	}

	t.Run("restores: dry run, then for real, caller echoed", func(t *testing.T) {
		for _, tc := range []struct {
			who    string
			user   string
			uid    string
			groups []string
			extra  map[string][]string
		}{
			{who: alice, user: alice, groups: []string{"shop-oncall", "system:authenticated"}},
			{who: carol, user: carol, groups: []string{"cert-operators", "system:authenticated"}},
			{who: dave, user: dave, uid: "dave-uid-7", groups: []string{"incident-responders", "system:authenticated"},
				extra: map[string][]string{"reason": {"incident-42"}, "ticket": {"OPS-1", "OPS-2"}}},
		} {
			name := "r-" + tc.who
			dry := create(t, tc.who, name, "--dry-run=server")
			if dry.Status.Phase != "DryRun" {
				t.Errorf("%s dry run: phase %q", tc.who, dry.Status.Phase)
			}
			if out, err := run(t, tc.who, "", "get", "restore", name, "-n", "shop"); err == nil || !strings.Contains(out, "NotFound") {
				t.Errorf("%s: dry-run restore was stored: %v %s", tc.who, err, out)
			}
			r := create(t, tc.who, name)
			got := r.Status.RequestedBy
			t.Logf("%s: restore status.requestedBy = %+v", tc.who, got)
			sort.Strings(got.Groups)
			if got.Username != tc.user || !equal(got.Groups, tc.groups) {
				t.Errorf("%s: requestedBy %+v, want user %s groups %v", tc.who, got, tc.user, tc.groups)
			}
			if tc.uid != "" && got.UID != tc.uid {
				t.Errorf("%s: uid %q, want %q", tc.who, got.UID, tc.uid)
			}
			if tc.who == alice && !strings.HasPrefix(got.UID, "uid-") {
				t.Errorf("token user's uid not forwarded: %q", got.UID)
			}
			for k, v := range tc.extra {
				if !equal(got.Extra[k], v) {
					t.Errorf("%s: extra %s = %v, want %v (all: %v)", tc.who, k, got.Extra[k], v, got.Extra)
				}
			}
		}
		out := must(t, alice, "", "get", "restores", "-n", "shop")
		t.Logf("kubectl get restores -n shop:\n%s", out)
	})

	t.Run("no rights: refused by the kube-apiserver", func(t *testing.T) {
		out, err := run(t, nobody, "", "get", "deletions", "-n", "shop")
		if err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("get deletions as %s: err %v, out %s", nobody, err, out)
		}
		t.Logf("as %s: %s", nobody, strings.TrimSpace(out))
		out, err = run(t, nobody, restore("r-nobody"), "create", "-f", "-")
		if err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("create restore as %s: err %v, out %s", nobody, err, out)
		}
		// alice has no binding in "other".
		if out, err = run(t, alice, "", "get", "deletions", "-n", "other"); err == nil {
			t.Errorf("alice listed deletions in other: %s", out)
		}
	})

	t.Run("loopback routing alternatives", func(t *testing.T) {
		// Endpoints and EndpointSlices cannot point at loopback.
		_, err := e.admin.CoreV1().Endpoints(svcNamespace).Create(ctx, &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: "loopback-try"},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}},
				Ports:     []corev1.EndpointPort{{Port: 443}},
			}},
		}, metav1.CreateOptions{})
		t.Logf("Endpoints with 127.0.0.1: %v", err)
		if err == nil {
			t.Errorf("Endpoints accepted a loopback address")
		}
		port := int32(443)
		_, err = e.admin.DiscoveryV1().EndpointSlices(svcNamespace).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "loopback-try"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
			Ports:       []discoveryv1.EndpointPort{{Port: &port}},
		}, metav1.CreateOptions{})
		t.Logf("EndpointSlice with 127.0.0.1: %v", err)
		if err == nil {
			t.Errorf("EndpointSlice accepted a loopback address")
		}
	})

	t.Run("direct bearer token: delegated TokenReview", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(e.caPEM)
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.srv.addr+"/apis/record.optionsrecord.io/v1alpha1/namespaces/shop/deletions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.cp.Token(alice))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "d-app-config") {
			t.Errorf("direct GET with alice's token: %s %s", resp.Status, body)
		}
		// Headers without the front proxy's certificate are not trusted.
		req.Header.Del("Authorization")
		req.Header.Set("X-Remote-User", alice)
		resp, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("forged X-Remote-User without the proxy certificate: %s", resp.Status)
		}
		t.Logf("forged X-Remote-User: %s", resp.Status)
	})

	t.Run("the aggregated server neither lists nor watches", func(t *testing.T) {
		time.Sleep(2 * time.Second) // let the audit log catch up
		evs := e.auditOf(t, serverUser)
		count := map[string]int{}
		for _, ev := range evs {
			res := ""
			if ev.ObjectRef != nil {
				res = ev.ObjectRef.Resource
			}
			count[ev.Verb+" "+res]++
			if ev.Verb == "watch" || ev.Verb == "list" || res == "configmaps" {
				t.Errorf("aggregated server made %s %s (%s)", ev.Verb, res, ev.RequestURI)
			}
		}
		t.Logf("requests of %s in the audit log: %v", serverUser, count)
		// Through the front proxy (request-header authentication) there
		// is no token to review: SubjectAccessReview only. The direct
		// bearer-token call above caused the TokenReview.
		if count["create subjectaccessreviews"] == 0 || count["create tokenreviews"] == 0 {
			t.Errorf("expected delegated SubjectAccessReview and TokenReview calls, got %v", count)
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
