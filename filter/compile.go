package filter

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/options-record/options-record/api/v1alpha1"
)

// DefaultSinkNamespace is the sink's namespace when Options leaves it empty.
const DefaultSinkNamespace = "options-record"

// Default operator ceilings (see Options).
const (
	// DefaultMaxRetention is the longest retention any rule gets: 90 days.
	DefaultMaxRetention = 2160 * time.Hour
	// DefaultTenantMaxRetention is the longest retention a tenant rule
	// gets: the default retention, so a tenant can shorten its own rule's
	// retention but not make the shared record keep everyone's data longer.
	DefaultTenantMaxRetention = v1alpha1.DefaultRetention
)

// Options configure Compile.
//
// Rules are trusted or tenant rules. Trusted rules are the objects in a
// trusted namespace and the operator's objects without a namespace (a
// rules file): they may select any namespace and record Secret data.
// Tenant rules (every other object) record only their own namespace, and
// the operator's ceilings apply to them: see TenantSecretData and
// TenantMaxRetention.
type Options struct {
	// SinkNamespace is the namespace the sink runs in. Objects without a
	// namespace (as in a standalone rules file) count as being in it, and
	// are trusted whatever TrustedNamespaces says. Default
	// DefaultSinkNamespace.
	SinkNamespace string
	// TrustedNamespaces are the namespaces whose objects are trusted
	// rules. nil: SinkNamespace alone. An empty, non-nil slice trusts no
	// namespace (a cluster of a fleet where nobody was given that right):
	// only objects without a namespace are trusted then.
	TrustedNamespaces []string
	// TenantSecretData lets tenant rules record Secret values in clear.
	// When false (the default) a tenant rule's recordSecretData is not
	// honoured: its Secrets are recorded as digests, and its status says so.
	TenantSecretData bool
	// MaxRetention caps the retention of every rule (default
	// DefaultMaxRetention). The record keeps everyone's data for the
	// longest retention in force, so this is also the longest the record
	// is kept.
	MaxRetention time.Duration
	// TenantMaxRetention caps the retention of tenant rules (default
	// DefaultTenantMaxRetention); never more than MaxRetention.
	TenantMaxRetention time.Duration
	// NotifyAllowed reports whether a rule in namespace ns (trusted or
	// not) may send to the named destination: the destination exists in
	// the operator's configuration and is open to that namespace. A route
	// it refuses is left out of the rule, and the rule's Capped condition
	// says so. nil refuses every route.
	NotifyAllowed func(destination, ns string, trusted bool) bool
}

func (o Options) withDefaults() Options {
	if o.SinkNamespace == "" {
		o.SinkNamespace = DefaultSinkNamespace
	}
	if o.TrustedNamespaces == nil {
		o.TrustedNamespaces = []string{o.SinkNamespace}
	}
	if o.MaxRetention <= 0 {
		o.MaxRetention = DefaultMaxRetention
	}
	if o.TenantMaxRetention <= 0 {
		o.TenantMaxRetention = DefaultTenantMaxRetention
	}
	o.TenantMaxRetention = min(o.TenantMaxRetention, o.MaxRetention)
	return o
}

// trusted reports whether obj is a trusted rule (see Options), and the
// namespace it counts as being in.
func (o Options) trusted(obj *v1alpha1.OptionsRecordController) (string, bool) {
	if obj.Namespace == "" {
		return o.SinkNamespace, true
	}
	return obj.Namespace, slices.Contains(o.TrustedNamespaces, obj.Namespace)
}

// RuleStatus is the outcome of compiling one OptionsRecordController, in the
// terms of its Ready condition.
type RuleStatus struct {
	Namespace  string
	Name       string
	Generation int64 // the metadata.generation compiled, for observedGeneration
	Ready      bool
	Reason     string // v1alpha1.ReasonSynced, ReasonInvalidSpec or ReasonNamespaceOutOfScope
	Message    string
	// Capped says what the operator's ceilings changed in a Ready rule
	// (its retention shortened, its Secret data recorded as digests), for
	// the Capped condition; empty when the rule applies as written.
	Capped []string
}

// Limits of the spec. They repeat the CRD's validation markers in
// api/v1alpha1, for objects that did not pass through the apiserver (a rules
// file) or that an older CRD admitted.
const (
	maxListItems       = 64
	maxNamespaceLength = 63
	maxSubjectLength   = 512
	maxGroupLength     = 253
	maxResourceLength  = 127
	maxNotifyRoutes    = 8
)

var (
	namespaceGlobRE = regexp.MustCompile(`^[a-z0-9*?-]+$`)
	groupRE         = regexp.MustCompile(`^(\*|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`)
	resourceRE      = regexp.MustCompile(`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(/[a-z0-9]([-a-z0-9]*[a-z0-9])?)?)$`)
)

const readyMessage = "the sink applies this rule"

// Compile validates every object and compiles the valid ones into a rule
// set. It returns one RuleStatus per object, in the order of objs. An
// invalid object (Ready=false) is left out of the set; the others still
// apply. Of several objects with the same namespace and name, the first
// wins and the others are invalid. objs is not modified or retained.
func Compile(objs []v1alpha1.OptionsRecordController, opts Options) (*Rules, []RuleStatus) {
	opts = opts.withDefaults()
	statuses := make([]RuleStatus, len(objs))
	rules := make([]rule, 0, len(objs))
	seen := make(map[string]bool, len(objs))
	for i := range objs {
		obj := &objs[i]
		ns, trusted := opts.trusted(obj)
		st := RuleStatus{Namespace: ns, Name: obj.Name, Generation: obj.Generation}
		key := ns + "/" + obj.Name
		ru, errs := compileRule(obj, key, trusted)
		switch {
		case len(errs) > 0:
			st.Reason, st.Message = v1alpha1.ReasonInvalidSpec, joinErrors(errs)
		case seen[key]:
			st.Reason, st.Message = v1alpha1.ReasonInvalidSpec, fmt.Sprintf("another object named %s came first", key)
		case !trusted && len(obj.Spec.Namespaces) > 0:
			st.Reason = v1alpha1.ReasonNamespaceOutOfScope
			st.Message = fmt.Sprintf("spec.namespaces may be set only in a namespace the sink trusts (%s); "+
				"an object in namespace %q records its own namespace only", trustedList(opts.TrustedNamespaces), ns)
		default:
			st.Ready, st.Reason, st.Message = true, v1alpha1.ReasonSynced, readyMessage
			st.Capped = applyCeilings(&ru, obj, trusted, opts)
			rules = append(rules, ru)
		}
		seen[key] = true
		statuses[i] = st
	}
	slices.SortFunc(rules, func(a, b rule) int { return strings.Compare(a.name, b.name) })
	set := &Rules{rules: rules, byNamespace: make(map[string][]int)}
	for i := range rules {
		set.maxRetention = max(set.maxRetention, rules[i].retention)
		if ns := rules[i].ownNamespace; ns != "" {
			set.byNamespace[ns] = append(set.byNamespace[ns], i)
		} else {
			set.global = append(set.global, i)
		}
	}
	return set, statuses
}

func trustedList(nss []string) string {
	if len(nss) == 0 {
		return "none on this cluster"
	}
	return fmt.Sprintf("%q", nss)
}

// applyCeilings caps a compiled rule to the operator's ceilings, and says
// what it changed.
func applyCeilings(ru *rule, obj *v1alpha1.OptionsRecordController, trusted bool, opts Options) []string {
	var capped []string
	ceiling, flag := opts.MaxRetention, "the sink's longest retention"
	if !trusted {
		ceiling, flag = opts.TenantMaxRetention, "the longest retention the sink gives rules outside its trusted namespaces"
	}
	if ru.retention > ceiling {
		if obj.Spec.Retention != nil {
			capped = append(capped, fmt.Sprintf("spec.retention %s is capped to %s, %s", ru.retention, ceiling, flag))
		}
		ru.retention = ceiling
	}
	kept := ru.notify[:0]
	ns, _ := opts.trusted(obj)
	for i, n := range ru.notify {
		if opts.NotifyAllowed != nil && opts.NotifyAllowed(n.destination, ns, trusted) {
			kept = append(kept, n)
			continue
		}
		capped = append(capped, fmt.Sprintf("spec.notify[%d]: destination %q is not configured in the sink, "+
			"or not open to rules in namespace %q; nothing is sent to it", i, n.destination, ns))
	}
	ru.notify = kept
	if ru.recordSecretData && !trusted && !opts.TenantSecretData {
		ru.recordSecretData = false
		capped = append(capped, "spec.recordSecretData is not honoured: the sink records the Secrets of rules "+
			"outside its trusted namespaces as digests")
	}
	return capped
}

// compileRule validates and compiles one object. A rule that is not
// trusted records only its own namespace.
func compileRule(obj *v1alpha1.OptionsRecordController, key string, trusted bool) (rule, field.ErrorList) {
	var errs field.ErrorList
	if obj.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	}
	spec := &obj.Spec
	p := field.NewPath("spec")
	ru := rule{
		name:             key,
		names:            []string{key},
		ignoreStatusOnly: spec.IgnoreStatusOnlyChanges == nil || *spec.IgnoreStatusOnlyChanges,
		recordSecretData: spec.RecordSecretData,
		retention:        v1alpha1.DefaultRetention,
	}
	if !trusted {
		ru.ownNamespace = obj.Namespace
	}

	ru.namespaces = compileGlobs(&errs, p.Child("namespaces"), spec.Namespaces, validNamespaceGlob)
	ru.excludeNamespaces = compileGlobs(&errs, p.Child("excludeNamespaces"), spec.ExcludeNamespaces, validNamespaceGlob)
	ru.users = compileGlobs(&errs, p.Child("users"), spec.Users, validSubjectGlob)
	ru.excludeUsers = compileGlobs(&errs, p.Child("excludeUsers"), spec.ExcludeUsers, validSubjectGlob)
	ru.groups = compileGlobs(&errs, p.Child("userGroups"), spec.UserGroups, validSubjectGlob)
	ru.excludeGroups = compileGlobs(&errs, p.Child("excludeUserGroups"), spec.ExcludeUserGroups, validSubjectGlob)
	ru.resources = compileResources(&errs, p.Child("resources"), spec.Resources, ru.ignoreStatusOnly)
	ru.verbs = compileVerbs(&errs, p.Child("verbs"), spec.Verbs)
	ru.notify = compileNotify(&errs, p.Child("notify"), spec.Notify)

	if spec.Retention != nil {
		if d := spec.Retention.Duration; d < v1alpha1.MinRetention {
			errs = append(errs, field.Invalid(p.Child("retention"), d.String(),
				fmt.Sprintf("must be at least %s", v1alpha1.MinRetention)))
		} else {
			ru.retention = d
		}
	}
	return ru, errs
}

func joinErrors(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func compileGlobs(errs *field.ErrorList, p *field.Path, patterns []string, valid func(string) string) globSet {
	if len(patterns) > maxListItems {
		*errs = append(*errs, field.TooMany(p, len(patterns), maxListItems))
		return nil
	}
	var gs globSet
	for i, pat := range patterns {
		g, err := compileGlob(pat)
		if err == nil {
			if msg := valid(pat); msg != "" {
				err = fmt.Errorf("%s", msg)
			}
		}
		if err != nil {
			*errs = append(*errs, field.Invalid(p.Index(i), pat, err.Error()))
			continue
		}
		gs = append(gs, g)
	}
	return gs
}

func validNamespaceGlob(pat string) string {
	switch {
	case len(pat) > maxNamespaceLength:
		return fmt.Sprintf("must be at most %d characters", maxNamespaceLength)
	case !namespaceGlobRE.MatchString(pat):
		return "may contain only lowercase letters, digits, '-', '*' and '?'"
	}
	return ""
}

func validSubjectGlob(pat string) string {
	if len(pat) > maxSubjectLength {
		return fmt.Sprintf("must be at most %d characters", maxSubjectLength)
	}
	return ""
}

func compileResources(errs *field.ErrorList, p *field.Path, sels []v1alpha1.ResourceSelector, ignoreStatusOnly bool) []resourceSelector {
	if len(sels) > maxListItems {
		*errs = append(*errs, field.TooMany(p, len(sels), maxListItems))
		return nil
	}
	out := make([]resourceSelector, 0, len(sels))
	for i, sel := range sels {
		sp := p.Index(i)
		rs := resourceSelector{group: sel.Group, anyGroup: sel.Group == "*"}
		if len(sel.Group) > maxGroupLength || !groupRE.MatchString(sel.Group) {
			*errs = append(*errs, field.Invalid(sp.Child("group"), sel.Group,
				`must be "", "*" or an API group name (lowercase letters, digits, '-' and '.')`))
		}
		rp := sp.Child("resources")
		switch {
		case len(sel.Resources) == 0:
			*errs = append(*errs, field.Required(rp, `list resources, or "*" for all`))
		case len(sel.Resources) > maxListItems:
			*errs = append(*errs, field.TooMany(rp, len(sel.Resources), maxListItems))
		}
		for j, res := range sel.Resources {
			if len(res) > maxResourceLength || !resourceRE.MatchString(res) {
				*errs = append(*errs, field.Invalid(rp.Index(j), res,
					`must be "*", a plural resource name, or resource/subresource`))
				continue
			}
			name, sub, isSub := strings.Cut(res, "/")
			switch {
			case res == "*":
				rs.anyResource = true
			case !isSub:
				rs.resources = append(rs.resources, name)
			default:
				if sub == "status" && ignoreStatusOnly {
					*errs = append(*errs, field.Invalid(rp.Index(j), res,
						"selects only status changes, which ignoreStatusOnlyChanges (default true) drops; set it to false"))
					continue
				}
				rs.subresources = append(rs.subresources, subresource{name, sub})
			}
		}
		out = append(out, rs)
	}
	return out
}

func compileVerbs(errs *field.ErrorList, p *field.Path, verbs []v1alpha1.Verb) verbBit {
	if len(verbs) == 0 {
		return allVerbs
	}
	var bits verbBit
	for i, v := range verbs {
		b := parseVerb(string(v))
		if b == 0 {
			*errs = append(*errs, field.NotSupported(p.Index(i), v, v1alpha1.MutatingVerbs))
			continue
		}
		bits |= b
	}
	return bits
}

var destinationRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// compileNotify compiles spec.notify: each route's destination and verbs
// (default v1alpha1.DefaultNotifyVerbs).
func compileNotify(errs *field.ErrorList, p *field.Path, routes []v1alpha1.NotifyRoute) []notifyRoute {
	if len(routes) > maxNotifyRoutes {
		*errs = append(*errs, field.TooMany(p, len(routes), maxNotifyRoutes))
		return nil
	}
	var out []notifyRoute
	seen := map[string]bool{}
	for i, r := range routes {
		pi := p.Index(i)
		switch {
		case len(r.Destination) > 63 || !destinationRE.MatchString(r.Destination):
			*errs = append(*errs, field.Invalid(pi.Child("destination"), r.Destination, "must be a DNS label (at most 63 of a-z, 0-9 and -)"))
			continue
		case seen[r.Destination]:
			*errs = append(*errs, field.Duplicate(pi.Child("destination"), r.Destination))
			continue
		}
		seen[r.Destination] = true
		verbs := r.Verbs
		if len(verbs) == 0 {
			verbs = v1alpha1.DefaultNotifyVerbs
		}
		out = append(out, notifyRoute{destination: r.Destination, verbs: compileVerbs(errs, pi.Child("verbs"), verbs), refused: r.Refused})
	}
	return out
}
