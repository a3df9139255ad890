package filter_test

import (
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/filter"
)

// TestAuditPolicyCoversTheRules evaluates the generated policy with the
// apiserver's own policy code: every request a rule keeps must be audited at
// RequestResponse, and reads must not be audited at all.
func TestAuditPolicyCoversTheRules(t *testing.T) {
	objs, err := filter.LoadFile("testdata/policy-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := filter.Options{SinkNamespace: "options-record"}
	rules, _ := filter.Compile(objs, opts)
	p := filter.AuditPolicy(objs, opts)

	// Round-trip through YAML and the apiserver's loader, as the apiserver
	// reads the file.
	data, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	internal, err := policy.LoadPolicyFromBytes(data)
	if err != nil {
		t.Fatalf("the apiserver would not load the policy: %v\n%s", err, data)
	}
	eval := policy.NewPolicyRuleEvaluator(internal)

	users := []string{"alice", "system:kube-scheduler", "system:serviceaccount:kube-system:namespace-controller"}
	namespaces := []string{"", "prod", "team-a", "tenant", "kube-system", "other"}
	resources := [][3]string{
		{"", "configmaps", ""}, {"", "secrets", ""}, {"apps", "deployments", ""}, {"apps", "deployments", "scale"},
		{"", "namespaces", ""}, {"optionsrecord.io", "optionsrecordcontrollers", ""}, {"coordination.k8s.io", "leases", ""},
		{"", "pods", "status"}, {"batch", "jobs", ""},
	}
	verbs := []string{"create", "update", "patch", "delete", "deletecollection", "get", "list", "watch"}
	checked := 0
	for _, u := range users {
		for _, ns := range namespaces {
			for _, r := range resources {
				for _, v := range verbs {
					ev := &auditv1.Event{
						Stage: auditv1.StageResponseComplete, Verb: v, RequestURI: "/x",
						User:           authnv1.UserInfo{Username: u},
						ObjectRef:      &auditv1.ObjectReference{APIGroup: r[0], Resource: r[1], Subresource: r[2], Namespace: ns, Name: "n"},
						ResponseStatus: &metav1.Status{Code: 200},
					}
					attrs := authorizer.AttributesRecord{
						User: &user.DefaultInfo{Name: u}, Verb: v, Namespace: ns, APIGroup: r[0], APIVersion: "v1",
						Resource: r[1], Subresource: r[2], Name: "n", ResourceRequest: true,
					}
					level := eval.EvaluatePolicyRule(attrs).Level
					kept := rules.Match(ev).Keep
					if kept && level != audit.LevelRequestResponse {
						t.Errorf("%s %s %s/%s in %q by %s is kept by the rules but audited at %q", v, r[0], r[1], r[2], ns, u, level)
					}
					if (v == "get" || v == "list" || v == "watch") && level != audit.LevelNone {
						t.Errorf("read %s %s in %q audited at %q", v, r[1], ns, level)
					}
					checked++
				}
			}
		}
	}
	// Something is filtered out at the apiserver: the policy is narrower than
	// "everything".
	ev := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "update", Namespace: "",
		APIGroup: "coordination.k8s.io", Resource: "leases", Name: "x", ResourceRequest: true}
	if l := eval.EvaluatePolicyRule(ev).Level; l != audit.LevelNone {
		t.Errorf("lease updates audited at %q, want None", l)
	}
	t.Logf("checked %d requests against the policy", checked)
}
