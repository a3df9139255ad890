package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
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

// TestAggregatedAPIOnARealControlPlane: the record through the
// kube-apiserver, with plain kubectl and the credentials users already
// have, governed by the cluster's RBAC.
func TestAggregatedAPIOnARealControlPlane(t *testing.T) {
	w := startWorldWith(t, worldOptions{aggregated: true,
		users: []controlplane.User{{Name: "agg-peeker"}},
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	registerAggregated(t, w)
	const ns = "e2e-agg-shop"
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", ns)
	kubectlOK(t, w, controlplane.AdminUser, []byte(aggRBAC), "apply", "-f", "-")
	certKubeconfig := w.cp.WriteKubeconfigAuth(t, "agg-carol", w.cp.ClientCertAuth(t, "agg-carol", []string{"cert-operators"}))

	// bob creates a ConfigMap, then deletes it.
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config","labels":{"app":"shop"}},"data":{"db":"postgres://shop","mode":"live"}}`
	kubectlOK(t, w, "bob", []byte(cm), "create", "-n", ns, "-f", "-")
	kubectlOK(t, w, "bob", nil, "delete", "-n", ns, "configmap", "app-config")

	var table string
	eventually(t, time.Minute, "alice sees bob's deletion", func() error {
		out, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "deletions", "-n", ns)
		if err != nil {
			return fmt.Errorf("%v: %s", err, errOut)
		}
		if !strings.Contains(out, "app-config") {
			return fmt.Errorf("not yet:\n%s", out)
		}
		table = out
		return nil
	})

	t.Run("kubectl get deletions names who deleted what, in a table", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != 2 {
			t.Fatalf("want a header and one row:\n%s", table)
		}
		header := strings.Fields(lines[0])
		want := []string{"NAME", "RESOURCE", "OBJECT", "USER", "AS", "INITIATED-BY", "DELETED"}
		if strings.Join(header, " ") != strings.Join(want, " ") {
			t.Errorf("header %v, want %v", header, want)
		}
		row := strings.Fields(lines[1])
		if len(row) < 4 || row[1] != "configmaps" || row[2] != "app-config" || row[3] != "bob" {
			t.Errorf("row %v: want configmaps app-config bob", row)
		}
	})

	name := strings.TrimSpace(kubectlOK(t, w, "alice", nil, "get", "deletions", "-n", ns,
		"--field-selector", "object.name=app-config", "-o", "jsonpath={.items[0].metadata.name}"))

	t.Run("-o yaml of a deletion gives the prior state", func(t *testing.T) {
		out := kubectlOK(t, w, "alice", nil, "get", "deletion", name, "-n", ns, "-o", "yaml")
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
		if err := yaml.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if d.APIVersion != "record.optionsrecord.io/v1alpha1" || d.Kind != "Deletion" || d.Metadata.Name != name || d.Metadata.Namespace != ns {
			t.Errorf("type or metadata: %+v", d)
		}
		if d.Object.Resource != "configmaps" || d.Object.Name != "app-config" || d.Object.Namespace != ns || d.Verb != "delete" || d.Actor.Username != "bob" {
			t.Errorf("record: %+v", d)
		}
		data, _ := d.LastState["data"].(map[string]any)
		if d.StateVersion == "" || d.LastState["kind"] != "ConfigMap" || data["db"] != "postgres://shop" || data["mode"] != "live" {
			t.Errorf("last state: %q %v", d.StateVersion, d.LastState)
		}
	})

	t.Run("a client-certificate user reaches the record with the kubeconfig they have", func(t *testing.T) {
		out, errOut, err := w.cp.KubectlConfig(t, certKubeconfig, nil, "get", "deletions", "-n", ns, "-o", "name")
		if err != nil || strings.TrimSpace(out) != "deletion.record.optionsrecord.io/"+name {
			t.Errorf("%v: %q %s", err, out, errOut)
		}
	})

	t.Run("a user without rights on the group is refused by the kube-apiserver", func(t *testing.T) {
		out, errOut, err := w.cp.Kubectl(t, "eve", nil, "get", "deletions", "-n", ns)
		if err == nil || !strings.Contains(errOut, `cannot list resource "deletions" in API group "record.optionsrecord.io"`) {
			t.Errorf("eve: %v %q %s", err, out, errOut)
		}
	})

	t.Run("a user who may not read the objects sees none of their deletions", func(t *testing.T) {
		out, errOut, err := w.cp.Kubectl(t, "agg-peeker", nil, "get", "deletions", "-n", ns, "-o", "name")
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("list: %v %q %s", err, out, errOut)
		}
		_, errOut, err = w.cp.Kubectl(t, "agg-peeker", nil, "get", "deletion", name, "-n", ns)
		if err == nil || !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
			t.Errorf("get: %v %s", err, errOut)
		}
		if strings.Contains(errOut, "app-config") || strings.Contains(errOut, "configmaps") {
			t.Errorf("the refusal names the hidden object: %s", errOut)
		}
	})

	t.Run("field selectors narrow and unknown ones are refused", func(t *testing.T) {
		if out := kubectlOK(t, w, "alice", nil, "get", "deletions", "-n", ns, "--field-selector", "actor.username=alice", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("deletions by alice: %q", out)
		}
		if out := kubectlOK(t, w, "alice", nil, "get", "deletions", "-n", ns, "--field-selector", "actor.username=bob,object.resource=configmaps,since=-1h", "-o", "name"); strings.TrimSpace(out) == "" {
			t.Error("deletions by bob within the hour: none")
		}
		_, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "deletions", "-n", ns, "--field-selector", "spec.verb=delete")
		if err == nil || !strings.Contains(errOut, "not supported") {
			t.Errorf("unknown field: %v %s", err, errOut)
		}
	})

	t.Run("both front doors give the same answers: one layer behind them", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(w.caPEM)
		direct := &restoreWorld{world: w, apiURL: w.apiURL, client: &http.Client{Timeout: time.Minute,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
		for _, user := range []string{"alice", "agg-peeker"} {
			for _, res := range []string{"deletions", "changes"} {
				var page struct {
					Items []struct {
						UID, VersionKey, Resource, Name, Verb string
						Actor                                 *struct{ Username string }
					}
				}
				direct.getJSON(t, user, "/api/v1/clusters/e2e/"+res+"?namespace="+ns+"&limit=500", &page)
				var viaDirect []string
				for _, it := range page.Items {
					by := ""
					if it.Actor != nil {
						by = it.Actor.Username
					}
					viaDirect = append(viaDirect, strings.Join([]string{it.UID + "." + it.VersionKey, it.Resource, it.Name, it.Verb, by}, " "))
				}
				out := kubectlOK(t, w, user, nil, "get", res, "-n", ns, "-o",
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
	})

	t.Run("kubectl get changes lists what happened to an object, and -o yaml its state", func(t *testing.T) {
		out := kubectlOK(t, w, "alice", nil, "get", "changes", "-n", ns, "--field-selector", "object.name=app-config",
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
		if err := yaml.Unmarshal([]byte(kubectlOK(t, w, "alice", nil, "get", "change", created, "-n", ns, "-o", "yaml")), &c); err != nil {
			t.Fatal(err)
		}
		if data, _ := c.State["data"].(map[string]any); c.Kind != "Change" || data["db"] != "postgres://shop" {
			t.Errorf("the create's state: %s %v", c.Kind, c.State)
		}
		if table := kubectlOK(t, w, "alice", nil, "get", "changes", "-n", ns); !strings.Contains(table, "VERB") || !strings.Contains(table, "app-config") {
			t.Errorf("kubectl get changes:\n%s", table)
		}
		if out, _, err := w.cp.Kubectl(t, "agg-peeker", nil, "get", "changes", "-n", ns, "-o", "name"); err == nil && strings.TrimSpace(out) != "" {
			t.Errorf("agg-peeker sees changes of objects it may not read: %s", out)
		}
	})

	t.Run("a restore created with kubectl brings the object back, as its creator", func(t *testing.T) {
		manifest := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"bring-back"},"spec":{"deletion":"` + name + `"}}`)
		var r struct {
			Metadata struct{ Name, UID string }
			Spec     struct{ Version string }
			Status   struct {
				Phase, Action, RestoreID, CreatedBy, Message, StateDigest string
				DryRun                                                    bool
				Object                                                    struct{ Resource, Name, UID string }
			}
		}
		decode := func(out string) {
			t.Helper()
			r.Status.DryRun = false
			if err := yaml.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
		}
		// A server-side dry run: nothing changes, nothing is kept.
		decode(kubectlOK(t, w, "alice", manifest, "create", "-n", ns, "-f", "-", "--dry-run=server", "-o", "yaml"))
		if r.Status.Phase != "Succeeded" || !r.Status.DryRun || r.Status.Action != "create" || r.Status.CreatedBy != "alice" {
			t.Errorf("dry run: %+v", r.Status)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "configmap", "app-config", "-n", ns); err == nil || !strings.Contains(errOut, "NotFound") {
			t.Errorf("the dry run created the ConfigMap: %v %s", err, errOut)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "restore", "bring-back", "-n", ns); err == nil || !strings.Contains(errOut, "NotFound") {
			t.Errorf("the dry run was kept: %v %s", err, errOut)
		}
		// For real, pinned to the state the dry run showed: another digest
		// is refused (409, nothing written); planDigest pins plans only.
		reviewed := r.Status.StateDigest
		if !strings.HasPrefix(reviewed, "sha256:") {
			t.Fatalf("the dry run answered no stateDigest: %+v", r.Status)
		}
		pinned := func(field, digest string) []byte {
			return []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"bring-back"},"spec":{"deletion":"` + name + `","` + field + `":"` + digest + `"}}`)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", pinned("stateDigest", "sha256:"+strings.Repeat("0", 64)), "create", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errOut, "Conflict") {
			t.Errorf("a restore pinned to another state: %v %s", err, errOut)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", pinned("planDigest", reviewed), "create", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errOut, "spec.planDigest") {
			t.Errorf("a restore of a deletion with planDigest: %v %s", err, errOut)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "configmap", "app-config", "-n", ns); err == nil || !strings.Contains(errOut, "NotFound") {
			t.Errorf("a refused restore created the ConfigMap: %v %s", err, errOut)
		}
		decode(kubectlOK(t, w, "alice", pinned("stateDigest", reviewed), "create", "-n", ns, "-f", "-", "-o", "yaml"))
		if r.Status.Phase != "Succeeded" || r.Status.DryRun || r.Status.Action != "create" || r.Status.Object.Name != "app-config" || r.Status.Object.UID == "" ||
			r.Status.StateDigest != reviewed {
			t.Fatalf("restore: %+v", r.Status)
		}
		live := kubectlOK(t, w, "alice", nil, "get", "configmap", "app-config", "-n", ns, "-o", "json")
		var cm struct {
			Metadata struct{ Labels map[string]string }
			Data     map[string]string
		}
		if err := json.Unmarshal([]byte(live), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["db"] != "postgres://shop" || cm.Data["mode"] != "live" || len(cm.Data) != 2 || cm.Metadata.Labels["app"] != "shop" {
			t.Errorf("the restored ConfigMap differs from its state before the deletion: %s", live)
		}
		// Its author reads it back; the name is taken.
		decode(kubectlOK(t, w, "alice", nil, "get", "restore", "bring-back", "-n", ns, "-o", "yaml"))
		if r.Status.Phase != "Succeeded" || r.Status.Action != "create" || r.Spec.Version == "" {
			t.Errorf("read back: %+v %+v", r.Spec, r.Status)
		}
		if out := kubectlOK(t, w, "alice", nil, "get", "restores", "-n", ns); !strings.Contains(out, "bring-back") || !strings.Contains(out, "Succeeded") {
			t.Errorf("kubectl get restores:\n%s", out)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", manifest, "create", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errOut, "AlreadyExists") && !strings.Contains(errOut, "already exists") {
			t.Errorf("a second restore of the same name: %v %s", err, errOut)
		}
		// The kube-apiserver's audit log names alice for the write, made by
		// the sink impersonating her.
		if got := impersonatedWrites(t, w, "configmaps", ns, "app-config"); !slices.Contains(got, "create by "+sinkUser+" as alice") {
			t.Errorf("the audit log's writes of app-config: %v", got)
		}
		// Without rights on restores, the kube-apiserver refuses.
		if _, errOut, err := w.cp.KubectlConfig(t, certKubeconfig, manifest, "create", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errOut, "cannot create resource \"restores\"") {
			t.Errorf("agg-carol created a restore: %v %s", err, errOut)
		}
	})

	t.Run("an undo plan and an as-of plan run through kubectl", func(t *testing.T) {
		// After the restore: a point in time, then bob breaks app-config and
		// adds an object.
		time.Sleep(200 * time.Millisecond)
		t0 := time.Now().UTC()
		time.Sleep(200 * time.Millisecond)
		kubectlOK(t, w, "bob", []byte(`{"data":{"mode":"broken"}}`), "patch", "configmap", "app-config", "-n", ns, "--type=merge", "--patch-file=/dev/stdin")
		kubectlOK(t, w, "bob", nil, "create", "configmap", "extra", "-n", ns, "--from-literal=k=v")
		eventually(t, time.Minute, "bob's changes recorded", func() error {
			out, _, err := w.cp.Kubectl(t, "alice", nil, "get", "changes", "-n", ns, "--field-selector", "actor.username=bob,since="+t0.Format(time.RFC3339Nano), "-o", "name")
			if n := len(strings.Fields(out)); err != nil || n != 2 {
				return fmt.Errorf("%d changes: %v", n, err)
			}
			return nil
		})
		mode := func() string {
			return kubectlOK(t, w, "alice", nil, "get", "configmap", "app-config", "-n", ns, "-o", "jsonpath={.data.mode}")
		}
		type planStatus struct {
			State string
			Steps []struct {
				Action, Result, Message, Reason string
				Object                          struct{ Resource, Name string }
			}
		}
		plan := func(manifest string) planStatus {
			t.Helper()
			var p struct{ Status planStatus }
			if err := yaml.Unmarshal([]byte(kubectlOK(t, w, "alice", []byte(manifest), "create", "-n", ns, "-f", "-", "-o", "yaml")), &p); err != nil {
				t.Fatal(err)
			}
			return p.Status
		}
		run := func(name, planName string, dry bool) (phase string, steps []map[string]any) {
			t.Helper()
			args := []string{"create", "-n", ns, "-f", "-", "-o", "yaml"}
			if dry {
				args = append(args, "--dry-run=server")
			}
			var r struct {
				Status struct {
					Phase string
					Steps []map[string]any
				}
			}
			digest := ""
			if !dry {
				// What was reviewed: the plan's digest, carried by the real run.
				digest = kubectlOK(t, w, "alice", nil, "get", "restoreplan", planName, "-n", ns, "-o", "jsonpath={.status.planDigest}")
			}
			out := kubectlOK(t, w, "alice", []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"`+name+`"},"spec":{"plan":"`+planName+`","planDigest":"`+digest+`"}}`), args...)
			if err := yaml.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			return r.Status.Phase, r.Status.Steps
		}

		// Undo what bob did since t0: app-config back, extra deleted.
		undo := plan(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan","metadata":{"name":"undo-bob"},"spec":{"kind":"undo","user":"bob","since":"` + t0.Format(time.RFC3339) + `"}}`)
		actions := map[string]string{}
		for _, st := range undo.Steps {
			actions[st.Object.Name] = st.Action
		}
		if undo.State != "Planned" || actions["app-config"] != "update" || actions["extra"] != "delete" {
			t.Fatalf("undo plan: %+v", undo)
		}
		if phase, steps := run("undo-bob-dry", "undo-bob", true); phase != "Succeeded" || len(steps) != 2 {
			t.Errorf("dry run of the undo plan: %s %v", phase, steps)
		}
		if m := mode(); m != "broken" {
			t.Errorf("the dry run changed app-config: mode %q", m)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"undo-bob-nodigest"},"spec":{"plan":"undo-bob"}}`),
			"create", "-n", ns, "-f", "-"); err == nil || !strings.Contains(errOut, "spec.planDigest") {
			t.Errorf("a real run without the plan's digest: %v %s", err, errOut)
		}
		if phase, steps := run("undo-bob-run", "undo-bob", false); phase != "Succeeded" || len(steps) != 2 {
			t.Fatalf("the undo plan: %s %v", phase, steps)
		}
		if m := mode(); m != "live" {
			t.Errorf("after the undo, mode %q, want live", m)
		}
		if _, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "configmap", "extra", "-n", ns); err == nil || !strings.Contains(errOut, "NotFound") {
			t.Errorf("extra survived the undo: %v %s", err, errOut)
		}
		if st := kubectlOK(t, w, "alice", nil, "get", "restoreplan", "undo-bob", "-n", ns, "-o", "jsonpath={.status.state}"); st != "Succeeded" {
			t.Errorf("the plan's state after its run: %q", st)
		}
		if sp := kubectlOK(t, w, "alice", nil, "get", "restore", "undo-bob-run", "-n", ns, "-o", "jsonpath={.spec.plan} {.status.phase}"); sp != "undo-bob Succeeded" {
			t.Errorf("the run read back: %q", sp)
		}
		if phase, _ := run("undo-bob-again", "undo-bob", false); phase != "Refused" {
			t.Errorf("a second run of the plan: %s, want Refused", phase)
		}

		// As of t0 again (bob breaks it once more): back to live.
		kubectlOK(t, w, "bob", []byte(`{"data":{"mode":"broken-again"}}`), "patch", "configmap", "app-config", "-n", ns, "--type=merge", "--patch-file=/dev/stdin")
		eventually(t, time.Minute, "the second break recorded", func() error {
			out, _, _ := w.cp.Kubectl(t, "alice", nil, "get", "changes", "-n", ns, "--field-selector", "object.name=app-config,verb=patch", "-o", "name")
			if n := len(strings.Fields(out)); n != 2 {
				return fmt.Errorf("%d patches", n)
			}
			return nil
		})
		asOf := plan(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan","metadata":{"name":"as-of-t0"},"spec":{"kind":"as-of","at":"` + t0.Format(time.RFC3339Nano) + `","resources":[{"resource":"configmaps"}]}}`)
		if asOf.State != "Planned" {
			t.Fatalf("as-of plan: %+v", asOf)
		}
		if phase, _ := run("as-of-t0-run", "as-of-t0", false); phase != "Succeeded" {
			t.Fatalf("the as-of plan: %s", phase)
		}
		if m := mode(); m != "live" {
			t.Errorf("after the as-of plan, mode %q, want live", m)
		}
		if out := kubectlOK(t, w, "alice", nil, "get", "restoreplans", "-n", ns); !strings.Contains(out, "undo-bob") || !strings.Contains(out, "as-of-t0") {
			t.Errorf("kubectl get restoreplans:\n%s", out)
		}
	})

	t.Run("kubectl pages with limit and continue", func(t *testing.T) {
		for _, n := range []string{"a"} {
			kubectlOK(t, w, "bob", nil, "create", "configmap", "page-"+n, "-n", ns, "--from-literal=k=v")
			kubectlOK(t, w, "bob", nil, "delete", "configmap", "page-"+n, "-n", ns)
		}
		eventually(t, time.Minute, "three deletions (app-config, extra, page-a), one page each", func() error {
			out, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "deletions", "-n", ns, "--chunk-size=1", "-o", "name")
			if err != nil {
				return fmt.Errorf("%v: %s", err, errOut)
			}
			if n := len(strings.Fields(out)); n != 3 {
				return fmt.Errorf("%d deletions:\n%s", n, out)
			}
			return nil
		})
	})

	t.Run("cluster-scoped deletions are reachable: a namespace", func(t *testing.T) {
		kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", "e2e-agg-gone")
		kubectlOK(t, w, controlplane.AdminUser, nil, "delete", "namespace", "e2e-agg-gone", "--wait=false")
		eventually(t, time.Minute, "the namespace's deletion", func() error {
			out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "clusterdeletions",
				"--field-selector", "object.resource=namespaces,object.name=e2e-agg-gone", "-o", "jsonpath={.items[*].object.name}")
			if err != nil || strings.TrimSpace(out) != "e2e-agg-gone" {
				return fmt.Errorf("%v: %q %s", err, out, errOut)
			}
			return nil
		})
		if out := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "deletions", "-A", "-o", "jsonpath={.items[*].object.resource}"); strings.Contains(out, "namespaces") {
			t.Errorf("a cluster-scoped deletion is listed as namespaced: %s", out)
		}
	})

	t.Run("kubectl get deletions -A narrows by a metadata.namespace field selector", func(t *testing.T) {
		// A deletion in another namespace, which the selector leaves out.
		kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", "e2e-agg-other")
		kubectlOK(t, w, controlplane.AdminUser, nil, "create", "configmap", "elsewhere", "-n", "e2e-agg-other")
		kubectlOK(t, w, controlplane.AdminUser, nil, "delete", "configmap", "elsewhere", "-n", "e2e-agg-other")
		eventually(t, time.Minute, "the deletion in e2e-agg-other", func() error {
			out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "deletions", "-A", "-o", "jsonpath={.items[*].object.name}")
			if err != nil || !strings.Contains(out, "elsewhere") {
				return fmt.Errorf("%v: %q %s", err, out, errOut)
			}
			return nil
		})
		out := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "deletions", "-A", "--field-selector", "metadata.namespace="+ns,
			"-o", "jsonpath={range .items[*]}{.metadata.namespace} {.object.name}{\"\\n\"}{end}")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) == 0 || !strings.Contains(out, ns+" app-config") {
			t.Fatalf("deletions -A in %s: %q", ns, out)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, ns+" ") {
				t.Errorf("deletions -A --field-selector metadata.namespace=%s lists %q", ns, l)
			}
		}
	})

	t.Run("a deleted ClusterRole is put back by a ClusterRestore created with kubectl", func(t *testing.T) {
		const role = "e2e-agg-role"
		kubectlOK(t, w, controlplane.AdminUser, []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
			"metadata":{"name":"`+role+`","labels":{"team":"shop"}},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`),
			"create", "-f", "-")
		// A rule for ClusterRoles: its baseline records the role's state.
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"agg-cluster-roles","namespace":"options-record"},"spec":{"resources":[{"group":"rbac.authorization.k8s.io","resources":["clusterroles"]}]}}`), "")
		eventually(t, time.Minute, "the baseline of the ClusterRole", func() error {
			if w.count(t, `SELECT count(*) FROM object_versions WHERE resource = 'clusterroles' AND name = '`+role+`'`) == 0 {
				return errors.New("not recorded yet")
			}
			return nil
		})
		kubectlOK(t, w, controlplane.AdminUser, nil, "delete", "clusterrole", role)
		var deletion string
		eventually(t, time.Minute, "the ClusterRole's deletion", func() error {
			out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "clusterdeletions",
				"--field-selector", "object.resource=clusterroles,object.name="+role, "-o", "jsonpath={.items[*].metadata.name}")
			if deletion = strings.TrimSpace(out); err != nil || deletion == "" || strings.Contains(deletion, " ") {
				return fmt.Errorf("%v: %q %s", err, out, errOut)
			}
			return nil
		})
		manifest := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
			"metadata":{"name":"bring-back-role"},"spec":{"deletion":"` + deletion + `"}}`)
		// Alice may restore in her namespace only: the kube-apiserver
		// refuses her a cluster restore.
		if _, errOut, err := w.cp.Kubectl(t, "alice", manifest, "create", "-f", "-"); err == nil || !strings.Contains(errOut, "forbidden") {
			t.Errorf("alice created a cluster restore: %v %s", err, errOut)
		}
		var r struct {
			Status struct {
				Phase, Action, CreatedBy string
				DryRun                   bool
				Object                   struct{ Resource, Name, Namespace string }
			}
		}
		decode := func(out string) {
			t.Helper()
			r.Status.DryRun = false
			if err := yaml.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
		}
		decode(kubectlOK(t, w, controlplane.AdminUser, manifest, "create", "-f", "-", "--dry-run=server", "-o", "yaml"))
		if r.Status.Phase != "Succeeded" || !r.Status.DryRun || r.Status.Action != "create" {
			t.Errorf("dry run: %+v", r.Status)
		}
		if _, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "clusterrole", role); err == nil || !strings.Contains(errOut, "NotFound") {
			t.Errorf("the dry run created the ClusterRole: %v %s", err, errOut)
		}
		decode(kubectlOK(t, w, controlplane.AdminUser, manifest, "create", "-f", "-", "-o", "yaml"))
		if r.Status.Phase != "Succeeded" || r.Status.DryRun || r.Status.Action != "create" || r.Status.Object.Name != role ||
			r.Status.Object.Resource != "clusterroles" || r.Status.Object.Namespace != "" || r.Status.CreatedBy != controlplane.AdminUser {
			t.Fatalf("cluster restore: %+v", r.Status)
		}
		live := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "clusterrole", role, "-o", "jsonpath={.metadata.labels.team} {.rules[0].resources[0]} {.rules[0].verbs[0]}")
		if live != "shop configmaps get" {
			t.Errorf("the restored ClusterRole differs from its state before the deletion: %q", live)
		}
		// Read back as a cluster restore only.
		if out := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "clusterrestores", "-o", "name"); !strings.Contains(out, "bring-back-role") {
			t.Errorf("clusterrestores: %q", out)
		}
		if out := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "restores", "-A", "-o", "name"); strings.Contains(out, "bring-back-role") {
			t.Errorf("a cluster restore is listed as a namespaced one: %q", out)
		}
		// An as-of plan of cluster-scoped objects, run by a ClusterRestore.
		eventually(t, time.Minute, "the restore's create of the ClusterRole", func() error {
			out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "clusterchanges",
				"--field-selector", "object.resource=clusterroles,object.name="+role+",verb=create", "-o", "name")
			if err != nil || strings.TrimSpace(out) == "" {
				return fmt.Errorf("%v: %q %s", err, out, errOut)
			}
			return nil
		})
		// spec.at has whole seconds: at falls after the create, and the
		// change below a second after at.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
		at := time.Now().UTC().Truncate(time.Second)
		time.Sleep(1100 * time.Millisecond)
		kubectlOK(t, w, controlplane.AdminUser, nil, "patch", "clusterrole", role, "--type=json",
			"-p", `[{"op":"replace","path":"/rules/0/verbs","value":["get","list","watch"]}]`)
		eventually(t, time.Minute, "the patch of the ClusterRole", func() error {
			out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "clusterchanges",
				"--field-selector", "object.resource=clusterroles,object.name="+role+",verb=patch", "-o", "name")
			if err != nil || strings.TrimSpace(out) == "" {
				return fmt.Errorf("%v: %q %s", err, out, errOut)
			}
			return nil
		})
		planYAML := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestorePlan","metadata":{"name":"roles-as-of"},
			"spec":{"kind":"as-of","at":"` + at.Format(time.RFC3339) + `","resources":[{"group":"rbac.authorization.k8s.io","resource":"clusterroles"}],"names":["` + role + `"]}}`)
		var plan struct {
			Status struct {
				Steps []struct {
					Action string
					Object struct{ Name, Namespace string }
				}
			}
		}
		out := kubectlOK(t, w, controlplane.AdminUser, planYAML, "create", "-f", "-", "-o", "yaml")
		if err := yaml.Unmarshal([]byte(out), &plan); err != nil {
			t.Fatal(err)
		}
		if len(plan.Status.Steps) != 1 || plan.Status.Steps[0].Action != "update" || plan.Status.Steps[0].Object.Name != role {
			t.Fatalf("the as-of plan of the ClusterRole: %+v\n%s", plan.Status.Steps, out)
		}
		if out := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "restoreplans", "-A", "-o", "name"); strings.Contains(out, "roles-as-of") {
			t.Errorf("a cluster plan is listed as a namespaced one: %q", out)
		}
		decode(kubectlOK(t, w, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
			"metadata":{"name":"run-roles-as-of"},"spec":{"plan":"roles-as-of","planDigest":"`+
			kubectlOK(t, w, controlplane.AdminUser, nil, "get", "clusterrestoreplan", "roles-as-of", "-o", "jsonpath={.status.planDigest}")+`"}}`), "create", "-f", "-", "-o", "yaml"))
		if r.Status.Phase != "Succeeded" {
			t.Errorf("the run of the cluster plan: %+v", r.Status)
		}
		if verbs := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "clusterrole", role, "-o", "jsonpath={.rules[0].verbs}"); verbs != `["get"]` {
			t.Errorf("the ClusterRole's verbs after the as-of plan ran: %s, want [\"get\"]", verbs)
		}
		// A namespaced plan, even the admin's own, is not a ClusterRestore's to run.
		kubectlOK(t, w, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan",
			"metadata":{"name":"admin-ns-plan","namespace":"`+ns+`"},"spec":{"kind":"as-of","at":"`+at.Format(time.RFC3339)+`","resources":[{"resource":"configmaps"}]}}`),
			"create", "-f", "-")
		if _, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
			"metadata":{"name":"run-other"},"spec":{"plan":"admin-ns-plan"}}`), "create", "-f", "-"); err == nil || !strings.Contains(errOut, "no ClusterRestorePlan of yours") {
			t.Errorf("a cluster restore of a namespaced plan: %v %s", err, errOut)
		}
		// A namespaced deletion is not a cluster restore's.
		if _, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
			"metadata":{"name":"wrong-scope"},"spec":{"deletion":"`+name+`"}}`), "create", "-f", "-"); err == nil ||
			!strings.Contains(errOut, "no such deletion of a cluster-scoped object") {
			t.Errorf("a cluster restore of a namespaced deletion: %v %s", err, errOut)
		}
	})

	t.Run("kubectl get change -o yaml of an update gives the state before, the diff and a clean manifest", func(t *testing.T) {
		kubectlOK(t, w, "bob", nil, "create", "configmap", "settings", "-n", ns, "--from-literal=level=info")
		kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"level":"debug"}}`),
			"replace", "-n", ns, "-f", "-")
		var lines []string
		eventually(t, time.Minute, "the create and the update of settings", func() error {
			out, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "changes", "-n", ns, "--field-selector", "object.name=settings",
				"-o", `jsonpath={range .items[*]}{.verb} {.metadata.name}{"\n"}{end}`)
			if lines = strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 {
				return fmt.Errorf("%v %s: %q", err, errOut, out)
			}
			return nil
		})
		if !strings.HasPrefix(lines[0], "update ") || !strings.HasPrefix(lines[1], "create ") {
			t.Fatalf("changes of settings, newest first: %q", lines)
		}
		type change struct {
			Verb                        string
			State, PriorState, Manifest map[string]any
			Diff                        []struct {
				Op, Path string
				From, To any
			}
		}
		get := func(name string) change {
			t.Helper()
			var c change
			if err := yaml.Unmarshal([]byte(kubectlOK(t, w, "alice", nil, "get", "change", name, "-n", ns, "-o", "yaml")), &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
		level := func(obj map[string]any) any {
			data, _ := obj["data"].(map[string]any)
			return data["level"]
		}
		update := get(strings.Fields(lines[0])[1])
		if update.Verb != "update" || level(update.State) != "debug" || level(update.PriorState) != "info" || update.PriorState["kind"] != "ConfigMap" {
			t.Errorf("the update's state and prior state: %s %v %v", update.Verb, update.State, update.PriorState)
		}
		if d := update.Diff; len(d) != 1 || d[0].Op != "replace" || d[0].Path != "/data/level" || d[0].From != "info" || d[0].To != "debug" {
			t.Errorf("the update's diff: %+v", d)
		}
		md, _ := update.Manifest["metadata"].(map[string]any)
		if update.Manifest["kind"] != "ConfigMap" || md["name"] != "settings" || level(update.Manifest) != "debug" {
			t.Errorf("the update's manifest: %v", update.Manifest)
		}
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
			if _, ok := md[f]; ok {
				t.Errorf("the manifest keeps metadata.%s: %v", f, md)
			}
		}
		// Ready for kubectl apply, as its reader.
		manifest, err := json.Marshal(update.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		kubectlOK(t, w, "alice", manifest, "apply", "-n", ns, "--dry-run=server", "-f", "-")

		create := get(strings.Fields(lines[1])[1])
		if create.PriorState != nil || level(create.Manifest) != "info" || len(create.Diff) != 1 || create.Diff[0].Op != "add" || create.Diff[0].Path != "" {
			t.Errorf("the create: priorState %v, manifest %v, diff %+v", create.PriorState, create.Manifest, create.Diff)
		}
		// A list carries none of them.
		if out := kubectlOK(t, w, "alice", nil, "get", "changes", "-n", ns, "--field-selector", "object.name=settings",
			"-o", "jsonpath={.items[*].priorState}{.items[*].diff}{.items[*].manifest}{.items[*].state}"); strings.TrimSpace(out) != "" {
			t.Errorf("a list of changes carries states: %s", out)
		}
		// A Secret recorded as digests has no manifest: it cannot be restored.
		kubectlOK(t, w, "bob", nil, "create", "secret", "generic", "token", "-n", ns, "--from-literal=k=hunter2-agg")
		var secretChange string
		eventually(t, time.Minute, "the Secret's create", func() error {
			out, _, err := w.cp.Kubectl(t, "alice", nil, "get", "changes", "-n", ns, "--field-selector", "object.resource=secrets,object.name=token",
				"-o", "jsonpath={.items[*].metadata.name}")
			if secretChange = strings.TrimSpace(out); err != nil || secretChange == "" {
				return fmt.Errorf("%v: %q", err, out)
			}
			return nil
		})
		out := kubectlOK(t, w, "alice", nil, "get", "change", secretChange, "-n", ns, "-o", "yaml")
		if sc := get(secretChange); sc.State == nil || sc.Manifest != nil || strings.Contains(out, "hunter2-agg") || strings.Contains(out, "aHVudGVyMi1hZ2c=") {
			t.Errorf("the digested Secret's change: %s", out)
		}
	})

	t.Run("kubectl get attempts shows denied and failed writes to who may get the object", func(t *testing.T) {
		// eve may not delete in the shop: the kube-apiserver answers 403 and
		// the audit policy records it. bob creates settings a second time:
		// 409, with the body he sent.
		if _, errOut, err := w.cp.Kubectl(t, "eve", nil, "delete", "configmap", "app-config", "-n", ns); err == nil || !strings.Contains(errOut, "Forbidden") && !strings.Contains(errOut, "forbidden") {
			t.Fatalf("eve's delete: %v %s", err, errOut)
		}
		if _, errOut, err := w.cp.Kubectl(t, "bob", nil, "create", "configmap", "settings", "-n", ns, "--from-literal=level=again"); err == nil || !strings.Contains(errOut, "AlreadyExists") && !strings.Contains(errOut, "already exists") {
			t.Fatalf("bob's second create: %v %s", err, errOut)
		}
		var table string
		eventually(t, time.Minute, "alice sees eve's denied delete", func() error {
			out, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "attempts", "-n", ns, "--field-selector", "actor.username=eve")
			if err != nil || !strings.Contains(out, "app-config") {
				return fmt.Errorf("%v %s:\n%s", err, errOut, out)
			}
			table = out
			return nil
		})
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != 2 {
			t.Fatalf("want a header and one row:\n%s", table)
		}
		if h, want := strings.Join(strings.Fields(lines[0]), " "), "NAME RESOURCE OBJECT USER AS VERB CODE REASON ATTEMPTED"; h != want {
			t.Errorf("header %q, want %q", h, want)
		}
		if row := strings.Fields(lines[1]); len(row) != 8 || row[1] != "configmaps" || row[2] != "app-config" || row[3] != "eve" ||
			row[4] != "delete" || row[5] != "403" || row[6] != "Forbidden" {
			t.Errorf("row %q: want configmaps app-config eve (no one impersonated) delete 403 Forbidden", row)
		}
		name := strings.Fields(lines[1])[0]
		if wide := kubectlOK(t, w, "alice", nil, "get", "attempt", name, "-n", ns, "-o", "wide"); !strings.Contains(wide, "MESSAGE") ||
			!strings.Contains(wide, "AUDIT-ID") || !strings.Contains(wide, `cannot delete resource "configmaps"`) {
			t.Errorf("-o wide:\n%s", wide)
		}

		var a struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Object   struct{ Resource, Name, Namespace string }
			Verb     string
			Actor    struct{ Username string }
			Result   struct {
				Code            int
				Reason, Message string
			}
			AttemptedAt   string         `json:"attemptedAt"`
			RequestObject map[string]any `json:"requestObject"`
		}
		if err := yaml.Unmarshal([]byte(kubectlOK(t, w, "alice", nil, "get", "attempt", name, "-n", ns, "-o", "yaml")), &a); err != nil {
			t.Fatal(err)
		}
		if a.Kind != "Attempt" || a.Metadata.Name != name || a.Metadata.Namespace != ns || a.Object.Resource != "configmaps" || a.Object.Name != "app-config" ||
			a.Verb != "delete" || a.Actor.Username != "eve" || a.Result.Code != 403 || a.Result.Reason != "Forbidden" ||
			!strings.Contains(a.Result.Message, `User "eve" cannot delete resource "configmaps"`) || a.AttemptedAt == "" {
			t.Errorf("eve's attempt: %+v", a)
		}
		t.Logf("eve's denied delete (refused before its body was read): requestObject present: %v", a.RequestObject != nil)
		if out := kubectlOK(t, w, "alice", nil, "get", "attempts", "-n", ns, "--field-selector", "metadata.name="+name, "-o", "name"); strings.TrimSpace(out) != "attempt.record.optionsrecord.io/"+name {
			t.Errorf("by metadata.name: %q", out)
		}

		// The failed create: its request body, in a get only.
		var conflict string
		eventually(t, time.Minute, "bob's second create of settings", func() error {
			out, _, err := w.cp.Kubectl(t, "alice", nil, "get", "attempts", "-n", ns, "--field-selector", "actor.username=bob,object.name=settings",
				"-o", `jsonpath={range .items[*]}{.metadata.name} {.result.code} {.requestObject}{"\n"}{end}`)
			if f := strings.Fields(out); err != nil || len(f) != 2 || f[1] != "409" {
				return fmt.Errorf("%v: %q", err, out)
			}
			conflict = strings.Fields(out)[0]
			return nil
		})
		a.RequestObject = nil
		if err := yaml.Unmarshal([]byte(kubectlOK(t, w, "alice", nil, "get", "attempt", conflict, "-n", ns, "-o", "yaml")), &a); err != nil {
			t.Fatal(err)
		}
		if data, _ := a.RequestObject["data"].(map[string]any); a.Result.Reason != "AlreadyExists" || a.RequestObject["kind"] != "ConfigMap" || data["level"] != "again" {
			t.Errorf("bob's failed create: %+v", a)
		}

		// agg-peeker may read attempts but not the ConfigMaps: none of them.
		if out, errOut, err := w.cp.Kubectl(t, "agg-peeker", nil, "get", "attempts", "-n", ns, "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("agg-peeker's list: %v %q %s", err, out, errOut)
		}
		_, errOut, err := w.cp.Kubectl(t, "agg-peeker", nil, "get", "attempt", name, "-n", ns)
		if err == nil || !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
			t.Errorf("agg-peeker's get: %v %s", err, errOut)
		}
		if strings.Contains(errOut, "app-config") || strings.Contains(errOut, "configmaps") || strings.Contains(errOut, "eve") {
			t.Errorf("the refusal names the hidden attempt: %s", errOut)
		}

		// A denied write of a cluster-scoped object is a cluster attempt,
		// not listed among the namespaced ones of every namespace.
		if _, errOut, err := w.cp.Kubectl(t, "eve", nil, "delete", "namespace", ns); err == nil || !strings.Contains(errOut, "forbidden") && !strings.Contains(errOut, "Forbidden") {
			t.Fatalf("eve's delete of the namespace: %v %s", err, errOut)
		}
		eventually(t, time.Minute, "eve's denied delete of the namespace", func() error {
			out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "clusterattempts",
				"--field-selector", "object.resource=namespaces,actor.username=eve", "-o", "jsonpath={.items[*].object.name} {.items[*].result.code}")
			if err != nil || strings.TrimSpace(out) != ns+" 403" {
				return fmt.Errorf("%v: %q %s", err, out, errOut)
			}
			return nil
		})
		if out := kubectlOK(t, w, controlplane.AdminUser, nil, "get", "attempts", "-A", "--field-selector", "actor.username=eve",
			"-o", "jsonpath={.items[*].object.resource}"); strings.TrimSpace(out) != "configmaps" {
			t.Errorf("eve's attempts in every namespace: %q, want only the ConfigMap's", out)
		}
	})

	t.Run("a Restore of a Secret recorded in clear tells no value, nor does the audit log of its create", func(t *testing.T) {
		const vault = "e2e-agg-vault"
		admin := controlplane.AdminUser
		kubectlOK(t, w, admin, nil, "create", "namespace", vault)
		kubectlOK(t, w, admin, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"agg-vault","namespace":"`+sinkNS+`"},
			"spec":{"namespaces":["`+vault+`"],"resources":[{"group":"","resources":["secrets"]}],"recordSecretData":true}}`), "create", "-f", "-")
		first, second := "first-s3cr3t-value", "second-s3cr3t-value"
		// Rules follow the audit stream: retry the first write until the new
		// rule records it with its data.
		var created string
		eventually(t, time.Minute, "the Secret's create recorded in clear", func() error {
			_, _, _ = w.cp.Kubectl(t, admin, nil, "delete", "secret", "vault-token", "-n", vault, "--ignore-not-found")
			kubectlOK(t, w, admin, nil, "create", "secret", "generic", "vault-token", "-n", vault, "--from-literal=k="+first)
			time.Sleep(2 * time.Second)
			out, _, err := w.cp.Kubectl(t, admin, nil, "get", "changes", "-n", vault, "--field-selector", "object.name=vault-token,verb=create",
				"-o", `jsonpath={range .items[*]}{.metadata.name} {.restorable}{"\n"}{end}`)
			if err != nil {
				return err
			}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[1] == "true" {
					created = f[0]
					return nil
				}
			}
			return fmt.Errorf("no restorable create yet: %q", out)
		})
		replaced := strings.ReplaceAll(kubectlOK(t, w, admin, nil, "get", "secret", "vault-token", "-n", vault, "-o", "json"),
			base64.StdEncoding.EncodeToString([]byte(first)), base64.StdEncoding.EncodeToString([]byte(second)))
		kubectlOK(t, w, admin, []byte(replaced), "replace", "-f", "-")
		eventually(t, time.Minute, "the Secret's update recorded", func() error {
			out, _, err := w.cp.Kubectl(t, admin, nil, "get", "changes", "-n", vault, "--field-selector", "object.name=vault-token,verb=update", "-o", "name")
			if err != nil || strings.TrimSpace(out) == "" {
				return fmt.Errorf("not yet: %v %q", err, out)
			}
			return nil
		})

		restoreObj := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"vault-back"},"spec":{"version":"` + created + `"}}`)
		out := kubectlOK(t, w, admin, restoreObj, "create", "-n", vault, "-f", "-", "-o", "yaml")
		var r struct {
			Status struct {
				Phase, Action string
				Changes       []struct{ Op, Path string }
			}
		}
		if err := yaml.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Status.Phase != "Succeeded" || r.Status.Action != "update" {
			t.Fatalf("the Secret's restore: %s", out)
		}
		if !slices.ContainsFunc(r.Status.Changes, func(c struct{ Op, Path string }) bool { return c.Path == "/data/k" }) {
			t.Errorf("the restore's changes do not name /data/k: %+v", r.Status.Changes)
		}
		live := kubectlOK(t, w, admin, nil, "get", "secret", "vault-token", "-n", vault, "-o", "jsonpath={.data.k}")
		if live != base64.StdEncoding.EncodeToString([]byte(first)) {
			t.Errorf("the Secret was not put back: k=%s", live)
		}
		secrets := []string{first, second, base64.StdEncoding.EncodeToString([]byte(first)), base64.StdEncoding.EncodeToString([]byte(second))}
		for _, v := range secrets {
			if strings.Contains(out, v) {
				t.Errorf("the Restore's answer carries a value of the Secret (%s):\n%s", v, out)
			}
		}
		// The kube-apiserver logs the create of a Restore at RequestResponse.
		// It proxies the request, so (1.36) the line holds no body; if it
		// ever does, it must hold no value of the Secret either.
		eventually(t, 30*time.Second, "the Restore's create in the audit log", func() error {
			data, err := os.ReadFile(w.auditLog)
			if err != nil {
				return err
			}
			logged := 0
			for _, line := range strings.Split(string(data), "\n") {
				if !strings.Contains(line, `"resource":"restores","namespace":"`+vault+`"`) || !strings.Contains(line, `"stage":"ResponseComplete"`) {
					continue
				}
				logged++
				for _, v := range secrets {
					if strings.Contains(line, v) {
						t.Errorf("the audit log of the Restore's create carries a value of the Secret (%s)", v)
					}
				}
			}
			if logged == 0 {
				return errors.New("not logged yet")
			}
			return nil
		})
	})

	t.Run("a restore impersonates the caller's uid, groups and extras", func(t *testing.T) {
		kubectlOK(t, w, "bob", nil, "create", "configmap", "imp-cm", "-n", ns, "--from-literal=k=v")
		kubectlOK(t, w, "bob", nil, "delete", "configmap", "imp-cm", "-n", ns)
		var del string
		eventually(t, time.Minute, "the deletion of imp-cm", func() error {
			out, _, err := w.cp.Kubectl(t, "alice", nil, "get", "deletions", "-n", ns, "--field-selector", "object.name=imp-cm", "-o", "name")
			if del = strings.TrimPrefix(strings.TrimSpace(out), "deletion.record.optionsrecord.io/"); err != nil || del == "" {
				return fmt.Errorf("not yet: %v %q", err, out)
			}
			return nil
		})
		// The admin acts as alice with a uid, groups and an extra of its
		// choosing: the kube-apiserver forwards them, and the restore's
		// write must carry every one.
		restoreObj := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"imp-back"},"spec":{"deletion":"` + del + `"}}`)
		out := kubectlOK(t, w, controlplane.AdminUser, restoreObj, "create", "-n", ns, "-f", "-", "-o", "yaml",
			"--as", "alice", "--as-uid", "uid-alice-imp", "--as-group", "developers", "--as-group", "system:authenticated",
			"--as-user-extra", "team=shop")
		if !strings.Contains(out, "phase: Succeeded") {
			t.Fatalf("the restore as alice: %s", out)
		}
		eventually(t, 30*time.Second, "the impersonated create of imp-cm in the audit log", func() error {
			data, err := os.ReadFile(w.auditLog)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(data), "\n") {
				var ev struct {
					Verb, Stage      string
					User             struct{ Username string }
					ImpersonatedUser *struct {
						Username, UID string
						Groups        []string
						Extra         map[string][]string
					}
					ObjectRef *struct{ Resource, Namespace, Name string }
				}
				if json.Unmarshal([]byte(line), &ev) != nil || ev.Verb != "create" || ev.Stage != "ResponseComplete" ||
					ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != ns || ev.User.Username != sinkUser {
					continue
				}
				if !strings.Contains(line, `"imp-cm"`) {
					continue
				}
				iu := ev.ImpersonatedUser
				if iu == nil || iu.Username != "alice" || iu.UID != "uid-alice-imp" || !slices.Contains(iu.Groups, "developers") ||
					!slices.Equal(iu.Extra["team"], []string{"shop"}) {
					t.Errorf("the restore's write impersonated %+v; want alice, uid-alice-imp, developers and team=shop", iu)
				}
				return nil
			}
			return errors.New("not logged yet")
		})
	})

	t.Run("kubectl pages restores and plans", func(t *testing.T) {
		for _, res := range []string{"restores", "restoreplans"} {
			whole := strings.Fields(kubectlOK(t, w, "alice", nil, "get", res, "-n", ns, "-o", "name", "--chunk-size=0"))
			paged := strings.Fields(kubectlOK(t, w, "alice", nil, "get", res, "-n", ns, "-o", "name", "--chunk-size=1"))
			if len(whole) < 2 || !slices.Equal(whole, paged) {
				t.Errorf("alice's %s: %v at once, %v a page of one at a time; want the same, two at least", res, whole, paged)
			}
		}
	})

	t.Run("the aggregated port serves the kube-apiserver's front proxy only", func(t *testing.T) {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(w.caPEM)
		certFile, keyFile := w.cp.FrontProxyClientFiles()
		proxyCert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		get := func(cert *tls.Certificate, hdr map[string]string) int {
			t.Helper()
			tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
			if cert != nil {
				tc.Certificates = []tls.Certificate{*cert}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
			req, _ := http.NewRequest(http.MethodGet, "https://"+w.aggAddr+"/apis/record.optionsrecord.io/v1alpha1/namespaces/"+ns+"/deletions", nil)
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := get(nil, map[string]string{"Authorization": "Bearer " + w.cp.Token("alice")}); code != http.StatusUnauthorized {
			t.Errorf("alice's bearer token, straight to the port: %d, want 401", code)
		}
		if code := get(nil, nil); code != http.StatusUnauthorized {
			t.Errorf("no credentials: %d, want 401", code)
		}
		if code := get(&proxyCert, map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:authenticated"}); code != http.StatusOK {
			t.Errorf("the front proxy for alice: %d, want 200", code)
		}
		if code := get(&proxyCert, map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:authenticated",
			"Impersonate-User": controlplane.AdminUser, "Impersonate-Group": "system:masters"}); code != http.StatusForbidden {
			t.Errorf("impersonation headers through the port: %d, want 403", code)
		}
	})

	t.Run("the sink, aggregated API included, never watches", func(t *testing.T) {
		f, err := os.Open(w.auditLog)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		verbs := map[string]int{}
		frontProxyGets := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev struct {
				Verb string `json:"verb"`
				User struct {
					Username string `json:"username"`
				} `json:"user"`
				Stage     string `json:"stage"`
				ObjectRef *struct {
					Resource  string `json:"resource"`
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
				} `json:"objectRef"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != sinkUser {
				continue
			}
			if ev.Verb == "watch" {
				verbs["watch"]++ // any stage: an open watch has only ResponseStarted
				continue
			}
			if ev.Stage != "ResponseComplete" {
				continue
			}
			verbs[ev.Verb]++
			// The generic apiserver's authentication would list and watch
			// kube-system/extension-apiserver-authentication; the sink GETs
			// it instead (the front-proxy CA). (Its baselines LIST the
			// ConfigMaps of the namespaces its rules cover, e2e-*.)
			if ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == "kube-system" {
				if ev.Verb == "get" && ev.ObjectRef.Name == "extension-apiserver-authentication" {
					frontProxyGets++
				} else {
					t.Errorf("the sink read ConfigMaps of kube-system (%s %s)", ev.Verb, ev.ObjectRef.Name)
				}
			}
		}
		if verbs["list"] == 0 {
			t.Errorf("the audit log shows no LIST by the sink: %v (is the instrumentation working?)", verbs)
		}
		if verbs["watch"] > 0 {
			t.Errorf("the sink issued %d watches", verbs["watch"])
		}
		if frontProxyGets == 0 {
			t.Error("the sink never read the front-proxy CA from kube-system/extension-apiserver-authentication")
		}
		t.Logf("the sink's requests seen by the apiserver: %v (%d GETs of the front-proxy CA)", verbs, frontProxyGets)
	})
}

// impersonatedWrites lists the writes of one object in the kube-apiserver's
// audit log, as "verb by user as impersonated-user".
func impersonatedWrites(t *testing.T, w *world, resource, ns, name string) []string {
	t.Helper()
	f, err := os.Open(w.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb  string `json:"verb"`
			Stage string `json:"stage"`
			User  struct {
				Username string `json:"username"`
			} `json:"user"`
			ImpersonatedUser *struct {
				Username string `json:"username"`
			} `json:"impersonatedUser"`
			ObjectRef *struct {
				Resource, Namespace, Name string
			} `json:"objectRef"`
			DryRun bool
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.ObjectRef == nil ||
			ev.ObjectRef.Resource != resource || ev.ObjectRef.Namespace != ns || ev.ObjectRef.Name != name ||
			(ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch") {
			continue
		}
		as := ""
		if ev.ImpersonatedUser != nil {
			as = ev.ImpersonatedUser.Username
		}
		out = append(out, ev.Verb+" by "+ev.User.Username+" as "+as)
	}
	return out
}
