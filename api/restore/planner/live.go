package planner

// The live objects a plan looks at, LISTed as the caller where many.

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/impersonate"
	"github.com/options-record/options-record/api/restore/restorable"
	"github.com/options-record/options-record/store"
)

// listThreshold is the number of planned objects of one resource in one
// namespace from which their live objects are LISTed, in pages, rather than
// fetched one GET each: a plan of 5,000 ConfigMaps makes ten requests, not
// 5,000 (at the impersonated client's rate, most of a minute).
const listThreshold = 20

// maxListed bounds the live objects one LIST of a plan reads: a resource
// with more objects in the namespace is left to single GETs. Of those it
// reads, the plan keeps only the ones it plans (a namespace's other objects
// are dropped page by page), and a page is listPage objects, so a caller
// cannot make a plan hold a huge namespace in memory: its memory is its
// planned objects and one page.
const (
	maxListed = 20000
	listPage  = 100
)

// liveObjects are the live objects LISTed as the caller, per resource and
// namespace; a group not listed is fetched object by object.
type liveObjects map[liveGroup]map[string]*unstructured.Unstructured

type liveGroup struct{ group, version, resource, namespace string }

func groupOf(o ObjectRef) liveGroup {
	return liveGroup{o.Group, o.APIVersion, o.Resource, o.Namespace}
}

// get returns the live object (nil when it does not exist).
func (lv liveObjects) get(ctx context.Context, c dynamic.Interface, o ObjectRef) (*unstructured.Unstructured, error) {
	if objs, ok := lv[groupOf(o)]; ok {
		return objs[o.Name], nil
	}
	return impersonate.GetLive(ctx, c, o)
}

// listLive LISTs, as the caller, the live objects of each resource and
// namespace with many planned objects, where the caller may list them (it
// never asks a list the cluster would refuse); a failed LIST leaves the
// group to single GETs.
func listLive(ctx context.Context, c dynamic.Interface, rf *history.ReadFilter, sets ...[]store.VersionRecord) (liveObjects, error) {
	count := map[liveGroup]int{}
	planned := map[liveGroup]map[string]bool{}
	for _, set := range sets {
		for i := range set {
			ref := restorable.Ref(&set[i])
			g := groupOf(ref)
			count[g]++
			if planned[g] == nil {
				planned[g] = map[string]bool{}
			}
			planned[g][ref.Name] = true
		}
	}
	lv := liveObjects{}
	for g, n := range count {
		if n < listThreshold {
			continue
		}
		ok, err := rf.AllowedVerbs(g.group, g.resource, g.namespace, "list")
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		objs := map[string]*unstructured.Unstructured{}
		ri := impersonate.Resource(c, ObjectRef{Group: g.group, APIVersion: g.version, Resource: g.resource, Namespace: g.namespace})
		opts := metav1.ListOptions{Limit: listPage}
		complete := true
		listed := 0
		for {
			l, err := ri.List(ctx, opts)
			if err != nil {
				complete = false
				break
			}
			for i := range l.Items {
				if name := l.Items[i].GetName(); planned[g][name] {
					obj := l.Items[i] // not a pointer into the page, which goes
					objs[name] = &obj
				}
			}
			if listed += len(l.Items); listed > maxListed {
				complete = false
				break
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				break
			}
		}
		if complete {
			lv[g] = objs
		}
	}
	return lv, nil
}
