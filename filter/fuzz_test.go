package filter

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

// probeEvents are matched against every fuzzed rule set.
var probeEvents = []*auditv1.Event{
	event(),
	event(verb("delete"), ns("payments-eu"), resource("apps", "deployments"), user("bob", "ops")),
	event(verb("patch"), resource("apps", "deployments"), sub("scale"), body(`{"spec":{"replicas":2}}`)),
	event(verb("patch"), body(`{"status":{"phase":"x"}}`)),
	event(verb("create"), resource("rbac.authorization.k8s.io", "clusterroles"), clusterScoped()),
	event(verb("delete"), resource("", "namespaces"), ns("team-a"), name("team-a")),
	event(verb("update"), resource("coordination.k8s.io", "leases")),
	event(user("admin"), impersonating("system:serviceaccount:ci:deployer", "ci")),
	event(verb("deletecollection"), ns("team-a"), name(""), body(`{"propagationPolicy":"Background"}`)),
}

// checkRules checks the invariants of a compiled set against its input.
func checkRules(t *testing.T, objs []v1alpha1.OptionsRecordController, set *Rules, statuses []RuleStatus) {
	t.Helper()
	if len(statuses) != len(objs) {
		t.Fatalf("%d statuses for %d objects", len(statuses), len(objs))
	}
	ready := 0
	for _, st := range statuses {
		if st.Ready {
			ready++
			if st.Reason != v1alpha1.ReasonSynced {
				t.Fatalf("Ready status with reason %q", st.Reason)
			}
		} else if st.Reason != v1alpha1.ReasonInvalidSpec && st.Reason != v1alpha1.ReasonNamespaceOutOfScope {
			t.Fatalf("not-Ready status with reason %q", st.Reason)
		} else if st.Message == "" {
			t.Fatalf("not-Ready status without message: %+v", st)
		}
	}
	names := set.Names()
	if set.Len() != ready || len(names) != ready {
		t.Fatalf("Len() = %d, Names() has %d, want %d Ready rules", set.Len(), len(names), ready)
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("Names() not sorted and unique: %q", names)
	}
	if ready > 0 && set.MaxRetention() < v1alpha1.MinRetention {
		t.Fatalf("MaxRetention() = %v", set.MaxRetention())
	}
	for _, ev := range probeEvents {
		d := set.Match(ev)
		if d.Keep != (d.Reason == "") || d.Keep != (len(d.Rules) > 0) {
			t.Fatalf("inconsistent decision %+v", d)
		}
		if !slices.IsSorted(d.Rules) {
			t.Fatalf("decision rules not sorted: %q", d.Rules)
		}
		for _, r := range d.Rules {
			if !slices.Contains(names, r) {
				t.Fatalf("decision names %q, not a Ready rule", r)
			}
		}
		if d.Keep && (d.Retention < v1alpha1.MinRetention || d.Retention > set.MaxRetention()) {
			t.Fatalf("decision retention %v outside [%v, %v]", d.Retention, v1alpha1.MinRetention, set.MaxRetention())
		}
	}
}

// FuzzCompile parses arbitrary rules files and compiles what parses.
func FuzzCompile(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "rules.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(orcHeader + "metadata: {name: a}\nspec: {users: ['*'], verbs: [delete], resources: [{group: '*', resources: ['*']}]}\n"))
	f.Add([]byte(orcHeader + "metadata: {name: a, namespace: team-a}\nspec: {namespaces: ['x?']}\n"))
	f.Add([]byte(orcHeader + "metadata: {name: a}\nspec: {retention: 30m, excludeUsers: ['[']}\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController","metadata":{"name":"x"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Parse(data)
		if err != nil {
			return
		}
		set, statuses := Compile(objs, Options{})
		checkRules(t, objs, set, statuses)
	})
}

// FuzzCompileFields reaches the spec validation directly, without YAML.
func FuzzCompileFields(f *testing.F) {
	f.Add("options-record", "prod*", "kube-?", "apps", "deployments/scale", "delete", "system:*", "ci", int64(60), true)
	f.Add("team-a", "", "team-*", "*", "*", "create", "[x]", "", int64(10), false)
	f.Add("", "a", "b", "", "pods/status", "get", "", "*:*", int64(-5), true)
	f.Fuzz(func(t *testing.T, namespace, nsGlob, excludeGlob, group, res, verbName, userGlob, groupGlob string, retentionMinutes int64, ignoreStatus bool) {
		obj := orc(namespace, "fuzz",
			resources(group, res), verbs(v1alpha1.Verb(verbName)), users(userGlob), excludeUserGroups(groupGlob),
			excludeNamespaces(excludeGlob), retention(time.Duration(retentionMinutes)*time.Minute))
		if nsGlob != "" {
			obj.Spec.Namespaces = []string{nsGlob}
		}
		obj.Spec.IgnoreStatusOnlyChanges = &ignoreStatus
		objs := []v1alpha1.OptionsRecordController{obj, sinkORC("other", retention(2*time.Hour))}
		set, statuses := Compile(objs, Options{})
		checkRules(t, objs, set, statuses)
		if obj.Spec.Retention.Duration < v1alpha1.MinRetention && statuses[0].Ready {
			t.Fatalf("retention %v accepted", obj.Spec.Retention.Duration)
		}
	})
}
