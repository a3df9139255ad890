package filter

import (
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// DropReason says why Match dropped an event. The values are stable: they are
// used as Prometheus label values.
type DropReason string

// The reasons Match drops an event, in the order it checks them.
const (
	// DropStage: the stage is not ResponseComplete or Panic, so the event
	// carries no response.
	DropStage DropReason = "stage"
	// DropReadOnly: the verb does not change anything (get, list, watch…).
	DropReadOnly DropReason = "read_only"
	// DropNoObject: the event names no object (no objectRef), as for
	// non-resource URLs.
	DropNoObject DropReason = "no_object"
	// DropDryRun: the request was a dry run.
	DropDryRun DropReason = "dry_run"
	// DropNoRule: no Ready rule selects the event.
	DropNoRule DropReason = "no_rule"
	// DropStatusOnly: every rule that selects the event ignores status-only
	// changes, and the event changes only status or server-managed fields.
	DropStatusOnly DropReason = "status_only"
	// DropNotPersisted: the write stores nothing (an access or token review,
	// a token request, exec, attach, port-forward or proxy), and the rules
	// that select it do so only through a wildcard.
	DropNotPersisted DropReason = "not_persisted"
	// DropHighChurn: the resource is a high-churn kind (leases, events),
	// and the rules that select it do so only through a wildcard.
	DropHighChurn DropReason = "high_churn"
)

// DropReasons returns every DropReason, for example to create metric series
// up front.
func DropReasons() []DropReason {
	return []DropReason{DropStage, DropReadOnly, DropNoObject, DropDryRun,
		DropNoRule, DropStatusOnly, DropNotPersisted, DropHighChurn}
}

// Decision is the outcome of Match for one event.
type Decision struct {
	// Keep is true when at least one Ready rule selects the event.
	Keep bool
	// Reason says why the event was dropped; "" when it is kept.
	Reason DropReason
	// Rules are the "namespace/name" of every Ready rule that selects the
	// event, sorted. The slice may be shared with other Decisions: do not
	// modify it.
	Rules []string
	// RecordSecretData is true when any of the rules sets recordSecretData.
	RecordSecretData bool
	// Retention is the longest retention among the rules.
	Retention time.Duration
	// Notify are the destinations the kept event's changes are sent to:
	// one per (rule, destination) whose route selects the event's verb,
	// in the order of Rules. Nil when no route does.
	Notify []Route
}

// Route names a destination a rule sends a change to.
type Route struct {
	Rule        string // "namespace/name"
	Destination string
}

// Rules is a compiled, immutable rule set. It is safe for concurrent use; to
// change the rules, compile a new set and swap the pointer. A nil *Rules
// behaves like Empty().
type Rules struct {
	rules        []rule // Ready rules only, sorted by name
	maxRetention time.Duration

	// Indices into rules, ascending: of the trusted rules, and of the
	// tenant rules by their namespace. See candidates.
	global      []int
	byNamespace map[string][]int
}

// Empty returns a rule set without rules: Match drops every event.
func Empty() *Rules { return &Rules{} }

// Len returns the number of Ready rules in the set.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

// Names returns the "namespace/name" of every Ready rule, sorted.
func (r *Rules) Names() []string {
	names := make([]string, r.Len())
	for i := range names {
		names[i] = r.rules[i].name
	}
	return names
}

// MaxRetention returns the longest retention of any Ready rule. It is 0
// when the set has no rule; that means "no rule says", not "keep nothing".
func (r *Rules) MaxRetention() time.Duration {
	if r == nil {
		return 0
	}
	return r.maxRetention
}

// rule is one compiled, Ready OptionsRecordController.
type rule struct {
	name  string   // "namespace/name"
	names []string // []string{name}, handed out by Decisions kept by this rule alone

	// ownNamespace is the CR's namespace when it is a tenant rule (not in
	// a trusted namespace): such a rule records only that namespace. "" for
	// trusted rules.
	ownNamespace      string
	namespaces        globSet // empty: all namespaces and cluster-scoped objects
	excludeNamespaces globSet
	resources         []resourceSelector // empty: every resource
	verbs             verbBit
	users             globSet // empty: everyone
	excludeUsers      globSet
	groups            globSet // empty: every group
	excludeGroups     globSet
	ignoreStatusOnly  bool
	recordSecretData  bool
	retention         time.Duration
	notify            []notifyRoute
}

// notifyRoute is a compiled spec.notify entry.
type notifyRoute struct {
	destination string
	verbs       verbBit
	refused     bool // also refused attempts
}

type verbBit uint8

const (
	verbCreate verbBit = 1 << iota
	verbUpdate
	verbPatch
	verbDelete
	verbDeleteCollection

	allVerbs = verbCreate | verbUpdate | verbPatch | verbDelete | verbDeleteCollection
)

// parseVerb returns the bit of a mutating verb, or 0.
func parseVerb(v string) verbBit {
	switch v {
	case "create":
		return verbCreate
	case "update":
		return verbUpdate
	case "patch":
		return verbPatch
	case "delete":
		return verbDelete
	case "deletecollection":
		return verbDeleteCollection
	}
	return 0
}

// matchKind is how a rule's resource selectors select a resource. A
// wildcard selection does not cover the resources WildcardExclusion names.
type matchKind uint8

const (
	matchNone     matchKind = iota
	matchWildcard           // an empty list, "*", or a resource entry covering a subresource
	matchExplicit           // the resource, or resource/subresource, by name
)

type resourceSelector struct {
	anyGroup     bool
	group        string
	anyResource  bool
	resources    []string      // "deployments": the resource and its subresources
	subresources []subresource // "deployments/scale": that subresource only
}

type subresource struct{ resource, subresource string }

func (s *resourceSelector) match(group, resource, sub string) matchKind {
	if !s.anyGroup && group != s.group {
		return matchNone
	}
	best := matchNone
	if s.anyResource {
		best = matchWildcard
	}
	for _, name := range s.resources {
		if name == resource {
			if sub == "" {
				return matchExplicit
			}
			best = matchWildcard
		}
	}
	if sub != "" {
		for _, rs := range s.subresources {
			if rs.resource == resource && rs.subresource == sub {
				return matchExplicit
			}
		}
	}
	return best
}

func (ru *rule) matchResource(group, resource, sub string) matchKind {
	if len(ru.resources) == 0 {
		return matchWildcard
	}
	best := matchNone
	for i := range ru.resources {
		if m := ru.resources[i].match(group, resource, sub); m > best {
			best = m
			if best == matchExplicit {
				break
			}
		}
	}
	return best
}

// matchNamespace: ns is the event's namespace, "" for a cluster-scoped
// object.
func (ru *rule) matchNamespace(ns string) bool {
	if ru.ownNamespace != "" {
		return ns == ru.ownNamespace && !ru.excludeNamespaces.match(ns)
	}
	if ns == "" {
		return len(ru.namespaces) == 0
	}
	if len(ru.namespaces) > 0 && !ru.namespaces.match(ns) {
		return false
	}
	return !ru.excludeNamespaces.match(ns)
}

// matchUser: includes match the authenticated or the impersonated identity;
// excludes only the authenticated one, so that impersonating an excluded
// identity cannot hide a change. users and userGroups combine with AND, as
// in the apiserver's audit Policy.
func (ru *rule) matchUser(real *authnv1.UserInfo, imp *authnv1.UserInfo) bool {
	if len(ru.excludeUsers) > 0 && ru.excludeUsers.match(real.Username) {
		return false
	}
	if len(ru.excludeGroups) > 0 && ru.excludeGroups.matchAny(real.Groups) {
		return false
	}
	if len(ru.users) > 0 && !ru.users.match(real.Username) &&
		(imp == nil || !ru.users.match(imp.Username)) {
		return false
	}
	if len(ru.groups) > 0 && !ru.groups.matchAny(real.Groups) &&
		(imp == nil || !ru.groups.matchAny(imp.Groups)) {
		return false
	}
	return true
}

// Match decides whether ev is recorded, and under which rules. It reads ev
// and never modifies it, and allocates only when several rules keep an event
// or a request body has to be decoded.
func (r *Rules) Match(ev *auditv1.Event) Decision {
	if ev == nil {
		return Decision{Reason: DropNoObject}
	}
	if ev.Stage != auditv1.StageResponseComplete && ev.Stage != auditv1.StagePanic {
		return Decision{Reason: DropStage}
	}
	verb := parseVerb(ev.Verb)
	if verb == 0 {
		return Decision{Reason: DropReadOnly}
	}
	ref := ev.ObjectRef
	if ref == nil {
		return Decision{Reason: DropNoObject}
	}
	if isDryRun(ev, verb) {
		return Decision{Reason: DropDryRun}
	}
	if r == nil {
		return Decision{Reason: DropNoRule}
	}

	ns := ref.Namespace
	if ref.APIGroup == "" && ref.Resource == "namespaces" && ref.Name != "" {
		ns = ref.Name // a Namespace is in its own namespace
	}
	excluded := WildcardExclusion(ref.APIGroup, ref.Resource, ref.Subresource)
	var statusOnly, statusOnlyKnown bool

	// A write the cluster refused changed nothing; it is kept as an
	// event, and sent only where a route asks for refused attempts.
	refused := ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300
	var d Decision
	reason := DropNoRule
	c := r.candidates(ns)
	for ru := c.next(); ru != nil; ru = c.next() {
		if ru.verbs&verb == 0 || !ru.matchNamespace(ns) {
			continue
		}
		m := ru.matchResource(ref.APIGroup, ref.Resource, ref.Subresource)
		if m == matchNone || !ru.matchUser(&ev.User, ev.ImpersonatedUser) {
			continue
		}
		if excluded != "" && m != matchExplicit {
			reason = moreSpecific(reason, excluded)
			continue
		}
		if ru.ignoreStatusOnly {
			if !statusOnlyKnown {
				statusOnly, statusOnlyKnown = isStatusOnly(ev, verb), true
			}
			if statusOnly {
				reason = moreSpecific(reason, DropStatusOnly)
				continue
			}
		}
		d.add(ru, c.remaining())
		d.addNotify(ru, verb, refused)
	}
	if !d.Keep {
		d.Reason = reason
	}
	return d
}

// Covers reports which Ready rules could record a change of an object of
// group and resource in namespace ns ("" for a cluster-scoped object; for a
// Namespace, its own name). The namespace and resource selectors must select
// the object; verbs, users and noise settings are ignored, since any change
// by anyone might come. Keep, Rules, RecordSecretData and Retention are as
// Match would give for such a change; Reason is DropNoRule, DropHighChurn or
// DropNotPersisted when no rule covers the object. The sink uses it to pick
// the objects it stores as baseline versions.
func (r *Rules) Covers(group, resource, ns string) Decision {
	if r == nil {
		return Decision{Reason: DropNoRule}
	}
	excluded := WildcardExclusion(group, resource, "")
	var d Decision
	reason := DropNoRule
	c := r.candidates(ns)
	for ru := c.next(); ru != nil; ru = c.next() {
		if !ru.matchNamespace(ns) {
			continue
		}
		m := ru.matchResource(group, resource, "")
		if m == matchNone {
			continue
		}
		if excluded != "" && m != matchExplicit {
			reason = moreSpecific(reason, excluded)
			continue
		}
		d.add(ru, c.remaining())
	}
	if !d.Keep {
		d.Reason = reason
	}
	return d
}

// CoversResource reports whether some Ready rule could record a change of
// an object of group and resource in some namespace or cluster-wide; see
// Covers. It tells the sink which resources are worth a LIST at all.
func (r *Rules) CoversResource(group, resource string) bool {
	excluded := WildcardExclusion(group, resource, "")
	for i := range r.Len() {
		m := r.rules[i].matchResource(group, resource, "")
		if m == matchExplicit || (m == matchWildcard && excluded == "") {
			return true
		}
	}
	return false
}

// candidates returns a cursor over the rules that may select an object in
// namespace ns: the trusted rules and the tenant rules of ns, in name
// order. Tenants' rules cost nothing for other namespaces' events.
func (r *Rules) candidates(ns string) cursor {
	return cursor{rules: r.rules, global: r.global, local: r.byNamespace[ns]}
}

// cursor merges two ascending lists of indices into rules.
type cursor struct {
	rules         []rule
	global, local []int
}

// next returns the next rule, or nil.
func (c *cursor) next() *rule {
	var i int
	switch {
	case len(c.global) == 0 && len(c.local) == 0:
		return nil
	case len(c.local) == 0 || (len(c.global) > 0 && c.global[0] < c.local[0]):
		i, c.global = c.global[0], c.global[1:]
	default:
		i, c.local = c.local[0], c.local[1:]
	}
	return &c.rules[i]
}

// remaining returns how many rules next has yet to return.
func (c *cursor) remaining() int { return len(c.global) + len(c.local) }

func (d *Decision) add(ru *rule, remaining int) {
	switch len(d.Rules) {
	case 0:
		d.Rules = ru.names
	case 1:
		rules := make([]string, 1, 2+remaining)
		rules[0] = d.Rules[0]
		d.Rules = append(rules, ru.name)
	default:
		d.Rules = append(d.Rules, ru.name)
	}
	d.Keep = true
	d.RecordSecretData = d.RecordSecretData || ru.recordSecretData
	d.Retention = max(d.Retention, ru.retention)
}

// addNotify adds the routes of ru that select verb (and, for an attempt
// the cluster refused, that ask for refused attempts).
func (d *Decision) addNotify(ru *rule, verb verbBit, refused bool) {
	for _, n := range ru.notify {
		if n.verbs&verb != 0 && (n.refused || !refused) {
			d.Notify = append(d.Notify, Route{Rule: ru.name, Destination: n.destination})
		}
	}
}

// moreSpecific returns whichever reason says more about why no rule kept an
// event: a rule that selected the event but dropped it as noise says more
// than no rule selecting it.
func moreSpecific(a, b DropReason) DropReason {
	if dropRank(b) > dropRank(a) {
		return b
	}
	return a
}

func dropRank(r DropReason) int {
	switch r {
	case DropStatusOnly:
		return 1
	case DropHighChurn:
		return 2
	case DropNotPersisted:
		return 3
	}
	return 0
}

// isStatusOnly reports whether a write changes only status or
// server-managed fields: any update or patch of the status subresource, or
// a patch whose body touches nothing else. It decodes the body only for
// patches of other subresources or of the object itself.
func isStatusOnly(ev *auditv1.Event, verb verbBit) bool {
	if verb&(verbUpdate|verbPatch) == 0 {
		return false
	}
	if ev.ObjectRef.Subresource == "status" {
		return true
	}
	if verb != verbPatch || ev.RequestObject == nil {
		return false
	}
	return patchIsStatusOnly(ev.RequestObject.Raw)
}

// WildcardExclusion reports whether a wildcard resource selector (an empty
// resources list, or a "*" entry) leaves out writes to group, resource and
// subresource, and why: DropNotPersisted for writes that store nothing,
// DropHighChurn for high-churn kinds, "" otherwise. Naming the resource (or
// for a subresource, "resource/subresource") selects such writes all the
// same. The audit policy generator uses it to keep the apiserver's output in
// line with the rules.
func WildcardExclusion(group, resource, subresource string) DropReason {
	switch group {
	case "":
		switch resource {
		case "events":
			return DropHighChurn
		case "serviceaccounts":
			if subresource == "token" {
				return DropNotPersisted
			}
		case "pods":
			switch subresource {
			case "exec", "attach", "portforward", "proxy":
				return DropNotPersisted
			}
		case "services", "nodes":
			if subresource == "proxy" {
				return DropNotPersisted
			}
		}
	case "events.k8s.io":
		if resource == "events" {
			return DropHighChurn
		}
	case "coordination.k8s.io":
		switch resource {
		case "leases", "leasecandidates":
			return DropHighChurn
		}
	case "authentication.k8s.io":
		switch resource {
		case "tokenreviews", "selfsubjectreviews":
			return DropNotPersisted
		}
	case "authorization.k8s.io":
		switch resource {
		case "subjectaccessreviews", "selfsubjectaccessreviews",
			"localsubjectaccessreviews", "selfsubjectrulesreviews":
			return DropNotPersisted
		}
	}
	return ""
}
