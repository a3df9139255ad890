package shipcheck

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The rights only the restore API may hold: whoever has them can act as
// any user (impersonation) or probe the cluster's authentication and
// authorization on others' behalf.
var restoreRights = []struct{ group, resource, verb string }{
	{"authentication.k8s.io", "tokenreviews", "create"},
	{"authorization.k8s.io", "subjectaccessreviews", "create"},
	{"", "users", "impersonate"},
	{"", "groups", "impersonate"},
	{"", "serviceaccounts", "impersonate"},
	{"authentication.k8s.io", "userextras/example.com/ticket", "impersonate"},
	{"authentication.k8s.io", "uids", "impersonate"},
}

// ingestWrites are what the ingest role writes in the cluster; the API
// must not (it restores only as its callers).
var ingestWrites = []struct{ group, resource, verb string }{
	{"optionsrecord.io", "optionsrecordcontrollers", "create"},
	{"optionsrecord.io", "optionsrecordcontrollers", "update"},
	{"optionsrecord.io", "optionsrecordcontrollers/status", "update"},
	{"optionsrecord.io", "optionsrecordcontrollers/status", "patch"},
	{"coordination.k8s.io", "leases", "create"},
	{"coordination.k8s.io", "leases", "update"},
}

// TestRolesRunApart: in every shipped install the webhook (ingest) and the
// restore API run in different workloads, as `serve --roles=ingest` and
// `serve --roles=api`, under different ServiceAccounts; the rendered RBAC
// gives the ingest ServiceAccount none of the restore rights (no
// impersonation, TokenReview, SubjectAccessReview) and the API's all of
// them and no write of OptionsRecordControllers or Leases.
func TestRolesRunApart(t *testing.T) {
	t.Parallel()
	for _, v := range renderAll(t) {
		t.Run(v.name, func(t *testing.T) {
			ws := workloads(t, v.objects)
			ingest, api := -1, -1
			for i, w := range ws {
				for _, c := range w.template.Spec.Containers {
					for _, p := range c.Ports {
						switch {
						case p.Name == "webhook" && ingest >= 0:
							t.Errorf("webhook ports in %s and %s", ws[ingest].name, w.name)
						case p.Name == "webhook":
							ingest = i
						case p.Name == "api" && api >= 0:
							t.Errorf("API ports in %s and %s", ws[api].name, w.name)
						case p.Name == "api":
							api = i
						}
					}
				}
			}
			if ingest < 0 {
				t.Fatal("no workload serves the webhook")
			}
			if api < 0 && v.name != "deploy/base" {
				t.Fatal("no workload serves the restore API")
			}
			iw := ws[ingest]
			if got := roleArg(t, iw); got != "ingest" {
				t.Errorf("%s %s serves the webhook with --roles=%q, want ingest", iw.kind, iw.name, got)
			}
			if iw.template.Spec.ServiceAccountName != sinkName {
				t.Errorf("%s %s runs as ServiceAccount %q, want %s", iw.kind, iw.name, iw.template.Spec.ServiceAccountName, sinkName)
			}
			rules := boundRules(t, v.objects)
			for _, r := range restoreRights {
				if grants(rules[sinkName], r.group, r.resource, r.verb) {
					t.Errorf("the ingest ServiceAccount %s may %s %s.%s", sinkName, r.verb, r.resource, r.group)
				}
			}
			if api < 0 {
				return
			}
			aw := ws[api]
			if aw.name == iw.name {
				t.Fatalf("%s %s serves both the webhook and the restore API", aw.kind, aw.name)
			}
			if got := roleArg(t, aw); got != "api" {
				t.Errorf("%s %s serves the API with --roles=%q, want api", aw.kind, aw.name, got)
			}
			if sa := aw.template.Spec.ServiceAccountName; sa != apiName || sa == iw.template.Spec.ServiceAccountName {
				t.Errorf("%s %s runs as ServiceAccount %q, want its own, %s", aw.kind, aw.name, sa, apiName)
			}
			for _, r := range restoreRights {
				if !grants(rules[apiName], r.group, r.resource, r.verb) {
					t.Errorf("the API ServiceAccount %s may not %s %s.%s", apiName, r.verb, r.resource, r.group)
				}
			}
			for _, r := range ingestWrites {
				if grants(rules[apiName], r.group, r.resource, r.verb) {
					t.Errorf("the API ServiceAccount %s may %s %s.%s", apiName, r.verb, r.resource, r.group)
				}
			}
			// Each logs in to PostgreSQL as its own role (roles.sql): the
			// ingest credential cannot write the restores the API executes.
			is, as := databaseSecret(iw), databaseSecret(aw)
			if is != "options-record-database" || as != "options-record-database-api" {
				t.Errorf("database Secrets: ingest %q, API %q; want options-record-database and options-record-database-api", is, as)
			}
		})
	}
}

var generatedSuffix = regexp.MustCompile(`-[bcdfghkmnt2-9]{10}$`)

// databaseSecret names the Secret of the sink container's database URL.
func databaseSecret(w workload) string {
	for _, c := range w.template.Spec.Containers {
		for _, e := range c.Env {
			if c.Name == sinkContainer && e.Name == "OPTIONS_RECORD_DATABASE_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				// Without the hash suffix of a kustomize secretGenerator.
				return generatedSuffix.ReplaceAllString(e.ValueFrom.SecretKeyRef.Name, "")
			}
		}
	}
	return ""
}

// roleArg returns the value of --roles of the workload's sink container.
func roleArg(t *testing.T, w workload) string {
	t.Helper()
	for _, c := range w.template.Spec.Containers {
		if c.Name != sinkContainer {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--roles="); ok {
				return v
			}
		}
	}
	return ""
}

// boundRules returns, per ServiceAccount of the sink's namespace, the rules
// the rendered bindings give it (aggregated ClusterRoles resolved within
// the render).
func boundRules(t *testing.T, objs []*unstructured.Unstructured) map[string][]rbacv1.PolicyRule {
	t.Helper()
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	for _, u := range find(objs, "ClusterRole", "") {
		r := typed[rbacv1.ClusterRole](t, u)
		clusterRoles[r.Name] = r
	}
	roleRules := func(ref rbacv1.RoleRef) []rbacv1.PolicyRule {
		if ref.Kind == "Role" {
			if u := find(objs, "Role", ref.Name); len(u) == 1 {
				return typed[rbacv1.Role](t, u[0]).Rules
			}
			return nil
		}
		cr, ok := clusterRoles[ref.Name]
		if !ok {
			return nil
		}
		if cr.AggregationRule == nil {
			return cr.Rules
		}
		var out []rbacv1.PolicyRule
		for _, sel := range cr.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, other := range clusterRoles {
				if other.Name != cr.Name && s.Matches(labels.Set(other.Labels)) {
					out = append(out, other.Rules...)
				}
			}
		}
		return out
	}
	out := map[string][]rbacv1.PolicyRule{}
	add := func(ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		for _, s := range subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == sinkNamespace {
				out[s.Name] = append(out[s.Name], roleRules(ref)...)
			}
		}
	}
	for _, u := range find(objs, "ClusterRoleBinding", "") {
		b := typed[rbacv1.ClusterRoleBinding](t, u)
		add(b.RoleRef, b.Subjects)
	}
	for _, u := range find(objs, "RoleBinding", "") {
		b := typed[rbacv1.RoleBinding](t, u)
		add(b.RoleRef, b.Subjects)
	}
	return out
}

// grants says whether rules allow verb on resource (with its subresource,
// "configmaps/status") of group, for any object name.
func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range rules {
		if has(r.APIGroups, group) && has(r.Verbs, verb) && len(r.ResourceNames) == 0 && has(r.Resources, resource) {
			return true
		}
	}
	return false
}

// TestNetworkPolicies: every shipped install denies ingress in the namespace
// by default and opens each port of each pod to a named kind of client only
// (never to everyone); the demo PostgreSQL is reachable from the sink's pods
// (ingest and API) alone.
func TestNetworkPolicies(t *testing.T) {
	t.Parallel()
	for _, v := range renderAll(t) {
		t.Run(v.name, func(t *testing.T) {
			var pols []*networkingv1.NetworkPolicy
			for _, u := range find(v.objects, "NetworkPolicy", "") {
				pols = append(pols, typed[networkingv1.NetworkPolicy](t, u))
			}
			denyAll := slices.ContainsFunc(pols, func(p *networkingv1.NetworkPolicy) bool {
				return len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 &&
					slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) && len(p.Spec.Ingress) == 0
			})
			if !denyAll {
				t.Error("no NetworkPolicy denies ingress to every pod of the namespace by default")
			}
			ws := workloads(t, v.objects)
			for _, w := range ws {
				for _, c := range w.template.Spec.Containers {
					for _, port := range c.Ports {
						peers := admitted(t, pols, w, port)
						if len(peers) == 0 {
							t.Errorf("%s %s port %s: no NetworkPolicy admits it", w.kind, w.name, port.Name)
							continue
						}
						for _, p := range peers {
							if openToAll(p) {
								t.Errorf("%s %s port %s is open to every client: %+v", w.kind, w.name, port.Name, p)
							}
							if wholeNamespace(p) && (port.Name == "webhook" || port.Name == "aggregated") {
								t.Errorf("%s %s port %s admits every pod of a namespace, where only the kube-apiserver may come: %+v", w.kind, w.name, port.Name, p)
							}
						}
						if port.Name == "postgres" {
							checkDatabasePeers(t, w, peers, ws)
						}
					}
				}
			}
		})
	}
}

// admitted returns the peers of the ingress rules that admit a container
// port of w's pods.
func admitted(t *testing.T, pols []*networkingv1.NetworkPolicy, w workload, port corev1.ContainerPort) []networkingv1.NetworkPolicyPeer {
	t.Helper()
	var out []networkingv1.NetworkPolicyPeer
	for _, p := range pols {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(labels.Set(w.template.Labels)) {
			continue
		}
		for _, r := range p.Spec.Ingress {
			ok := len(r.Ports) == 0
			for _, rp := range r.Ports {
				ok = ok || rp.Port == nil ||
					(rp.Port.Type == intstr.String && rp.Port.StrVal == port.Name) ||
					(rp.Port.Type == intstr.Int && rp.Port.IntVal == port.ContainerPort)
			}
			if !ok {
				continue
			}
			if len(r.From) == 0 { // from everywhere
				out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}})
			}
			out = append(out, r.From...)
		}
	}
	return out
}

// wholeNamespace: every pod of the namespaces selected.
func wholeNamespace(p networkingv1.NetworkPolicyPeer) bool {
	return p.NamespaceSelector != nil && (p.PodSelector == nil || len(p.PodSelector.MatchLabels) == 0 && len(p.PodSelector.MatchExpressions) == 0)
}

// openToAll: every namespace's every pod, or every address.
func openToAll(p networkingv1.NetworkPolicyPeer) bool {
	empty := func(s *metav1.LabelSelector) bool {
		return s != nil && len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
	}
	if p.IPBlock != nil {
		return p.IPBlock.CIDR == "0.0.0.0/0" || p.IPBlock.CIDR == "::/0"
	}
	return empty(p.NamespaceSelector) && (p.PodSelector == nil || empty(p.PodSelector))
}

// checkDatabasePeers: the database port admits pods of its own namespace
// only, and of them the ingest and API workloads only.
func checkDatabasePeers(t *testing.T, db workload, peers []networkingv1.NetworkPolicyPeer, ws []workload) {
	t.Helper()
	for _, p := range peers {
		if p.IPBlock != nil || p.NamespaceSelector != nil || p.PodSelector == nil {
			t.Errorf("%s %s: the database admits clients beyond the sink's pods: %+v", db.kind, db.name, p)
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			sink := w.name == sinkName || w.name == apiName
			if sel.Matches(labels.Set(w.template.Labels)) != sink {
				t.Errorf("%s %s: admitting %s %s to the database is %v, want %v", db.kind, db.name, w.kind, w.name, !sink, sink)
			}
		}
	}
}

// TestNoPublishedPassword: no password of a rendered install is written in
// a file of the repository (the demo PostgreSQL's is generated per checkout
// by `make postgres-credentials`), and no container has one in its spec.
func TestNoPublishedPassword(t *testing.T) {
	t.Parallel()
	shipped := shippedText(t)
	for _, v := range renderAll(t) {
		t.Run(v.name, func(t *testing.T) {
			for _, u := range find(v.objects, "Secret", "") {
				s := typed[corev1.Secret](t, u)
				values := map[string]string{}
				for k, b := range s.Data {
					values[k] = string(b)
				}
				for k, str := range s.StringData {
					values[k] = str
				}
				for k, val := range values {
					for _, pw := range passwords(k, val) {
						if strings.Contains(shipped, pw) {
							t.Errorf("Secret %s key %s: the password %q is published in the repository", s.Name, k, pw)
						}
					}
				}
			}
			for _, w := range workloads(t, v.objects) {
				for _, c := range append(slices.Clone(w.template.Spec.InitContainers), w.template.Spec.Containers...) {
					for _, e := range c.Env {
						if e.Value != "" && len(passwords(e.Name, e.Value)) > 0 {
							t.Errorf("%s %s container %s: %s holds a password in the pod spec", w.kind, w.name, c.Name, e.Name)
						}
					}
				}
			}
		})
	}
}

// passwords returns the passwords a key/value holds: the value of a key
// named for a password, the password of a connection URL.
func passwords(key, value string) []string {
	if strings.Contains(strings.ToLower(key), "password") {
		return []string{value}
	}
	if u, err := url.Parse(strings.TrimSpace(value)); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			return []string{pw}
		}
	}
	return nil
}

// shippedText is every file of deploy/ and kind-config/ but generated
// credentials, concatenated.
func shippedText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{"deploy", "kind-config"} {
		err := filepath.WalkDir(filepath.Join(repoRoot(t), dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "credentials" {
					return filepath.SkipDir
				}
				return nil
			}
			data, err := os.ReadFile(p)
			b.Write(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
