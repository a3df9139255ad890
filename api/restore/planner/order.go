package planner

// Ordering the steps: deletes, then writes in install order, owners first.

import (
	"slices"
)

// installOrder ranks resources for creates and updates: namespaces first,
// CRDs before their objects, what workloads use before workloads. Unknown
// resources (custom objects) come last.
var installOrder = map[GroupResource]int{
	{"", "namespaces"}: 0, {"apiextensions.k8s.io", "customresourcedefinitions"}: 1,
	{"", "resourcequotas"}: 2, {"", "limitranges"}: 2, {"scheduling.k8s.io", "priorityclasses"}: 2,
	{"", "serviceaccounts"}: 3, {"", "secrets"}: 3, {"", "configmaps"}: 3, {"storage.k8s.io", "storageclasses"}: 3,
	{"", "persistentvolumes"}: 4, {"", "persistentvolumeclaims"}: 4,
	{"rbac.authorization.k8s.io", "clusterroles"}: 4, {"rbac.authorization.k8s.io", "roles"}: 4,
	{"rbac.authorization.k8s.io", "clusterrolebindings"}: 5, {"rbac.authorization.k8s.io", "rolebindings"}: 5,
	{"", "services"}: 6,
	{"", "pods"}:     7, {"", "replicationcontrollers"}: 7, {"apps", "daemonsets"}: 7, {"apps", "replicasets"}: 7,
	{"apps", "deployments"}: 7, {"apps", "statefulsets"}: 7, {"batch", "jobs"}: 7, {"batch", "cronjobs"}: 7,
	{"autoscaling", "horizontalpodautoscalers"}: 8, {"policy", "poddisruptionbudgets"}: 8,
	{"networking.k8s.io", "ingresses"}: 8, {"networking.k8s.io", "networkpolicies"}: 8,
}

func rank(o ObjectRef) int {
	if r, ok := installOrder[GroupResource{o.Group, o.Resource}]; ok {
		return r
	}
	return 9
}

// stepUID is the uid a step's object is known by in the plan: owners'
// references name it.
func stepUID(st *Step) string {
	switch {
	case st.Source != nil:
		return st.Source.UID
	case st.Live != nil:
		return st.Live.UID
	}
	return ""
}

// orderSteps puts deletes first (dependents before owners, reverse install
// order), then creates and updates in install order with owners before
// their dependents, then the steps that do nothing.
func orderSteps(steps []Step) []Step {
	var dels, writes, rest []Step
	for _, st := range steps {
		switch st.Action {
		case ActionDelete:
			dels = append(dels, st)
		case ActionCreate, ActionUpdate:
			writes = append(writes, st)
		default:
			rest = append(rest, st)
		}
	}
	byName := func(a, b Step) int {
		if a.Object.Namespace != b.Object.Namespace {
			if a.Object.Namespace < b.Object.Namespace {
				return -1
			}
			return 1
		}
		if a.Object.Resource != b.Object.Resource {
			if a.Object.Resource < b.Object.Resource {
				return -1
			}
			return 1
		}
		switch {
		case a.Object.Name < b.Object.Name:
			return -1
		case a.Object.Name > b.Object.Name:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(writes, func(a, b Step) int {
		if d := rank(a.Object) - rank(b.Object); d != 0 {
			return d
		}
		return byName(a, b)
	})
	writes = ownersFirst(writes)
	// Deletes: the install order with owners first, reversed.
	slices.SortStableFunc(dels, func(a, b Step) int {
		if d := rank(a.Object) - rank(b.Object); d != 0 {
			return d
		}
		return byName(b, a)
	})
	dels = ownersFirst(dels)
	slices.Reverse(dels)
	slices.SortStableFunc(rest, byName)
	out := append(dels, writes...)
	return append(out, rest...)
}

// ownersFirst moves every step after the steps of its owners (by uid),
// keeping the order otherwise. Cycles (which the garbage collector would
// not allow) keep their order.
func ownersFirst(steps []Step) []Step {
	pos := map[string]int{}
	for i := range steps {
		if uid := stepUID(&steps[i]); uid != "" {
			pos[uid] = i
		}
	}
	// Kahn's algorithm, picking the earliest ready step each time.
	indeg := make([]int, len(steps))
	deps := make([][]int, len(steps))
	for i := range steps {
		for _, o := range steps[i].Owners {
			if j, ok := pos[o]; ok && j != i {
				indeg[i]++
				deps[j] = append(deps[j], i)
			}
		}
	}
	out := make([]Step, 0, len(steps))
	done := make([]bool, len(steps))
	for len(out) < len(steps) {
		next := -1
		for i := range steps {
			if !done[i] && indeg[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 { // a cycle: take the earliest remaining
			for i := range steps {
				if !done[i] {
					next = i
					break
				}
			}
		}
		done[next] = true
		out = append(out, steps[next])
		for _, d := range deps[next] {
			indeg[d]--
		}
	}
	return out
}
