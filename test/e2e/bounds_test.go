package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestRestorePlansAreBoundedAndTellNothingHidden: plans made through the
// restore API of a sink recording a real control plane, by eve, who may
// read ConfigMaps and the Namespace e2e-bd but not its Secrets. A plan
// covers only what she may read and names nothing else, and the lists of
// a plan request are bounded before anything is read.
func TestRestorePlansAreBoundedAndTellNothingHidden(t *testing.T) {
	w := startRestoreWorld(t)
	ctx := context.Background()
	const ns = "e2e-bd"
	w.namespace(t, ns)
	// eve may read the Namespace object (authorized in itself).
	if _, err := w.admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-namespace"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "eve-reads-namespace"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-namespace"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "eve"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "visible"},
		Data: map[string]string{"v": "alice"}}, metav1.CreateOptions{}))(t)
	ok(alice.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aaa-hidden"},
		StringData: map[string]string{"k": "alice"}}, metav1.CreateOptions{}))(t)
	w.waitChanges(t, ns, "visible", 1)
	w.waitSecret(t, ns, "aaa-hidden", 1)
	at := time.Now().UTC()
	time.Sleep(1100 * time.Millisecond) // after at, in another second
	since := time.Now().UTC()
	ok(bob.CoreV1().ConfigMaps(ns).Patch(ctx, "visible", types.MergePatchType, []byte(`{"data":{"v":"bob"}}`), metav1.PatchOptions{}))(t)
	ok(bob.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aaa-bobs"},
		StringData: map[string]string{"k": "bob"}}, metav1.CreateOptions{}))(t)
	w.waitChanges(t, ns, "visible", 2)
	w.waitSecret(t, ns, "aaa-bobs", 1)
	eventually(t, 15*time.Second, "eve may get the Namespace "+ns, func() error {
		if code, body := w.call(t, "eve", http.MethodGet, "/api/v1/clusters/e2e/history?resource=namespaces&namespace=&name="+ns, nil); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})

	plans := "/api/v1/clusters/e2e/restore-plans"
	tooMany := func(n int, gr func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = gr(i)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		req   map[string]any
		code  int
		steps string // a step of the plan, "action name"
		msg   string // in the error
	}{
		{"an as-of plan covers only the resources the caller may list and read",
			map[string]any{"kind": "as-of", "namespaces": []string{ns}, "at": at}, http.StatusCreated, "update visible", ""},
		{"an undo plan covers only the objects the caller may read",
			map[string]any{"kind": "undo", "user": "bob", "since": since}, http.StatusCreated, "update visible", ""},
		{"an undo plan in a namespace covers only the objects the caller may read",
			map[string]any{"kind": "undo", "user": "bob", "since": since, "namespaces": []string{ns}}, http.StatusCreated, "update visible", ""},
		{"a resource the caller names and may not list is refused as the request names it",
			map[string]any{"kind": "as-of", "namespaces": []string{ns}, "at": at, "resources": []map[string]string{{"group": "", "resource": "secrets"}}},
			http.StatusForbidden, "", `user \"eve\" cannot list secrets in the namespace \"e2e-bd\"`},
		{"resources are bounded",
			map[string]any{"kind": "as-of", "namespaces": []string{ns}, "at": at, "resources": tooMany(51, func(i int) any {
				return map[string]string{"group": "", "resource": fmt.Sprintf("r%d", i)}
			})}, http.StatusBadRequest, "", "51 resources in one plan, more than 50"},
		{"namespaces of an undo are bounded",
			map[string]any{"kind": "undo", "user": "bob", "since": since, "namespaces": tooMany(101, func(i int) any { return fmt.Sprintf("ns-%d", i) })},
			http.StatusBadRequest, "", "101 namespaces in one plan, more than 100"},
		{"names are bounded",
			map[string]any{"kind": "undo", "user": "bob", "since": since, "names": tooMany(2001, func(i int) any { return fmt.Sprintf("n-%d", i) })},
			http.StatusBadRequest, "", "2001 names in one plan, more than 2000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := w.call(t, "eve", http.MethodPost, plans, tt.req)
			short := string(body[:min(len(body), 400)])
			// The Secrets' names, not a prefix: a random uid may hold "aaa-".
			if strings.Contains(string(body), "aaa-hidden") || strings.Contains(string(body), "aaa-bobs") ||
				(tt.code != http.StatusForbidden && strings.Contains(string(body), "secret")) {
				t.Errorf("the answer names a Secret eve may not read: %s", body)
			}
			if code != tt.code {
				t.Fatalf("POST %s as eve = %d %s, want %d", plans, code, short, tt.code)
			}
			if tt.msg != "" && !strings.Contains(string(body), tt.msg) {
				t.Errorf("POST %s as eve = %s, want %q", plans, short, tt.msg)
			}
			if tt.code != http.StatusCreated {
				return
			}
			var plan restore.Plan
			if err := json.Unmarshal(body, &plan); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, st := range plan.Steps {
				got = append(got, st.Action+" "+st.Object.Name)
				if st.Object.Resource == "secrets" {
					t.Errorf("the plan has a step for a Secret eve may not read: %+v", st)
				}
			}
			if !slices.Contains(got, tt.steps) {
				t.Errorf("plan steps %q, want %q among them", got, tt.steps)
			}
		})
	}
}

// waitSecret waits until n changes of a Secret are recorded.
func (w *restoreWorld) waitSecret(t *testing.T, ns, name string, n int) {
	t.Helper()
	var page history.Page[history.Version]
	w.eventuallyGet(t, controlplane.AdminUser, "/api/v1/clusters/e2e/history?resource=secrets&namespace="+ns+"&name="+name, &page, func() error {
		if page.Items = changesOnly(page.Items); len(page.Items) != n {
			return fmt.Errorf("%d changes recorded, want %d", len(page.Items), n)
		}
		return nil
	})
}
