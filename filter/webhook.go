package filter

import (
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

// The observing webhook, as the ingest serves it and the kube-apiserver is
// told to call it.
const (
	// WebhookName is the name of the one webhook of the configuration: the
	// apiserver writes the reviewer's audit annotations into the audit
	// event as "<WebhookName>/<key>", so it must not change.
	WebhookName = "observe.optionsrecord.io"
	// WebhookPath is the path the ingest serves the reviews on.
	WebhookPath = "/observe"
	// DefaultWebhookConfigName is the ValidatingWebhookConfiguration's
	// name in the install manifests.
	DefaultWebhookConfigName = "options-record-observer"
	// DefaultWebhookTimeoutSeconds bounds what a write waits for the
	// review: the endpoint answers from memory in milliseconds, and a
	// refused connection fails at once, so the timeout only matters when
	// the endpoint is unreachable without refusing (a dropped packet, a
	// hung node). Then each write waits this long before the apiserver
	// ignores the failure. One second is the least the apiserver takes and
	// is within reach of a TLS handshake to a busy node on a cold
	// connection; two keep spurious losses rare and the worst case short.
	DefaultWebhookTimeoutSeconds int32 = 2
)

// Bounds of the generated webhook, so that many OptionsRecordControllers
// cannot grow the configuration without limit (every write the apiserver
// serves is matched against it). Past a bound the webhook selects more, not
// less: the namespaces' In list is dropped, or every resource is selected.
const (
	maxWebhookNamespaces = 256
	maxWebhookResources  = 256
)

// WebhookOptions configure AdmissionWebhook.
type WebhookOptions struct {
	Options
	// ConfigName is the configuration's metadata.name (default
	// DefaultWebhookConfigName).
	ConfigName string
	// ClientConfig says how the apiserver reaches the ingest (a Service or
	// a URL, and the CA bundle that verifies its serving certificate).
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// TimeoutSeconds (default DefaultWebhookTimeoutSeconds, 1 to 30).
	TimeoutSeconds int32
}

// noisy are the high-churn kinds a rule selecting every resource leaves out
// (WildcardExclusion's DropHighChurn), which the webhook leaves out too with
// a match condition unless a rule names them.
var noisy = [][2]string{
	{"", "events"},
	{"coordination.k8s.io", "leasecandidates"},
	{"coordination.k8s.io", "leases"},
	{"events.k8s.io", "events"},
}

// AdmissionWebhook returns the ValidatingWebhookConfiguration that sends the
// kube-apiserver's reviews of the writes the Ready rules of objs select to
// the observing webhook, as AuditPolicy returns the audit policy: a
// superset of what the rules select, deterministic, deduplicated and
// bounded.
//
// It always has the one webhook WebhookName, which never refuses and never
// fails a write (failurePolicy Ignore, sideEffects None: a dry-run is
// reviewed too, and is an observation of the stored object). It asks for
// UPDATE and DELETE only: the review of a CREATE carries no stored state
// (no oldObject, no resourceVersion yet), and the state a create stores is
// the oldObject of the next update or delete. A deletecollection is
// reviewed as one DELETE per object. Subresources are not reviewed unless a
// rule names one: the oldObject of a subresource write (a Scale) is not the
// object's state.
//
// Namespaces narrow the webhook only when every rule lists exact names (or
// is a tenant rule, which records its own namespace): globs cannot be
// said with a label selector. The sink's own namespace is never reviewed,
// so a broken sink cannot slow its own recovery; its changes are recorded
// from the audit stream only. The apiserver never sends reviews of webhook
// configurations, and reviews (tokenreviews, subjectaccessreviews) are
// created, never updated or deleted. Leases and events are left out with
// match conditions, as the rules leave them out, unless a rule names them.
func AdmissionWebhook(objs []v1alpha1.OptionsRecordController, opts WebhookOptions) *admissionregistrationv1.ValidatingWebhookConfiguration {
	opts.Options = opts.Options.withDefaults()
	if opts.ConfigName == "" {
		opts.ConfigName = DefaultWebhookConfigName
	}
	if opts.TimeoutSeconds <= 0 {
		opts.TimeoutSeconds = DefaultWebhookTimeoutSeconds
	}
	opts.TimeoutSeconds = min(opts.TimeoutSeconds, 30)
	_, statuses := Compile(objs, opts.Options)
	ready := map[string]bool{}
	for _, s := range statuses {
		if s.Ready {
			ready[s.Namespace+"/"+s.Name] = true
		}
	}
	sel := webhookSelection{groups: map[string]*groupSel{}, namespaces: map[string]bool{}}
	allNamespacesSeen := false
	var excludeAll map[string]bool // exact exclusions every all-namespace rule shares
	for i := range objs {
		o := &objs[i]
		ns, trusted := opts.trusted(o)
		if !ready[ns+"/"+o.Name] {
			continue
		}
		ops := webhookOperations(o.Spec.Verbs)
		if ops == 0 {
			continue
		}
		sel.any = true
		sel.addResources(o.Spec.Resources, ops)
		var nss []string
		switch {
		case !trusted:
			nss = []string{ns}
		case exactNames(o.Spec.Namespaces):
			nss = o.Spec.Namespaces
		}
		if nss == nil {
			sel.allNamespaces = true
			ex := map[string]bool{}
			for _, x := range o.Spec.ExcludeNamespaces {
				if !strings.ContainsAny(x, "*?") {
					ex[x] = true
				}
			}
			if !allNamespacesSeen {
				excludeAll, allNamespacesSeen = ex, true
			} else {
				for x := range excludeAll {
					if !ex[x] {
						delete(excludeAll, x)
					}
				}
			}
			continue
		}
		for _, n := range nss {
			if !matchesAny(o.Spec.ExcludeNamespaces, n) {
				sel.namespaces[n] = true
			}
		}
	}
	delete(sel.namespaces, opts.SinkNamespace)

	w := admissionregistrationv1.ValidatingWebhook{
		Name:                    WebhookName,
		ClientConfig:            opts.ClientConfig,
		FailurePolicy:           ptr(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr(admissionregistrationv1.Equivalent),
		SideEffects:             ptr(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr(opts.TimeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
		ObjectSelector:          &metav1.LabelSelector{},
		NamespaceSelector:       &metav1.LabelSelector{},
	}
	const nameLabel = corev1.LabelMetadataName
	switch {
	case !sel.allNamespaces && len(sel.namespaces) == 0:
		// Nothing outside the sink's namespace: review nothing.
		sel.any = false
	case !sel.allNamespaces && len(sel.namespaces) <= maxWebhookNamespaces:
		w.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{
			{Key: nameLabel, Operator: metav1.LabelSelectorOpIn, Values: sortedKeys(sel.namespaces)}}
	default:
		if excludeAll == nil || len(excludeAll) >= maxWebhookNamespaces {
			excludeAll = map[string]bool{}
		}
		excludeAll[opts.SinkNamespace] = true
		w.NamespaceSelector.MatchExpressions = []metav1.LabelSelectorRequirement{
			{Key: nameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: sortedKeys(excludeAll)}}
	}
	if sel.any {
		// With exact namespaces only, no cluster-scoped object is selected
		// but Namespaces themselves (a Namespace is in its own namespace).
		w.Rules, w.MatchConditions = sel.rules(!sel.allNamespaces)
	} else {
		w.Rules = []admissionregistrationv1.RuleWithOperations{}
	}

	c := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: opts.ConfigName, Labels: map[string]string{"app.kubernetes.io/name": "options-record"}},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{w},
	}
	c.APIVersion, c.Kind = admissionregistrationv1.SchemeGroupVersion.String(), "ValidatingWebhookConfiguration"
	return c
}

// webhookOperations are the operations whose reviews carry the prior state
// of the writes of verbs (all mutating verbs when empty).
func webhookOperations(verbs []v1alpha1.Verb) opSet {
	if len(verbs) == 0 {
		verbs = v1alpha1.MutatingVerbs
	}
	var s opSet
	for _, v := range verbs {
		switch v {
		case v1alpha1.VerbUpdate, v1alpha1.VerbPatch:
			s |= opUpdate
		case v1alpha1.VerbDelete, v1alpha1.VerbDeleteCollection:
			s |= opDelete
		}
	}
	return s
}

type opSet uint8

const (
	opUpdate opSet = 1 << iota
	opDelete
)

func (s opSet) list() []admissionregistrationv1.OperationType {
	var out []admissionregistrationv1.OperationType
	if s&opUpdate != 0 {
		out = append(out, admissionregistrationv1.Update)
	}
	if s&opDelete != 0 {
		out = append(out, admissionregistrationv1.Delete)
	}
	return out
}

// webhookSelection is the union of what the rules select.
type webhookSelection struct {
	any           bool
	allGroups     opSet // operations of rules selecting every group
	groups        map[string]*groupSel
	allNamespaces bool
	namespaces    map[string]bool
}

type groupSel struct {
	all       opSet            // operations for every resource of the group
	resources map[string]opSet // named resources
}

func (s *webhookSelection) group(g string) *groupSel {
	gs := s.groups[g]
	if gs == nil {
		gs = &groupSel{resources: map[string]opSet{}}
		s.groups[g] = gs
	}
	return gs
}

func (s *webhookSelection) addResources(sels []v1alpha1.ResourceSelector, ops opSet) {
	if len(sels) == 0 {
		s.allGroups |= ops
		return
	}
	for _, rs := range sels {
		if rs.Group == "*" {
			s.allGroups |= ops
			continue
		}
		gs := s.group(rs.Group)
		for _, r := range rs.Resources {
			if r == "*" {
				gs.all |= ops
			} else {
				gs.resources[r] |= ops
			}
		}
	}
}

// named reports whether a rule names group/resource explicitly.
func (s *webhookSelection) named(group, resource string) bool {
	gs := s.groups[group]
	return gs != nil && gs.resources[resource] != 0
}

// rules returns the webhook's rules, one per group and set of operations,
// sorted, and the match conditions leaving out the noise a wildcard would
// bring. namespaced: only namespaced objects (and Namespaces) are selected.
func (s *webhookSelection) rules(namespaced bool) ([]admissionregistrationv1.RuleWithOperations, []admissionregistrationv1.MatchCondition) {
	count := 0
	for _, gs := range s.groups {
		count += len(gs.resources) + 1
	}
	if count > maxWebhookResources {
		// Too many to list: select every resource (a superset).
		for _, gs := range s.groups {
			s.allGroups |= gs.all
			for _, ops := range gs.resources {
				s.allGroups |= ops
			}
		}
		s.groups = map[string]*groupSel{}
	}
	scope := admissionregistrationv1.AllScopes
	if namespaced {
		scope = admissionregistrationv1.NamespacedScope
	}
	type key struct {
		group string
		ops   opSet
	}
	byKey := map[key][]string{}
	wildcard := s.allGroups != 0
	for g, gs := range s.groups {
		if gs.all&^s.allGroups != 0 {
			byKey[key{g, gs.all}] = append(byKey[key{g, gs.all}], "*")
			wildcard = true
		}
		for r, ops := range gs.resources {
			if g == "" && r == "namespaces" && namespaced {
				// Its own cluster-scoped rule (below), which the
				// namespaced wildcards do not cover.
				ops |= s.allGroups | gs.all
			} else if ops&^(s.allGroups|gs.all) == 0 && !strings.Contains(r, "/") {
				continue // already selected by a wildcard (which selects no subresource)
			}
			byKey[key{g, ops}] = append(byKey[key{g, ops}], r)
		}
	}
	var out []admissionregistrationv1.RuleWithOperations
	if s.allGroups != 0 {
		out = append(out, webhookRule("*", []string{"*"}, s.allGroups, scope))
	}
	keys := make([]key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].ops < keys[j].ops
	})
	for _, k := range keys {
		res := byKey[k]
		slices.Sort(res)
		if k.group == "" && namespaced && slices.Contains(res, "namespaces") {
			// Namespaces are cluster-scoped: their own rule.
			res = slices.DeleteFunc(res, func(r string) bool { return r == "namespaces" })
			out = append(out, webhookRule("", []string{"namespaces"}, k.ops, admissionregistrationv1.ClusterScope))
		}
		if len(res) > 0 {
			out = append(out, webhookRule(k.group, res, k.ops, scope))
		}
	}
	if namespaced && (s.allGroups != 0 || (s.groups[""] != nil && s.groups[""].all != 0)) && !s.named("", "namespaces") {
		ops := s.allGroups
		if gs := s.groups[""]; gs != nil {
			ops |= gs.all
		}
		out = append(out, webhookRule("", []string{"namespaces"}, ops, admissionregistrationv1.ClusterScope))
	}
	var conds []admissionregistrationv1.MatchCondition
	if wildcard {
		for _, n := range noisy {
			if s.named(n[0], n[1]) {
				continue
			}
			g := n[0]
			if g == "" {
				g = "core"
			}
			conds = append(conds, admissionregistrationv1.MatchCondition{
				Name:       "not-" + n[1] + "." + g,
				Expression: "!(request.resource.group == '" + n[0] + "' && request.resource.resource == '" + n[1] + "')",
			})
		}
	}
	return out, conds
}

func webhookRule(group string, resources []string, ops opSet, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops.list(),
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources, Scope: ptr(scope),
		},
	}
}

func matchesAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if matchGlob(p, s) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ptr[T any](v T) *T { return &v }
