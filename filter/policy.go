package filter

import (
	"fmt"
	"sort"
	"strings"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

// AuditPolicy returns the audit Policy the kube-apiserver needs to send the
// events the Ready rules of objs select, and as little else as it can: the
// apiserver's policy is static (dynamic auditing was removed), so the rules
// filter after events arrive and this keeps the webhook's volume down.
//
// The policy is a superset of what the rules select: Policy rules have no
// globs, no exclusions and no user filters the sink could rely on, so a
// rule's namespaces are listed only when they are all exact names, and users
// are never narrowed. Mutations of OptionsRecordControllers are always sent
// in full: the sink follows its rules from them.
func AuditPolicy(objs []v1alpha1.OptionsRecordController, opts Options) *auditv1.Policy {
	opts = opts.withDefaults()
	_, statuses := Compile(objs, opts)
	ready := map[string]bool{}
	for _, s := range statuses {
		if s.Ready {
			ready[s.Namespace+"/"+s.Name] = true
		}
	}
	p := &auditv1.Policy{
		OmitStages:        []auditv1.Stage{auditv1.StageRequestReceived},
		OmitManagedFields: true,
	}
	p.APIVersion, p.Kind = auditv1.SchemeGroupVersion.String(), "Policy"
	p.Rules = append(p.Rules,
		auditv1.PolicyRule{Level: auditv1.LevelNone, NonResourceURLs: []string{"/healthz*", "/readyz*", "/livez*", "/metrics"}},
		auditv1.PolicyRule{Level: auditv1.LevelNone, Verbs: []string{"get", "list", "watch"}},
		// Writes that store nothing or whose bodies are credentials.
		auditv1.PolicyRule{Level: auditv1.LevelNone, Resources: []auditv1.GroupResources{
			{Group: "authentication.k8s.io", Resources: []string{"tokenreviews", "selfsubjectreviews"}},
			{Group: "authorization.k8s.io", Resources: []string{"subjectaccessreviews", "selfsubjectaccessreviews", "localsubjectaccessreviews", "selfsubjectrulesreviews"}},
		}},
		auditv1.PolicyRule{Level: auditv1.LevelMetadata, Resources: []auditv1.GroupResources{
			{Group: "", Resources: []string{"serviceaccounts/token", "pods/exec", "pods/attach", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy"}},
		}},
		auditv1.PolicyRule{Level: auditv1.LevelRequestResponse, Verbs: policyVerbs(nil),
			Resources: []auditv1.GroupResources{{Group: v1alpha1.GroupName, Resources: []string{v1alpha1.Resource, v1alpha1.Resource + "/status"}}}},
	)
	sorted := append([]v1alpha1.OptionsRecordController(nil), objs...)
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].Namespace+"/"+sorted[i].Name < sorted[j].Namespace+"/"+sorted[j].Name
	})
	// Rules naming their resources come first, so that a rule naming
	// leases or events explicitly still gets them; then, for rules selecting
	// every resource, the noise they skip anyway (see WildcardExclusion).
	var explicit, wildcard []auditv1.PolicyRule
	for _, o := range sorted {
		ns, trusted := opts.trusted(&o)
		if !ready[ns+"/"+o.Name] {
			continue
		}
		r := auditv1.PolicyRule{Level: auditv1.LevelRequestResponse, Verbs: policyVerbs(o.Spec.Verbs)}
		if !trusted {
			r.Namespaces = []string{ns}
		} else if exactNames(o.Spec.Namespaces) {
			r.Namespaces = append([]string(nil), o.Spec.Namespaces...)
		}
		if res, all := policyResources(o.Spec.Resources); all {
			wildcard = append(wildcard, r)
		} else {
			r.Resources = res
			explicit = append(explicit, r)
		}
	}
	p.Rules = append(p.Rules, explicit...)
	if len(wildcard) > 0 {
		p.Rules = append(p.Rules, auditv1.PolicyRule{Level: auditv1.LevelNone, Resources: []auditv1.GroupResources{
			{Group: "coordination.k8s.io", Resources: []string{"leases"}},
			{Group: "", Resources: []string{"events"}},
			{Group: "events.k8s.io", Resources: []string{"events"}},
		}})
		p.Rules = append(p.Rules, wildcard...)
	}
	p.Rules = append(dedupe(p.Rules), auditv1.PolicyRule{Level: auditv1.LevelNone})
	return p
}

// dedupe drops rules equal to an earlier one (several objects often ask for
// the same thing).
func dedupe(rules []auditv1.PolicyRule) []auditv1.PolicyRule {
	seen := map[string]bool{}
	out := rules[:0]
	for _, r := range rules {
		k := fmt.Sprintf("%#v", r)
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

func policyVerbs(vs []v1alpha1.Verb) []string {
	if len(vs) == 0 {
		vs = v1alpha1.MutatingVerbs
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func exactNames(patterns []string) bool {
	if len(patterns) == 0 {
		return false
	}
	for _, p := range patterns {
		if strings.ContainsAny(p, "*?") {
			return false
		}
	}
	return true
}

// policyResources converts selectors to the Policy's GroupResources, or reports
// that they select every resource. A resource named without a subresource
// covers its subresources ("deployments" and "deployments/*").
func policyResources(sels []v1alpha1.ResourceSelector) ([]auditv1.GroupResources, bool) {
	if len(sels) == 0 {
		return nil, true
	}
	var out []auditv1.GroupResources
	for _, s := range sels {
		if s.Group == "*" {
			return nil, true
		}
		gr := auditv1.GroupResources{Group: s.Group}
		for _, r := range s.Resources {
			gr.Resources = append(gr.Resources, r)
			if r != "*" && !strings.Contains(r, "/") {
				gr.Resources = append(gr.Resources, r+"/*")
			}
			if r == "*" {
				gr.Resources = append(gr.Resources, "*/*")
			}
		}
		out = append(out, gr)
	}
	return out, false
}
