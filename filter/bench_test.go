package filter

import (
	"fmt"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

// benchRules is a large but plausible rule set: a few sink-wide rules and
// one rule per team namespace.
func benchRules(teams int) *Rules {
	objs := []v1alpha1.OptionsRecordController{
		sinkORC("prod-apps", namespaces("prod", "payments-*"), excludeNamespaces("kube-*"),
			resources("apps", "deployments", "statefulsets"), resources("", "configmaps", "secrets", "services"),
			excludeUsers("system:kube-scheduler", "system:serviceaccount:kube-system:*")),
		sinkORC("rbac", resources("rbac.authorization.k8s.io", "*"), retention(2160*60*60*1e9)),
		sinkORC("deletes", verbs(v1alpha1.VerbDelete, v1alpha1.VerbDeleteCollection), excludeUserGroups("system:nodes")),
	}
	for i := range teams {
		objs = append(objs, orc(fmt.Sprintf("team-%d", i), "own", excludeUsers("system:serviceaccount:*:ci-*")))
	}
	set, _ := Compile(objs, Options{})
	return set
}

func BenchmarkMatch(b *testing.B) {
	set := benchRules(100)
	for _, bm := range []struct {
		name string
		ev   *auditv1.Event
	}{
		{"kept/update", event()},
		{"kept/delete-three-rules", event(verb("delete"), ns("team-7"), resource("apps", "deployments"))},
		{"dropped/read-only", event(verb("get"))},
		{"dropped/no-rule", event(ns("staging"), user("bob", "ops"))},
		{"dropped/status-subresource", event(verb("update"), ns("team-3"), resource("apps", "deployments"), sub("status"))},
		{"dropped/status-patch", event(verb("patch"), ns("team-3"), resource("", "pods"),
			body(`{"metadata":{"resourceVersion":"48213"},"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-21T10:11:02Z"}],"phase":"Running"}}`))},
		{"dropped/lease", event(ns("team-3"), resource("coordination.k8s.io", "leases"))},
		{"dropped/dry-run-delete", event(verb("delete"), body(`{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`))},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set.Match(bm.ev)
			}
		})
	}
}
