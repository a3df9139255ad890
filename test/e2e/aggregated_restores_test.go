package e2e

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// restoreAnswer is a Restore (or ClusterRestore) as kubectl -o yaml shows
// it.
type restoreAnswer struct {
	Metadata struct{ Name, UID string }
	Spec     struct{ Version string }
	Status   struct {
		Phase, Action, RestoreID, CreatedBy, Message, StateDigest string
		DryRun                                                    bool
		Object                                                    struct{ Resource, Name, Namespace, UID string }
	}
}

// createRestore creates a restore as user with kubectl create -o yaml and
// the further args, and decodes the answer.
func (s *aggScenario) createRestore(t *testing.T, user string, manifest []byte, args ...string) restoreAnswer {
	t.Helper()
	var r restoreAnswer
	decodeYAML(t, s.ok(t, user, manifest, append([]string{"create", "-f", "-", "-o", "yaml"}, args...)...), &r)
	return r
}

// gone fails the test unless kubectl get of the object says NotFound.
func (s *aggScenario) gone(t *testing.T, user, why string, args ...string) {
	t.Helper()
	if _, errOut, err := s.kubectl(t, user, nil, append([]string{"get"}, args...)...); err == nil || !strings.Contains(errOut, "NotFound") {
		t.Errorf("%s: %v %s", why, err, errOut)
	}
}

func (s *aggScenario) restoreWithKubectl(t *testing.T) {
	// The deletion by its short name, as the table shows it.
	manifest := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"bring-back"},"spec":{"deletion":"` + s.short + `"}}`)
	reviewed := s.restoreDryRun(t, manifest)
	s.restorePinned(t, reviewed)
	// Its author reads it back; the name is taken.
	var r restoreAnswer
	decodeYAML(t, s.ok(t, "alice", nil, "get", "restore", "bring-back", "-n", s.ns, "-o", "yaml"), &r)
	if r.Status.Phase != "Succeeded" || r.Status.Action != "create" || r.Spec.Version == "" {
		t.Errorf("read back: %+v %+v", r.Spec, r.Status)
	}
	if out := s.ok(t, "alice", nil, "get", "restores", "-n", s.ns); !strings.Contains(out, "bring-back") || !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get restores:\n%s", out)
	}
	if _, errOut, err := s.kubectl(t, "alice", manifest, "create", "-n", s.ns, "-f", "-"); err == nil || !strings.Contains(errOut, "AlreadyExists") && !strings.Contains(errOut, "already exists") {
		t.Errorf("a second restore of the same name: %v %s", err, errOut)
	}
	// The kube-apiserver's audit log names alice for the write, made by
	// the sink impersonating her.
	if got := impersonatedWrites(t, s.w, "configmaps", s.ns, "app-config"); !slices.Contains(got, "create by "+sinkUser+" as alice") {
		t.Errorf("the audit log's writes of app-config: %v", got)
	}
	// Without rights on restores, the kube-apiserver refuses.
	if _, errOut, err := s.w.cp.KubectlConfig(t, s.certKubeconfig, manifest, "create", "-n", s.ns, "-f", "-"); err == nil || !strings.Contains(errOut, "cannot create resource \"restores\"") {
		t.Errorf("agg-carol created a restore: %v %s", err, errOut)
	}
}

// restoreDryRun: a server-side dry run changes nothing and keeps nothing;
// it returns the state digest it showed.
func (s *aggScenario) restoreDryRun(t *testing.T, manifest []byte) string {
	t.Helper()
	r := s.createRestore(t, "alice", manifest, "-n", s.ns, "--dry-run=server")
	if r.Status.Phase != "Succeeded" || !r.Status.DryRun || r.Status.Action != "create" || r.Status.CreatedBy != "alice" {
		t.Errorf("dry run: %+v", r.Status)
	}
	s.gone(t, "alice", "the dry run created the ConfigMap", "configmap", "app-config", "-n", s.ns)
	s.gone(t, "alice", "the dry run was kept", "restore", "bring-back", "-n", s.ns)
	if !strings.HasPrefix(r.Status.StateDigest, "sha256:") {
		t.Fatalf("the dry run answered no stateDigest: %+v", r.Status)
	}
	return r.Status.StateDigest
}

// restorePinned: for real, pinned to the state the dry run showed: another
// digest is refused (409, nothing written); planDigest pins plans only.
func (s *aggScenario) restorePinned(t *testing.T, reviewed string) {
	t.Helper()
	pinned := func(field, digest string) []byte {
		return []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"bring-back"},"spec":{"deletion":"` + s.short + `","` + field + `":"` + digest + `"}}`)
	}
	if _, errOut, err := s.kubectl(t, "alice", pinned("stateDigest", "sha256:"+strings.Repeat("0", 64)), "create", "-n", s.ns, "-f", "-"); err == nil || !strings.Contains(errOut, "Conflict") {
		t.Errorf("a restore pinned to another state: %v %s", err, errOut)
	}
	if _, errOut, err := s.kubectl(t, "alice", pinned("planDigest", reviewed), "create", "-n", s.ns, "-f", "-"); err == nil || !strings.Contains(errOut, "spec.planDigest") {
		t.Errorf("a restore of a deletion with planDigest: %v %s", err, errOut)
	}
	s.gone(t, "alice", "a refused restore created the ConfigMap", "configmap", "app-config", "-n", s.ns)
	r := s.createRestore(t, "alice", pinned("stateDigest", reviewed), "-n", s.ns)
	if r.Status.Phase != "Succeeded" || r.Status.DryRun || r.Status.Action != "create" || r.Status.Object.Name != "app-config" || r.Status.Object.UID == "" ||
		r.Status.StateDigest != reviewed {
		t.Fatalf("restore: %+v", r.Status)
	}
	live := s.ok(t, "alice", nil, "get", "configmap", "app-config", "-n", s.ns, "-o", "json")
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
}

// planStatus is the status of a RestorePlan.
type planStatus struct {
	State string
	Steps []struct {
		Action, Result, Message, Reason string
		Object                          struct{ Resource, Name string }
	}
}

// createPlan creates a RestorePlan in the shop as alice.
func (s *aggScenario) createPlan(t *testing.T, manifest string) planStatus {
	t.Helper()
	var p struct{ Status planStatus }
	if err := yaml.Unmarshal([]byte(s.ok(t, "alice", []byte(manifest), "create", "-n", s.ns, "-f", "-", "-o", "yaml")), &p); err != nil {
		t.Fatal(err)
	}
	return p.Status
}

// runPlan runs alice's plan by a Restore named name: a dry run, or for
// real with the plan's digest (what was reviewed).
func (s *aggScenario) runPlan(t *testing.T, name, planName string, dry bool) (phase string, steps []map[string]any) {
	t.Helper()
	args := []string{"create", "-n", s.ns, "-f", "-", "-o", "yaml"}
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
		digest = s.ok(t, "alice", nil, "get", "restoreplan", planName, "-n", s.ns, "-o", "jsonpath={.status.planDigest}")
	}
	out := s.ok(t, "alice", []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"`+name+`"},"spec":{"plan":"`+planName+`","planDigest":"`+digest+`"}}`), args...)
	if err := yaml.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r.Status.Phase, r.Status.Steps
}

// mode is app-config's data.mode, as alice reads it.
func (s *aggScenario) mode(t *testing.T) string {
	t.Helper()
	return s.ok(t, "alice", nil, "get", "configmap", "app-config", "-n", s.ns, "-o", "jsonpath={.data.mode}")
}

func (s *aggScenario) undoAndAsOfPlans(t *testing.T) {
	// After the restore: a point in time, then bob breaks app-config and
	// adds an object.
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now().UTC()
	time.Sleep(200 * time.Millisecond)
	s.ok(t, "bob", []byte(`{"data":{"mode":"broken"}}`), "patch", "configmap", "app-config", "-n", s.ns, "--type=merge", "--patch-file=/dev/stdin")
	s.ok(t, "bob", nil, "create", "configmap", "extra", "-n", s.ns, "--from-literal=k=v")
	eventually(t, time.Minute, "bob's changes recorded", func() error {
		out, _, err := s.kubectl(t, "alice", nil, "get", "changes", "-n", s.ns, "--field-selector", "actor.username=bob,since="+t0.Format(time.RFC3339Nano), "-o", "name")
		if n := len(strings.Fields(out)); err != nil || n != 2 {
			return fmt.Errorf("%d changes: %v", n, err)
		}
		return nil
	})
	s.undoPlan(t, t0)
	s.asOfPlan(t, t0)
	if out := s.ok(t, "alice", nil, "get", "restoreplans", "-n", s.ns); !strings.Contains(out, "undo-bob") || !strings.Contains(out, "as-of-t0") {
		t.Errorf("kubectl get restoreplans:\n%s", out)
	}
}

// undoPlan undoes what bob did since t0: app-config back, extra deleted;
// a dry run first, then for real with the plan's digest, once only.
func (s *aggScenario) undoPlan(t *testing.T, t0 time.Time) {
	t.Helper()
	undo := s.createPlan(t, `{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan","metadata":{"name":"undo-bob"},"spec":{"kind":"undo","user":"bob","since":"`+t0.Format(time.RFC3339)+`"}}`)
	actions := map[string]string{}
	for _, st := range undo.Steps {
		actions[st.Object.Name] = st.Action
	}
	if undo.State != "Planned" || actions["app-config"] != "update" || actions["extra"] != "delete" {
		t.Fatalf("undo plan: %+v", undo)
	}
	if phase, steps := s.runPlan(t, "undo-bob-dry", "undo-bob", true); phase != "Succeeded" || len(steps) != 2 {
		t.Errorf("dry run of the undo plan: %s %v", phase, steps)
	}
	if m := s.mode(t); m != "broken" {
		t.Errorf("the dry run changed app-config: mode %q", m)
	}
	if _, errOut, err := s.kubectl(t, "alice", []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"undo-bob-nodigest"},"spec":{"plan":"undo-bob"}}`),
		"create", "-n", s.ns, "-f", "-"); err == nil || !strings.Contains(errOut, "spec.planDigest") {
		t.Errorf("a real run without the plan's digest: %v %s", err, errOut)
	}
	if phase, steps := s.runPlan(t, "undo-bob-run", "undo-bob", false); phase != "Succeeded" || len(steps) != 2 {
		t.Fatalf("the undo plan: %s %v", phase, steps)
	}
	if m := s.mode(t); m != "live" {
		t.Errorf("after the undo, mode %q, want live", m)
	}
	s.gone(t, "alice", "extra survived the undo", "configmap", "extra", "-n", s.ns)
	if st := s.ok(t, "alice", nil, "get", "restoreplan", "undo-bob", "-n", s.ns, "-o", "jsonpath={.status.state}"); st != "Succeeded" {
		t.Errorf("the plan's state after its run: %q", st)
	}
	if sp := s.ok(t, "alice", nil, "get", "restore", "undo-bob-run", "-n", s.ns, "-o", "jsonpath={.spec.plan} {.status.phase}"); sp != "undo-bob Succeeded" {
		t.Errorf("the run read back: %q", sp)
	}
	if phase, _ := s.runPlan(t, "undo-bob-again", "undo-bob", false); phase != "Refused" {
		t.Errorf("a second run of the plan: %s, want Refused", phase)
	}
}

// asOfPlan: as of t0 again (bob breaks it once more): back to live.
func (s *aggScenario) asOfPlan(t *testing.T, t0 time.Time) {
	t.Helper()
	s.ok(t, "bob", []byte(`{"data":{"mode":"broken-again"}}`), "patch", "configmap", "app-config", "-n", s.ns, "--type=merge", "--patch-file=/dev/stdin")
	eventually(t, time.Minute, "the second break recorded", func() error {
		out, _, _ := s.kubectl(t, "alice", nil, "get", "changes", "-n", s.ns, "--field-selector", "object.name=app-config,verb=patch", "-o", "name")
		if n := len(strings.Fields(out)); n != 2 {
			return fmt.Errorf("%d patches", n)
		}
		return nil
	})
	asOf := s.createPlan(t, `{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan","metadata":{"name":"as-of-t0"},"spec":{"kind":"as-of","at":"`+t0.Format(time.RFC3339Nano)+`","resources":[{"resource":"configmaps"}]}}`)
	if asOf.State != "Planned" {
		t.Fatalf("as-of plan: %+v", asOf)
	}
	if phase, _ := s.runPlan(t, "as-of-t0-run", "as-of-t0", false); phase != "Succeeded" {
		t.Fatalf("the as-of plan: %s", phase)
	}
	if m := s.mode(t); m != "live" {
		t.Errorf("after the as-of plan, mode %q, want live", m)
	}
}

// aggRole is the ClusterRole the cluster-scoped steps delete and restore.
const aggRole = "e2e-agg-role"

func (s *aggScenario) clusterRestoreOfARole(t *testing.T) {
	deletion := s.deleteRecordedClusterRole(t)
	s.clusterRestoreOfTheRole(t, deletion)
	at := s.patchTheRoleAfterAPoint(t)
	s.clusterPlanAsOf(t, at)
	s.clusterRestoresKeepTheirScope(t, at)
}

// deleteRecordedClusterRole creates a ClusterRole a rule records, deletes
// it, and returns the name of its deletion.
func (s *aggScenario) deleteRecordedClusterRole(t *testing.T) string {
	t.Helper()
	s.ok(t, controlplane.AdminUser, []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
		"metadata":{"name":"`+aggRole+`","labels":{"team":"shop"}},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`),
		"create", "-f", "-")
	// A rule for ClusterRoles: its baseline records the role's state.
	s.w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
		"metadata":{"name":"agg-cluster-roles","namespace":"options-record"},"spec":{"resources":[{"group":"rbac.authorization.k8s.io","resources":["clusterroles"]}]}}`), "")
	eventually(t, time.Minute, "the baseline of the ClusterRole", func() error {
		if s.w.count(t, `SELECT count(*) FROM object_versions WHERE resource = 'clusterroles' AND name = '`+aggRole+`'`) == 0 {
			return errors.New("not recorded yet")
		}
		return nil
	})
	s.ok(t, controlplane.AdminUser, nil, "delete", "clusterrole", aggRole)
	var deletion string
	eventually(t, time.Minute, "the ClusterRole's deletion", func() error {
		out, errOut, err := s.kubectl(t, controlplane.AdminUser, nil, "get", "clusterdeletions",
			"--field-selector", "object.resource=clusterroles,object.name="+aggRole, "-o", "jsonpath={.items[*].metadata.name}")
		if deletion = strings.TrimSpace(out); err != nil || deletion == "" || strings.Contains(deletion, " ") {
			return fmt.Errorf("%v: %q %s", err, out, errOut)
		}
		return nil
	})
	return deletion
}

// clusterRestoreOfTheRole puts the ClusterRole back with a ClusterRestore:
// refused to alice, a dry run, then for real, read back as a cluster
// restore only.
func (s *aggScenario) clusterRestoreOfTheRole(t *testing.T, deletion string) {
	t.Helper()
	manifest := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
		"metadata":{"name":"bring-back-role"},"spec":{"deletion":"` + deletion + `"}}`)
	// Alice may restore in her namespace only: the kube-apiserver
	// refuses her a cluster restore.
	if _, errOut, err := s.kubectl(t, "alice", manifest, "create", "-f", "-"); err == nil || !strings.Contains(errOut, "forbidden") {
		t.Errorf("alice created a cluster restore: %v %s", err, errOut)
	}
	r := s.createRestore(t, controlplane.AdminUser, manifest, "--dry-run=server")
	if r.Status.Phase != "Succeeded" || !r.Status.DryRun || r.Status.Action != "create" {
		t.Errorf("dry run: %+v", r.Status)
	}
	s.gone(t, controlplane.AdminUser, "the dry run created the ClusterRole", "clusterrole", aggRole)
	r = s.createRestore(t, controlplane.AdminUser, manifest)
	if r.Status.Phase != "Succeeded" || r.Status.DryRun || r.Status.Action != "create" || r.Status.Object.Name != aggRole ||
		r.Status.Object.Resource != "clusterroles" || r.Status.Object.Namespace != "" || r.Status.CreatedBy != controlplane.AdminUser {
		t.Fatalf("cluster restore: %+v", r.Status)
	}
	live := s.ok(t, controlplane.AdminUser, nil, "get", "clusterrole", aggRole, "-o", "jsonpath={.metadata.labels.team} {.rules[0].resources[0]} {.rules[0].verbs[0]}")
	if live != "shop configmaps get" {
		t.Errorf("the restored ClusterRole differs from its state before the deletion: %q", live)
	}
	// Read back as a cluster restore only.
	if out := s.ok(t, controlplane.AdminUser, nil, "get", "clusterrestores", "-o", "name"); !strings.Contains(out, "bring-back-role") {
		t.Errorf("clusterrestores: %q", out)
	}
	if out := s.ok(t, controlplane.AdminUser, nil, "get", "restores", "-A", "-o", "name"); strings.Contains(out, "bring-back-role") {
		t.Errorf("a cluster restore is listed as a namespaced one: %q", out)
	}
}

// clusterChangeRecorded waits for a change of the ClusterRole by verb.
func (s *aggScenario) clusterChangeRecorded(t *testing.T, what, verb string) {
	t.Helper()
	eventually(t, time.Minute, what, func() error {
		out, errOut, err := s.kubectl(t, controlplane.AdminUser, nil, "get", "clusterchanges",
			"--field-selector", "object.resource=clusterroles,object.name="+aggRole+",verb="+verb, "-o", "name")
		if err != nil || strings.TrimSpace(out) == "" {
			return fmt.Errorf("%v: %q %s", err, out, errOut)
		}
		return nil
	})
}

// patchTheRoleAfterAPoint returns a point in time after the restore's
// create of the ClusterRole, and patches the role after it.
func (s *aggScenario) patchTheRoleAfterAPoint(t *testing.T) time.Time {
	t.Helper()
	s.clusterChangeRecorded(t, "the restore's create of the ClusterRole", "create")
	// spec.at has whole seconds: at falls after the create, and the
	// change below a second after at.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	at := time.Now().UTC().Truncate(time.Second)
	time.Sleep(1100 * time.Millisecond)
	s.ok(t, controlplane.AdminUser, nil, "patch", "clusterrole", aggRole, "--type=json",
		"-p", `[{"op":"replace","path":"/rules/0/verbs","value":["get","list","watch"]}]`)
	s.clusterChangeRecorded(t, "the patch of the ClusterRole", "patch")
	return at
}

// clusterPlanAsOf: an as-of plan of cluster-scoped objects, run by a
// ClusterRestore.
func (s *aggScenario) clusterPlanAsOf(t *testing.T, at time.Time) {
	t.Helper()
	planYAML := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestorePlan","metadata":{"name":"roles-as-of"},
		"spec":{"kind":"as-of","at":"` + at.Format(time.RFC3339) + `","resources":[{"group":"rbac.authorization.k8s.io","resource":"clusterroles"}],"names":["` + aggRole + `"]}}`)
	var plan struct {
		Status struct {
			Steps []struct {
				Action string
				Object struct{ Name, Namespace string }
			}
		}
	}
	out := s.ok(t, controlplane.AdminUser, planYAML, "create", "-f", "-", "-o", "yaml")
	if err := yaml.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Status.Steps) != 1 || plan.Status.Steps[0].Action != "update" || plan.Status.Steps[0].Object.Name != aggRole {
		t.Fatalf("the as-of plan of the ClusterRole: %+v\n%s", plan.Status.Steps, out)
	}
	if out := s.ok(t, controlplane.AdminUser, nil, "get", "restoreplans", "-A", "-o", "name"); strings.Contains(out, "roles-as-of") {
		t.Errorf("a cluster plan is listed as a namespaced one: %q", out)
	}
	r := s.createRestore(t, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
		"metadata":{"name":"run-roles-as-of"},"spec":{"plan":"roles-as-of","planDigest":"`+
		s.ok(t, controlplane.AdminUser, nil, "get", "clusterrestoreplan", "roles-as-of", "-o", "jsonpath={.status.planDigest}")+`"}}`))
	if r.Status.Phase != "Succeeded" {
		t.Errorf("the run of the cluster plan: %+v", r.Status)
	}
	if verbs := s.ok(t, controlplane.AdminUser, nil, "get", "clusterrole", aggRole, "-o", "jsonpath={.rules[0].verbs}"); verbs != `["get"]` {
		t.Errorf("the ClusterRole's verbs after the as-of plan ran: %s, want [\"get\"]", verbs)
	}
}

// clusterRestoresKeepTheirScope: a namespaced plan, even the admin's own,
// is not a ClusterRestore's to run; nor is a namespaced deletion.
func (s *aggScenario) clusterRestoresKeepTheirScope(t *testing.T, at time.Time) {
	t.Helper()
	s.ok(t, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan",
		"metadata":{"name":"admin-ns-plan","namespace":"`+s.ns+`"},"spec":{"kind":"as-of","at":"`+at.Format(time.RFC3339)+`","resources":[{"resource":"configmaps"}]}}`),
		"create", "-f", "-")
	if _, errOut, err := s.kubectl(t, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
		"metadata":{"name":"run-other"},"spec":{"plan":"admin-ns-plan"}}`), "create", "-f", "-"); err == nil || !strings.Contains(errOut, "no ClusterRestorePlan of yours") {
		t.Errorf("a cluster restore of a namespaced plan: %v %s", err, errOut)
	}
	if _, errOut, err := s.kubectl(t, controlplane.AdminUser, []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"ClusterRestore",
		"metadata":{"name":"wrong-scope"},"spec":{"deletion":"`+s.deletion+`"}}`), "create", "-f", "-"); err == nil ||
		!strings.Contains(errOut, "no such deletion of a cluster-scoped object") {
		t.Errorf("a cluster restore of a namespaced deletion: %v %s", err, errOut)
	}
}

// aggVault is the namespace whose Secrets a rule records in clear.
const aggVault = "e2e-agg-vault"

func (s *aggScenario) secretRestoreTellsNoValue(t *testing.T) {
	first, second := "first-s3cr3t-value", "second-s3cr3t-value"
	created := s.secretRecordedInClear(t, first, second)
	restoreObj := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"vault-back"},"spec":{"version":"` + created + `"}}`)
	out := s.ok(t, controlplane.AdminUser, restoreObj, "create", "-n", aggVault, "-f", "-", "-o", "yaml")
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
	live := s.ok(t, controlplane.AdminUser, nil, "get", "secret", "vault-token", "-n", aggVault, "-o", "jsonpath={.data.k}")
	if live != base64.StdEncoding.EncodeToString([]byte(first)) {
		t.Errorf("the Secret was not put back: k=%s", live)
	}
	secrets := []string{first, second, base64.StdEncoding.EncodeToString([]byte(first)), base64.StdEncoding.EncodeToString([]byte(second))}
	for _, v := range secrets {
		if strings.Contains(out, v) {
			t.Errorf("the Restore's answer carries a value of the Secret (%s):\n%s", v, out)
		}
	}
	s.restoreAuditTellsNoValue(t, secrets)
}

// secretRecordedInClear creates the vault's Secret with first, recorded
// in clear, then replaces it with second; it returns the create's change.
func (s *aggScenario) secretRecordedInClear(t *testing.T, first, second string) string {
	t.Helper()
	admin := controlplane.AdminUser
	s.ok(t, admin, nil, "create", "namespace", aggVault)
	s.ok(t, admin, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
		"metadata":{"name":"agg-vault","namespace":"`+sinkNS+`"},
		"spec":{"namespaces":["`+aggVault+`"],"resources":[{"group":"","resources":["secrets"]}],"recordSecretData":true}}`), "create", "-f", "-")
	// Rules follow the audit stream: retry the first write until the new
	// rule records it with its data.
	var created string
	eventually(t, time.Minute, "the Secret's create recorded in clear", func() error {
		_, _, _ = s.kubectl(t, admin, nil, "delete", "secret", "vault-token", "-n", aggVault, "--ignore-not-found")
		s.ok(t, admin, nil, "create", "secret", "generic", "vault-token", "-n", aggVault, "--from-literal=k="+first)
		time.Sleep(2 * time.Second)
		out, _, err := s.kubectl(t, admin, nil, "get", "changes", "-n", aggVault, "--field-selector", "object.name=vault-token,verb=create",
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
	replaced := strings.ReplaceAll(s.ok(t, admin, nil, "get", "secret", "vault-token", "-n", aggVault, "-o", "json"),
		base64.StdEncoding.EncodeToString([]byte(first)), base64.StdEncoding.EncodeToString([]byte(second)))
	s.ok(t, admin, []byte(replaced), "replace", "-f", "-")
	eventually(t, time.Minute, "the Secret's update recorded", func() error {
		out, _, err := s.kubectl(t, admin, nil, "get", "changes", "-n", aggVault, "--field-selector", "object.name=vault-token,verb=update", "-o", "name")
		if err != nil || strings.TrimSpace(out) == "" {
			return fmt.Errorf("not yet: %v %q", err, out)
		}
		return nil
	})
	return created
}

// restoreAuditTellsNoValue: the kube-apiserver logs the create of a
// Restore at RequestResponse. It proxies the request, so (1.36) the line
// holds no body; if it ever does, it must hold no value of the Secret
// either.
func (s *aggScenario) restoreAuditTellsNoValue(t *testing.T, secrets []string) {
	t.Helper()
	eventually(t, 30*time.Second, "the Restore's create in the audit log", func() error {
		data, err := os.ReadFile(s.w.auditLog)
		if err != nil {
			return err
		}
		logged := 0
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, `"resource":"restores","namespace":"`+aggVault+`"`) || !strings.Contains(line, `"stage":"ResponseComplete"`) {
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
}

func (s *aggScenario) restoreImpersonatesTheCaller(t *testing.T) {
	s.ok(t, "bob", nil, "create", "configmap", "imp-cm", "-n", s.ns, "--from-literal=k=v")
	s.ok(t, "bob", nil, "delete", "configmap", "imp-cm", "-n", s.ns)
	var del string
	eventually(t, time.Minute, "the deletion of imp-cm", func() error {
		out, _, err := s.kubectl(t, "alice", nil, "get", "deletions", "-n", s.ns, "--field-selector", "object.name=imp-cm", "-o", "name")
		if del = strings.TrimPrefix(strings.TrimSpace(out), "deletion.record.optionsrecord.io/"); err != nil || del == "" {
			return fmt.Errorf("not yet: %v %q", err, out)
		}
		return nil
	})
	// The admin acts as alice with a uid, groups and an extra of its
	// choosing: the kube-apiserver forwards them, and the restore's
	// write must carry every one.
	restoreObj := []byte(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"Restore","metadata":{"name":"imp-back"},"spec":{"deletion":"` + del + `"}}`)
	out := s.ok(t, controlplane.AdminUser, restoreObj, "create", "-n", s.ns, "-f", "-", "-o", "yaml",
		"--as", "alice", "--as-uid", "uid-alice-imp", "--as-group", "developers", "--as-group", "system:authenticated",
		"--as-user-extra", "team=shop")
	if !strings.Contains(out, "phase: Succeeded") {
		t.Fatalf("the restore as alice: %s", out)
	}
	eventually(t, 30*time.Second, "the impersonated create of imp-cm in the audit log", func() error {
		iu, err := s.impersonatedCreate("imp-cm")
		if err != nil {
			return err
		}
		if iu == nil || iu.Username != "alice" || iu.UID != "uid-alice-imp" || !slices.Contains(iu.Groups, "developers") ||
			!slices.Equal(iu.Extra["team"], []string{"shop"}) {
			t.Errorf("the restore's write impersonated %+v; want alice, uid-alice-imp, developers and team=shop", iu)
		}
		return nil
	})
}

// impersonatedUser is the impersonated identity of an audit event.
type impersonatedUser struct {
	Username, UID string
	Groups        []string
	Extra         map[string][]string
}

// impersonatedCreate finds the sink's create of the shop's ConfigMap name
// in the kube-apiserver's audit log and returns whom it impersonated (nil:
// no one); an error when it is not logged yet.
func (s *aggScenario) impersonatedCreate(name string) (*impersonatedUser, error) {
	data, err := os.ReadFile(s.w.auditLog)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		var ev struct {
			Verb, Stage      string
			User             struct{ Username string }
			ImpersonatedUser *impersonatedUser
			ObjectRef        *struct{ Resource, Namespace, Name string }
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Verb != "create" || ev.Stage != "ResponseComplete" ||
			ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != s.ns || ev.User.Username != sinkUser {
			continue
		}
		if !strings.Contains(line, `"`+name+`"`) {
			continue
		}
		return ev.ImpersonatedUser, nil
	}
	return nil, errors.New("not logged yet")
}

func (s *aggScenario) pagesRestoresAndPlans(t *testing.T) {
	for _, res := range []string{"restores", "restoreplans"} {
		whole := strings.Fields(s.ok(t, "alice", nil, "get", res, "-n", s.ns, "-o", "name", "--chunk-size=0"))
		paged := strings.Fields(s.ok(t, "alice", nil, "get", res, "-n", s.ns, "-o", "name", "--chunk-size=1"))
		if len(whole) < 2 || !slices.Equal(whole, paged) {
			t.Errorf("alice's %s: %v at once, %v a page of one at a time; want the same, two at least", res, whole, paged)
		}
	}
}
