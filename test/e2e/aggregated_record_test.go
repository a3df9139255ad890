package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// recordedChange is a change as kubectl get change -o yaml shows it.
type recordedChange struct {
	Verb                        string
	State, PriorState, Manifest map[string]any
	Diff                        []struct {
		Op, Path string
		From, To any
	}
}

// change gets one change of the shop as alice.
func (s *aggScenario) change(t *testing.T, name string) recordedChange {
	t.Helper()
	var c recordedChange
	if err := yaml.Unmarshal([]byte(s.ok(t, "alice", nil, "get", "change", name, "-n", s.ns, "-o", "yaml")), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// level is the data.level of a ConfigMap.
func level(obj map[string]any) any {
	data, _ := obj["data"].(map[string]any)
	return data["level"]
}

func (s *aggScenario) changeDetail(t *testing.T) {
	s.ok(t, "bob", nil, "create", "configmap", "settings", "-n", s.ns, "--from-literal=level=info")
	s.ok(t, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"level":"debug"}}`),
		"replace", "-n", s.ns, "-f", "-")
	var lines []string
	eventually(t, time.Minute, "the create and the update of settings", func() error {
		out, errOut, err := s.kubectl(t, "alice", nil, "get", "changes", "-n", s.ns, "--field-selector", "object.name=settings",
			"-o", `jsonpath={range .items[*]}{.verb} {.metadata.name}{"\n"}{end}`)
		if lines = strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 {
			return fmt.Errorf("%v %s: %q", err, errOut, out)
		}
		return nil
	})
	if !strings.HasPrefix(lines[0], "update ") || !strings.HasPrefix(lines[1], "create ") {
		t.Fatalf("changes of settings, newest first: %q", lines)
	}
	s.updateHasPriorStateDiffAndManifest(t, strings.Fields(lines[0])[1])
	create := s.change(t, strings.Fields(lines[1])[1])
	if create.PriorState != nil || level(create.Manifest) != "info" || len(create.Diff) != 1 || create.Diff[0].Op != "add" || create.Diff[0].Path != "" {
		t.Errorf("the create: priorState %v, manifest %v, diff %+v", create.PriorState, create.Manifest, create.Diff)
	}
	// A list carries none of them.
	if out := s.ok(t, "alice", nil, "get", "changes", "-n", s.ns, "--field-selector", "object.name=settings",
		"-o", "jsonpath={.items[*].priorState}{.items[*].diff}{.items[*].manifest}{.items[*].state}"); strings.TrimSpace(out) != "" {
		t.Errorf("a list of changes carries states: %s", out)
	}
	s.digestedSecretHasNoManifest(t)
}

// updateHasPriorStateDiffAndManifest checks the update of settings: its
// state and the one before, the diff, and a clean manifest kubectl applies.
func (s *aggScenario) updateHasPriorStateDiffAndManifest(t *testing.T, name string) {
	t.Helper()
	update := s.change(t, name)
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
	s.ok(t, "alice", manifest, "apply", "-n", s.ns, "--dry-run=server", "-f", "-")
}

// digestedSecretHasNoManifest: a Secret recorded as digests has no
// manifest: it cannot be restored.
func (s *aggScenario) digestedSecretHasNoManifest(t *testing.T) {
	t.Helper()
	s.ok(t, "bob", nil, "create", "secret", "generic", "token", "-n", s.ns, "--from-literal=k=hunter2-agg")
	var secretChange string
	eventually(t, time.Minute, "the Secret's create", func() error {
		out, _, err := s.kubectl(t, "alice", nil, "get", "changes", "-n", s.ns, "--field-selector", "object.resource=secrets,object.name=token",
			"-o", "jsonpath={.items[*].metadata.name}")
		if secretChange = strings.TrimSpace(out); err != nil || secretChange == "" {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
	out := s.ok(t, "alice", nil, "get", "change", secretChange, "-n", s.ns, "-o", "yaml")
	if sc := s.change(t, secretChange); sc.State == nil || sc.Manifest != nil || strings.Contains(out, "hunter2-agg") || strings.Contains(out, "aHVudGVyMi1hZ2c=") {
		t.Errorf("the digested Secret's change: %s", out)
	}
}

// recordedAttempt is an attempt as kubectl get attempt -o yaml shows it.
type recordedAttempt struct {
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

// attempt gets one attempt of the shop as alice.
func (s *aggScenario) attempt(t *testing.T, name string) recordedAttempt {
	t.Helper()
	var a recordedAttempt
	if err := yaml.Unmarshal([]byte(s.ok(t, "alice", nil, "get", "attempt", name, "-n", s.ns, "-o", "yaml")), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func (s *aggScenario) attempts(t *testing.T) {
	// eve may not delete in the shop: the kube-apiserver answers 403 and
	// the audit policy records it. bob creates settings a second time:
	// 409, with the body he sent.
	if _, errOut, err := s.kubectl(t, "eve", nil, "delete", "configmap", "app-config", "-n", s.ns); err == nil || !strings.Contains(errOut, "Forbidden") && !strings.Contains(errOut, "forbidden") {
		t.Fatalf("eve's delete: %v %s", err, errOut)
	}
	if _, errOut, err := s.kubectl(t, "bob", nil, "create", "configmap", "settings", "-n", s.ns, "--from-literal=level=again"); err == nil || !strings.Contains(errOut, "AlreadyExists") && !strings.Contains(errOut, "already exists") {
		t.Fatalf("bob's second create: %v %s", err, errOut)
	}
	short := s.deniedDeleteInATable(t)
	long := s.deniedDeleteInDetail(t, short)
	s.failedCreateKeepsItsBody(t)
	s.peekerSeesNoAttempt(t, long, short)
	s.clusterAttempt(t)
}

// deniedDeleteInATable: alice's kubectl get attempts shows eve's denied
// delete in a table, which fits 120 columns; it returns the attempt's
// short name (NAME).
func (s *aggScenario) deniedDeleteInATable(t *testing.T) string {
	t.Helper()
	var table string
	eventually(t, time.Minute, "alice sees eve's denied delete", func() error {
		out, errOut, err := s.kubectl(t, "alice", nil, "get", "attempts", "-n", s.ns, "--field-selector", "actor.username=eve")
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
	if h, want := strings.Join(strings.Fields(lines[0]), " "), "RESOURCE OBJECT USER AS VERB RESULT ATTEMPTED NAME"; h != want {
		t.Errorf("header %q, want %q", h, want)
	}
	row := strings.Fields(lines[1])
	if len(row) != 8 || row[0] != "configmaps" || row[1] != "app-config" || row[2] != "eve" ||
		row[3] != "delete" || row[4] != "403" || row[5] != "Forbidden" || !regexp.MustCompile(`^app-config-[0-9a-f]{8}$`).MatchString(row[7]) {
		t.Fatalf("row %q: want configmaps app-config eve (no one impersonated) delete 403 Forbidden, and a short name", row)
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 120 {
			t.Errorf("a line of %d columns:\n%s", n, table)
		}
	}
	return row[7]
}

// deniedDeleteInDetail: -o wide and -o yaml of eve's attempt by its
// short name, and that name as a field selector; it returns the long
// name.
func (s *aggScenario) deniedDeleteInDetail(t *testing.T, short string) string {
	t.Helper()
	a := s.attempt(t, short)
	name := a.Metadata.Name
	if _, key, ok := strings.Cut(name, "."); !ok || !strings.HasPrefix(key, strings.TrimPrefix(short, "app-config-")) {
		t.Errorf("%s names %s", short, name)
	}
	if wide := s.ok(t, "alice", nil, "get", "attempt", short, "-n", s.ns, "-o", "wide"); !strings.Contains(wide, "MESSAGE") ||
		!strings.Contains(wide, "AUDIT-ID") || !strings.Contains(wide, `cannot delete resource "configmaps"`) || !strings.Contains(wide, name) {
		t.Errorf("-o wide:\n%s", wide)
	}
	if a.Kind != "Attempt" || a.Metadata.Namespace != s.ns || a.Object.Resource != "configmaps" || a.Object.Name != "app-config" ||
		a.Verb != "delete" || a.Actor.Username != "eve" || a.Result.Code != 403 || a.Result.Reason != "Forbidden" ||
		!strings.Contains(a.Result.Message, `User "eve" cannot delete resource "configmaps"`) || a.AttemptedAt == "" {
		t.Errorf("eve's attempt: %+v", a)
	}
	t.Logf("eve's denied delete (refused before its body was read): requestObject present: %v", a.RequestObject != nil)
	if out := s.ok(t, "alice", nil, "get", "attempts", "-n", s.ns, "--field-selector", "metadata.name="+short, "-o", "name"); strings.TrimSpace(out) != "attempt.record.optionsrecord.io/"+name {
		t.Errorf("by metadata.name: %q", out)
	}
	return name
}

// failedCreateKeepsItsBody: bob's failed create, with its request body in
// a get only.
func (s *aggScenario) failedCreateKeepsItsBody(t *testing.T) {
	t.Helper()
	var conflict string
	eventually(t, time.Minute, "bob's second create of settings", func() error {
		out, _, err := s.kubectl(t, "alice", nil, "get", "attempts", "-n", s.ns, "--field-selector", "actor.username=bob,object.name=settings",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.result.code} {.requestObject}{"\n"}{end}`)
		if f := strings.Fields(out); err != nil || len(f) != 2 || f[1] != "409" {
			return fmt.Errorf("%v: %q", err, out)
		}
		conflict = strings.Fields(out)[0]
		return nil
	})
	a := s.attempt(t, conflict)
	if data, _ := a.RequestObject["data"].(map[string]any); a.Result.Reason != "AlreadyExists" || a.RequestObject["kind"] != "ConfigMap" || data["level"] != "again" {
		t.Errorf("bob's failed create: %+v", a)
	}
}

// peekerSeesNoAttempt: agg-peeker may read attempts but not the
// ConfigMaps: none of them.
func (s *aggScenario) peekerSeesNoAttempt(t *testing.T, name, short string) {
	t.Helper()
	if out, errOut, err := s.kubectl(t, "agg-peeker", nil, "get", "attempts", "-n", s.ns, "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("agg-peeker's list: %v %q %s", err, out, errOut)
	}
	_, errOut, err := s.kubectl(t, "agg-peeker", nil, "get", "attempt", name, "-n", s.ns)
	if err == nil || !strings.Contains(errOut, "NotFound") && !strings.Contains(errOut, "not found") {
		t.Errorf("agg-peeker's get: %v %s", err, errOut)
	}
	if strings.Contains(errOut, "app-config") || strings.Contains(errOut, "configmaps") || strings.Contains(errOut, "eve") {
		t.Errorf("the refusal names the hidden attempt: %s", errOut)
	}
	// By its short name: not found as a name that names nothing (the
	// answer repeats only the name typed).
	_, errOut, err = s.kubectl(t, "agg-peeker", nil, "get", "attempt", short, "-n", s.ns)
	_, errNone, _ := s.kubectl(t, "agg-peeker", nil, "get", "attempt", "app-config-00000000", "-n", s.ns)
	if err == nil || strings.ReplaceAll(errOut, short, "app-config-00000000") != errNone || strings.Contains(errOut, "configmaps") || strings.Contains(errOut, "eve") {
		t.Errorf("agg-peeker's get by the short name: %v %s (a name that names nothing: %s)", err, errOut, errNone)
	}
}

// clusterAttempt: a denied write of a cluster-scoped object is a cluster
// attempt, not listed among the namespaced ones of every namespace.
func (s *aggScenario) clusterAttempt(t *testing.T) {
	t.Helper()
	if _, errOut, err := s.kubectl(t, "eve", nil, "delete", "namespace", s.ns); err == nil || !strings.Contains(errOut, "forbidden") && !strings.Contains(errOut, "Forbidden") {
		t.Fatalf("eve's delete of the namespace: %v %s", err, errOut)
	}
	eventually(t, time.Minute, "eve's denied delete of the namespace", func() error {
		out, errOut, err := s.kubectl(t, controlplane.AdminUser, nil, "get", "clusterattempts",
			"--field-selector", "object.resource=namespaces,actor.username=eve", "-o", "jsonpath={.items[*].object.name} {.items[*].result.code}")
		if err != nil || strings.TrimSpace(out) != s.ns+" 403" {
			return fmt.Errorf("%v: %q %s", err, out, errOut)
		}
		return nil
	})
	if out := s.ok(t, controlplane.AdminUser, nil, "get", "attempts", "-A", "--field-selector", "actor.username=eve",
		"-o", "jsonpath={.items[*].object.resource}"); strings.TrimSpace(out) != "configmaps" {
		t.Errorf("eve's attempts in every namespace: %q, want only the ConfigMap's", out)
	}
}
