package filter

import (
	"fmt"
	"slices"
	"strings"
)

// Coverage describes, one entry per Ready rule, what the rules that could
// record a change of an object of group and resource select of it: the
// rule's name, its namespace scope and whether it records Secret data —
// what Covers decides from. Verbs, users, noise settings, retention and
// the rule's name are left out: they do not change which objects a
// baseline stores (a rule made again under another name must not LIST
// the cluster again: a tenant could repeat that at will). Two rule sets
// with the same Coverage of a resource baseline it alike, and a Coverage
// whose entries are all in an earlier one covers nothing the earlier one
// did not. The entries are sorted and distinct; nil when no rule covers
// the resource.
func (r *Rules) Coverage(group, resource string) []string {
	excluded := WildcardExclusion(group, resource, "")
	var out []string
	for i := range r.Len() {
		ru := &r.rules[i]
		m := ru.matchResource(group, resource, "")
		if m == matchNone || (m == matchWildcard && excluded != "") {
			continue
		}
		out = append(out, fmt.Sprintf("own=%s|ns=%s|exclude=%s|secrets=%t",
			ru.ownNamespace, ru.namespaces.patterns(), ru.excludeNamespaces.patterns(), ru.recordSecretData))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (gs globSet) patterns() string {
	pats := make([]string, len(gs))
	for i, g := range gs {
		pats[i] = g.pat
	}
	return strings.Join(pats, ",")
}
