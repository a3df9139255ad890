package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// aggService is the Service the APIService names: an ExternalName Service
// pointing at localhost. The e2e apiserver runs on loopback with no nodes
// and no kube-proxy, and Endpoints or EndpointSlices may not hold loopback
// addresses ("may not be in the loopback range"), so the aggregator's
// ClusterIP resolver, which maps an ExternalName Service to
// https://<externalName>:<port>, is what reaches a server on 127.0.0.1.
// The aggregator verifies the serving certificate against the APIService's
// caBundle for <service>.<namespace>.svc.
const aggService = "options-record-api"

// registerAggregated makes the kube-apiserver serve record.optionsrecord.io
// from the sink's aggregated API, and waits until discovery and OpenAPI v3
// (which kubectl explain and create use) show it.
func registerAggregated(t *testing.T, w *world) {
	t.Helper()
	_, port, err := net.SplitHostPort(w.aggAddr)
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.record.optionsrecord.io}
spec:
  group: record.optionsrecord.io
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {namespace: %[2]s, name: %[1]s, port: %[3]s}
  caBundle: %[4]s
`, aggService, sinkNS, port, base64.StdEncoding.EncodeToString(w.caPEM))
	kubectlOK(t, w, controlplane.AdminUser, []byte(manifest), "apply", "-f", "-")
	eventually(t, time.Minute, "the APIService is Available and its OpenAPI v3 aggregated", func() error {
		out, _, _ := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "apiservice", "v1alpha1.record.optionsrecord.io",
			"-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
		if out != "True" {
			return fmt.Errorf("Available=%q", out)
		}
		root, _, _ := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "--raw", "/openapi/v3")
		if !strings.Contains(root, "apis/record.optionsrecord.io/v1alpha1") {
			return fmt.Errorf("/openapi/v3 does not list the group yet")
		}
		return nil
	})
}

func kubectlOK(t *testing.T, w *world, user string, stdin []byte, args ...string) string {
	t.Helper()
	out, errOut, err := w.cp.Kubectl(t, user, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s as %s: %v\n%s%s", strings.Join(args, " "), user, err, out, errOut)
	}
	return out
}

// aggRBAC: alice (token) and agg-carol (client certificate) may read
// deletions in the shop namespace; alice edits its objects and may create
// restores, agg-carol only views them; agg-peeker may read deletions but
// not the objects (so sees none); bob edits the shop; eve has nothing of
// the group.
const aggRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: options-record-e2e-record-reader}
rules:
  - apiGroups: [record.optionsrecord.io]
    resources: [deletions, clusterdeletions, changes, clusterchanges, attempts, clusterattempts]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: record-readers, namespace: e2e-agg-shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-record-reader}
subjects:
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: agg-carol}
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: agg-peeker}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: options-record-e2e-record-restorer}
rules:
  - apiGroups: [record.optionsrecord.io]
    resources: [restores, restoreplans]
    verbs: [get, list, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: record-restorers, namespace: e2e-agg-shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-record-restorer}
subjects:
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewers, namespace: e2e-agg-shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
  - {kind: Group, apiGroup: rbac.authorization.k8s.io, name: cert-operators}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editors, namespace: e2e-agg-shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: bob}
  - {kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}
`

// aggScenario is the story TestAggregatedAPIOnARealControlPlane tells,
// step by step, on one control plane: the sink with its aggregated API, the
// shop namespace and its users, and what earlier steps left for later ones.
type aggScenario struct {
	w  *world
	ns string // the shop namespace, e2e-agg-shop
	// certKubeconfig is agg-carol's kubeconfig: a client certificate.
	certKubeconfig string
	// table is alice's first kubectl get deletions; deletion the name of
	// the deletion of bob's app-config in it, short its short name (the
	// table's NAME).
	table, deletion, short string
}

// TestAggregatedAPIOnARealControlPlane: the record through the
// kube-apiserver, with plain kubectl and the credentials users already
// have, governed by the cluster's RBAC. The steps run in order: each may
// use what the ones before it wrote.
func TestAggregatedAPIOnARealControlPlane(t *testing.T) {
	s := newAggScenario(t)
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"kubectl get deletions names who deleted what, in a table", s.deletionsTable},
		{"-o yaml of a deletion gives the prior state", s.deletionYAML},
		{"a client-certificate user reaches the record with the kubeconfig they have", s.certificateUser},
		{"a user without rights on the group is refused by the kube-apiserver", s.userWithoutRights},
		{"a user who may not read the objects sees none of their deletions", s.peekerSeesNoDeletion},
		{"field selectors narrow and unknown ones are refused", s.fieldSelectors},
		{"both front doors give the same answers: one layer behind them", s.bothDoorsAgree},
		{"kubectl get changes lists what happened to an object, and -o yaml its state", s.changesOfAnObject},
		{"a restore created with kubectl brings the object back, as its creator", s.restoreWithKubectl},
		{"an undo plan and an as-of plan run through kubectl", s.undoAndAsOfPlans},
		{"kubectl pages with limit and continue", s.pagesDeletions},
		{"cluster-scoped deletions are reachable: a namespace", s.clusterScopedDeletions},
		{"kubectl get deletions -A narrows by a metadata.namespace field selector", s.allNamespacesNarrowed},
		{"a deleted ClusterRole is put back by a ClusterRestore created with kubectl", s.clusterRestoreOfARole},
		{"kubectl get change -o yaml of an update gives the state before, the diff and a clean manifest", s.changeDetail},
		{"kubectl get attempts shows denied and failed writes to who may get the object", s.attempts},
		{"a Restore of a Secret recorded in clear tells no value, nor does the audit log of its create", s.secretRestoreTellsNoValue},
		{"a restore impersonates the caller's uid, groups and extras", s.restoreImpersonatesTheCaller},
		{"kubectl pages restores and plans", s.pagesRestoresAndPlans},
		{"the aggregated port serves the kube-apiserver's front proxy only", s.frontProxyOnly},
		{"the sink, aggregated API included, never watches", s.sinkNeverWatches},
	} {
		t.Run(step.name, step.run)
	}
}

// newAggScenario starts the sink with its aggregated API registered, the
// shop namespace and its RBAC, and bob's create and delete of app-config,
// which alice sees.
func newAggScenario(t *testing.T) *aggScenario {
	w := startWorldWith(t, worldOptions{aggregated: true,
		users: []controlplane.User{{Name: "agg-peeker"}},
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	registerAggregated(t, w)
	s := &aggScenario{w: w, ns: "e2e-agg-shop"}
	s.ok(t, controlplane.AdminUser, nil, "create", "namespace", s.ns)
	s.ok(t, controlplane.AdminUser, []byte(aggRBAC), "apply", "-f", "-")
	s.certKubeconfig = w.cp.WriteKubeconfigAuth(t, "agg-carol", w.cp.ClientCertAuth(t, "agg-carol", []string{"cert-operators"}))

	// bob creates a ConfigMap, then deletes it.
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config","labels":{"app":"shop"}},"data":{"db":"postgres://shop","mode":"live"}}`
	s.ok(t, "bob", []byte(cm), "create", "-n", s.ns, "-f", "-")
	s.ok(t, "bob", nil, "delete", "-n", s.ns, "configmap", "app-config")
	eventually(t, time.Minute, "alice sees bob's deletion", func() error {
		out, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "deletions", "-n", s.ns)
		if err != nil {
			return fmt.Errorf("%v: %s", err, errOut)
		}
		if !strings.Contains(out, "app-config") {
			return fmt.Errorf("not yet:\n%s", out)
		}
		s.table = out
		return nil
	})
	s.deletion = strings.TrimSpace(s.ok(t, "alice", nil, "get", "deletions", "-n", s.ns,
		"--field-selector", "object.name=app-config", "-o", "jsonpath={.items[0].metadata.name}"))
	row := strings.Fields(strings.Split(strings.TrimSpace(s.table), "\n")[len(strings.Split(strings.TrimSpace(s.table), "\n"))-1])
	s.short = row[len(row)-1]
	if !strings.HasPrefix(s.short, "app-config-") || len(s.short) != len("app-config-")+8 || !strings.HasSuffix(s.deletion, s.short[len("app-config-"):]+s.deletion[len(s.deletion)-56:]) {
		t.Fatalf("short name %q of %q: want app-config-<the first 8 digits of its key>", s.short, s.deletion)
	}
	return s
}

// ok runs kubectl as user and fails the test if kubectl fails.
func (s *aggScenario) ok(t *testing.T, user string, stdin []byte, args ...string) string {
	t.Helper()
	return kubectlOK(t, s.w, user, stdin, args...)
}

// kubectl runs kubectl as user.
func (s *aggScenario) kubectl(t *testing.T, user string, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return s.w.cp.Kubectl(t, user, stdin, args...)
}

// decodeYAML decodes kubectl's -o yaml into v, or fails the test.
func decodeYAML(t *testing.T, out string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
}

func (s *aggScenario) deletionsTable(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(s.table), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one row:\n%s", s.table)
	}
	header := strings.Fields(lines[0])
	want := []string{"RESOURCE", "OBJECT", "USER", "AS", "DELETED", "INITIATED-BY", "NAME"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("header %v, want %v", header, want)
	}
	// The object, who, when first; the short name last; the row fits a
	// 120-column terminal.
	row := strings.Fields(lines[1])
	if len(row) < 5 || row[0] != "configmaps" || row[1] != "app-config" || row[2] != "bob" || row[len(row)-1] != s.short {
		t.Errorf("row %v: want configmaps app-config bob ... %s", row, s.short)
	}
	for _, l := range lines {
		if len(l) > 120 {
			t.Errorf("a line of %d columns, want at most 120:\n%s", len(l), s.table)
		}
	}
	// -o wide keeps the long name.
	if wide := s.ok(t, "alice", nil, "get", "deletions", "-n", s.ns, "-o", "wide"); !strings.Contains(wide, s.deletion) {
		t.Errorf("-o wide has no long name %s:\n%s", s.deletion, wide)
	}
}

func (s *aggScenario) deletionYAML(t *testing.T) {
	var d struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name, Namespace string
		} `json:"metadata"`
		Object struct {
			Resource, Name, Namespace string
		} `json:"object"`
		Verb  string `json:"verb"`
		Actor struct {
			Username string `json:"username"`
		} `json:"actor"`
		StateVersion string         `json:"stateVersion"`
		LastState    map[string]any `json:"lastState"`
	}
	// By its short name: the same deletion, named by its long name.
	decodeYAML(t, s.ok(t, "alice", nil, "get", "deletion", s.short, "-n", s.ns, "-o", "yaml"), &d)
	if d.APIVersion != "record.optionsrecord.io/v1alpha1" || d.Kind != "Deletion" || d.Metadata.Name != s.deletion || d.Metadata.Namespace != s.ns {
		t.Errorf("type or metadata: %+v", d)
	}
	if d.Object.Resource != "configmaps" || d.Object.Name != "app-config" || d.Object.Namespace != s.ns || d.Verb != "delete" || d.Actor.Username != "bob" {
		t.Errorf("record: %+v", d)
	}
	data, _ := d.LastState["data"].(map[string]any)
	if d.StateVersion == "" || d.LastState["kind"] != "ConfigMap" || data["db"] != "postgres://shop" || data["mode"] != "live" {
		t.Errorf("last state: %q %v", d.StateVersion, d.LastState)
	}
}

func (s *aggScenario) certificateUser(t *testing.T) {
	out, errOut, err := s.w.cp.KubectlConfig(t, s.certKubeconfig, nil, "get", "deletions", "-n", s.ns, "-o", "name")
	if err != nil || strings.TrimSpace(out) != "deletion.record.optionsrecord.io/"+s.deletion {
		t.Errorf("%v: %q %s", err, out, errOut)
	}
}

func (s *aggScenario) userWithoutRights(t *testing.T) {
	out, errOut, err := s.kubectl(t, "eve", nil, "get", "deletions", "-n", s.ns)
	if err == nil || !strings.Contains(errOut, `cannot list resource "deletions" in API group "record.optionsrecord.io"`) {
		t.Errorf("eve: %v %q %s", err, out, errOut)
	}
}

func (s *aggScenario) peekerSeesNoDeletion(t *testing.T) {
	out, errOut, err := s.kubectl(t, "agg-peeker", nil, "get", "deletions", "-n", s.ns, "-o", "name")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("list: %v %q %s", err, out, errOut)
	}
	_, errOut, err = s.kubectl(t, "agg-peeker", nil, "get", "deletion", s.deletion, "-n", s.ns)
	if err == nil || !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
		t.Errorf("get: %v %s", err, errOut)
	}
	if strings.Contains(errOut, "app-config") || strings.Contains(errOut, "configmaps") {
		t.Errorf("the refusal names the hidden object: %s", errOut)
	}
	// By short name, or the digits alone: not found either, naming nothing.
	for _, name := range []string{s.short, s.short[len("app-config-"):]} {
		_, errOut, err = s.kubectl(t, "agg-peeker", nil, "get", "deletion", name, "-n", s.ns)
		if err == nil || !strings.Contains(errOut, "NotFound") || strings.Contains(errOut, "configmaps") || strings.Contains(errOut, s.deletion[:8]) {
			t.Errorf("get %s: %v %s", name, err, errOut)
		}
	}
}

func (s *aggScenario) fieldSelectors(t *testing.T) {
	if out := s.ok(t, "alice", nil, "get", "deletions", "-n", s.ns, "--field-selector", "actor.username=alice", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("deletions by alice: %q", out)
	}
	if out := s.ok(t, "alice", nil, "get", "deletions", "-n", s.ns, "--field-selector", "actor.username=bob,object.resource=configmaps,since=-1h", "-o", "name"); strings.TrimSpace(out) == "" {
		t.Error("deletions by bob within the hour: none")
	}
	_, errOut, err := s.kubectl(t, "alice", nil, "get", "deletions", "-n", s.ns, "--field-selector", "spec.verb=delete")
	if err == nil || !strings.Contains(errOut, "not supported") {
		t.Errorf("unknown field: %v %s", err, errOut)
	}
}

func (s *aggScenario) bothDoorsAgree(t *testing.T) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.w.caPEM)
	direct := &restoreWorld{world: s.w, apiURL: s.w.apiURL, client: &http.Client{Timeout: time.Minute,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
	for _, user := range []string{"alice", "agg-peeker"} {
		for _, res := range []string{"deletions", "changes"} {
			viaDirect := s.viaDirect(t, direct, user, res)
			out := s.ok(t, user, nil, "get", res, "-n", s.ns, "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.object.resource} {.object.name} {.verb} {.actor.username}{"\n"}{end}`)
			var viaKubectl []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if l != "" {
					viaKubectl = append(viaKubectl, strings.TrimSpace(l))
				}
			}
			if strings.Join(viaDirect, "\n") != strings.Join(viaKubectl, "\n") {
				t.Errorf("%s of %s: the direct API answers\n%s\nkubectl answers\n%s", res, user, strings.Join(viaDirect, "\n"), strings.Join(viaKubectl, "\n"))
			}
			if user == "alice" && len(viaDirect) == 0 || user == "agg-peeker" && len(viaDirect) != 0 {
				t.Errorf("%s of %s: %d items", res, user, len(viaDirect))
			}
		}
	}
}

// viaDirect lists res in the shop namespace through the direct API, as
// user, one "name resource object verb user" line per item.
func (s *aggScenario) viaDirect(t *testing.T, direct *restoreWorld, user, res string) []string {
	t.Helper()
	var page struct {
		Items []struct {
			UID, VersionKey, Resource, Name, Verb string
			Actor                                 *struct{ Username string }
		}
	}
	direct.getJSON(t, user, "/api/v1/clusters/e2e/"+res+"?namespace="+s.ns+"&limit=500", &page)
	var lines []string
	for _, it := range page.Items {
		by := ""
		if it.Actor != nil {
			by = it.Actor.Username
		}
		lines = append(lines, strings.Join([]string{it.UID + "." + it.VersionKey, it.Resource, it.Name, it.Verb, by}, " "))
	}
	return lines
}

func (s *aggScenario) changesOfAnObject(t *testing.T) {
	out := s.ok(t, "alice", nil, "get", "changes", "-n", s.ns, "--field-selector", "object.name=app-config",
		"-o", "jsonpath={range .items[*]}{.verb} {.actor.username} {.metadata.name}{\"\\n\"}{end}")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "delete bob ") || !strings.HasPrefix(lines[1], "create bob ") {
		t.Fatalf("changes of app-config, newest first:\n%s", out)
	}
	created := strings.Fields(lines[1])[2]
	var c struct {
		Kind  string         `json:"kind"`
		State map[string]any `json:"state"`
	}
	if err := yaml.Unmarshal([]byte(s.ok(t, "alice", nil, "get", "change", created, "-n", s.ns, "-o", "yaml")), &c); err != nil {
		t.Fatal(err)
	}
	if data, _ := c.State["data"].(map[string]any); c.Kind != "Change" || data["db"] != "postgres://shop" {
		t.Errorf("the create's state: %s %v", c.Kind, c.State)
	}
	if table := s.ok(t, "alice", nil, "get", "changes", "-n", s.ns); !strings.Contains(table, "VERB") || !strings.Contains(table, "app-config") {
		t.Errorf("kubectl get changes:\n%s", table)
	}
	if out, _, err := s.kubectl(t, "agg-peeker", nil, "get", "changes", "-n", s.ns, "-o", "name"); err == nil && strings.TrimSpace(out) != "" {
		t.Errorf("agg-peeker sees changes of objects it may not read: %s", out)
	}
}

func (s *aggScenario) pagesDeletions(t *testing.T) {
	for _, n := range []string{"a"} {
		s.ok(t, "bob", nil, "create", "configmap", "page-"+n, "-n", s.ns, "--from-literal=k=v")
		s.ok(t, "bob", nil, "delete", "configmap", "page-"+n, "-n", s.ns)
	}
	eventually(t, time.Minute, "three deletions (app-config, extra, page-a), one page each", func() error {
		out, errOut, err := s.kubectl(t, "alice", nil, "get", "deletions", "-n", s.ns, "--chunk-size=1", "-o", "name")
		if err != nil {
			return fmt.Errorf("%v: %s", err, errOut)
		}
		if n := len(strings.Fields(out)); n != 3 {
			return fmt.Errorf("%d deletions:\n%s", n, out)
		}
		return nil
	})
}

func (s *aggScenario) clusterScopedDeletions(t *testing.T) {
	s.ok(t, controlplane.AdminUser, nil, "create", "namespace", "e2e-agg-gone")
	s.ok(t, controlplane.AdminUser, nil, "delete", "namespace", "e2e-agg-gone", "--wait=false")
	eventually(t, time.Minute, "the namespace's deletion", func() error {
		out, errOut, err := s.kubectl(t, controlplane.AdminUser, nil, "get", "clusterdeletions",
			"--field-selector", "object.resource=namespaces,object.name=e2e-agg-gone", "-o", "jsonpath={.items[*].object.name}")
		if err != nil || strings.TrimSpace(out) != "e2e-agg-gone" {
			return fmt.Errorf("%v: %q %s", err, out, errOut)
		}
		return nil
	})
	if out := s.ok(t, controlplane.AdminUser, nil, "get", "deletions", "-A", "-o", "jsonpath={.items[*].object.resource}"); strings.Contains(out, "namespaces") {
		t.Errorf("a cluster-scoped deletion is listed as namespaced: %s", out)
	}
}

func (s *aggScenario) allNamespacesNarrowed(t *testing.T) {
	// A deletion in another namespace, which the selector leaves out.
	s.ok(t, controlplane.AdminUser, nil, "create", "namespace", "e2e-agg-other")
	s.ok(t, controlplane.AdminUser, nil, "create", "configmap", "elsewhere", "-n", "e2e-agg-other")
	s.ok(t, controlplane.AdminUser, nil, "delete", "configmap", "elsewhere", "-n", "e2e-agg-other")
	eventually(t, time.Minute, "the deletion in e2e-agg-other", func() error {
		out, errOut, err := s.kubectl(t, controlplane.AdminUser, nil, "get", "deletions", "-A", "-o", "jsonpath={.items[*].object.name}")
		if err != nil || !strings.Contains(out, "elsewhere") {
			return fmt.Errorf("%v: %q %s", err, out, errOut)
		}
		return nil
	})
	out := s.ok(t, controlplane.AdminUser, nil, "get", "deletions", "-A", "--field-selector", "metadata.namespace="+s.ns,
		"-o", "jsonpath={range .items[*]}{.metadata.namespace} {.object.name}{\"\\n\"}{end}")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.Contains(out, s.ns+" app-config") {
		t.Fatalf("deletions -A in %s: %q", s.ns, out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, s.ns+" ") {
			t.Errorf("deletions -A --field-selector metadata.namespace=%s lists %q", s.ns, l)
		}
	}
}
