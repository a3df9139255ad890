// Package planner turns a plan request into the steps a caller reviews
// before executing them: a namespace as of a time (AsOf), or undoing a
// user's changes (Undo). Each kind reads top to bottom: check the request,
// authorize what it names, load the versions, decide each object's
// target, then plan the steps (shared): every object authorized again,
// looked at live as the caller, and its step ordered.
//
// Plans are authorized and bounded before the record is read, and cover
// only what the caller may read:
//
//   - resources the request names must be listable and readable by the
//     caller in each namespace it names, or the plan is refused (naming only
//     what the request named);
//   - without resources, an as-of plan covers the resources recorded in the
//     namespace that the caller may list and get there, and an undo plan the
//     objects the caller may get: the others are left out, unnamed, so a
//     plan tells nothing of what the caller may not read;
//   - the record is read as metadata, filtered in the database and bounded
//     by MaxSteps; a step's stored object is loaded only while it is
//     planned.
//
// It reads the record and the cluster, as the caller; it must never write
// to either (package restore records and executes plans).
package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/impersonate"
	"github.com/options-record/options-record/store"
)

// Reader is what plans read from the record, besides what the history
// service reads for them.
type Reader interface {
	Changes(ctx context.Context, q store.ChangeQuery) ([]store.VersionRecord, error)
	Version(ctx context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error)
	Objects(ctx context.Context, cluster string, uids []string, keys [][]byte) (map[string][]byte, error)
	StateBefore(ctx context.Context, v *store.VersionRecord) (*store.VersionRecord, error)
	Newest(ctx context.Context, cluster, group, resource, namespace, name string) (*store.VersionRecord, error)
	ObjectsAsOf(ctx context.Context, q store.AsOfQuery) ([]store.VersionRecord, error)
	ResourcesIn(ctx context.Context, cluster, namespace string, at time.Time, limit int) ([]store.GroupResource, error)
}

// Options configure a planner.
type Options struct {
	// History authorizes what the caller may read.
	History *history.Service
	Reader  Reader
	// Kube looks at the live objects as the caller.
	Kube *impersonate.Access
	// MaxSteps caps the objects of a plan (default 2000).
	MaxSteps int
	// MaxUndoRows caps the changes an undo plan reads (default 20,000).
	MaxUndoRows int
}

// Bounds of a plan.
const (
	defaultMaxSteps    = 2000
	defaultMaxUndoRows = 20000
	maxPlanNamespaces  = 100 // namespaces of one plan
	maxPlanResources   = 50  // resources of one plan
	// UndoScanFactor bounds the rows an undo plan scans, hidden ones
	// included, as a multiple of its cap (MaxUndoRows).
	UndoScanFactor = 10
	// maxShownChanges bounds the changes a plan step shows for review.
	maxShownChanges = 50
)

// Planner plans restores for the caller of the context
// (history.WithCaller). It is safe for concurrent use.
type Planner struct {
	history  *history.Service
	reader   Reader
	kube     *impersonate.Access
	maxSteps int
	maxUndo  int
}

// New builds a planner.
func New(o Options) (*Planner, error) {
	if o.History == nil || o.Reader == nil {
		return nil, errors.New("planner: History and Reader are required")
	}
	p := &Planner{history: o.History, reader: o.Reader, kube: o.Kube, maxSteps: o.MaxSteps, maxUndo: o.MaxUndoRows}
	if p.maxSteps <= 0 {
		p.maxSteps = defaultMaxSteps
	}
	if p.maxUndo <= 0 {
		p.maxUndo = defaultMaxUndoRows
	}
	return p, nil
}

func (p *Planner) tooManySteps(n int) error {
	return fmt.Errorf("%w: the plan would cover more than %d objects (%d or more): narrow it (namespaces, resources, names, since/until)", errs.ErrInvalid, p.maxSteps, n)
}

// scope is what a plan may cover: the request's selection, for the caller.
type scope struct {
	cluster string
	sel     selection
	rf      *history.ReadFilter
}

// scope bounds the request's lists and starts the caller's read checks.
func (p *Planner) scope(ctx context.Context, cluster string, req *PlanRequest) (*scope, error) {
	sel, err := p.newSelection(req)
	if err != nil {
		return nil, err
	}
	return &scope{cluster: cluster, sel: sel, rf: p.history.ReadFilter(ctx)}, nil
}

// authorize refuses, before the record is read, resources the request
// names that the caller may not use (each verb) in namespace ns.
func (sc *scope) authorize(ns string, verbs ...string) error {
	for _, gr := range sc.sel.storeResources() {
		for _, verb := range verbs {
			if err := sc.rf.CheckVerb(verb, gr.Group, gr.Resource, ns); err != nil {
				return err
			}
		}
	}
	return nil
}

// selection filters the objects of a plan.
type selection struct {
	resources map[GroupResource]bool
	names     map[string]bool
}

func (p *Planner) newSelection(req *PlanRequest) (selection, error) {
	sel := selection{}
	switch {
	case len(req.Resources) > maxPlanResources:
		return sel, fmt.Errorf("%w: %d resources in one plan, more than %d", errs.ErrInvalid, len(req.Resources), maxPlanResources)
	case len(req.Names) > p.maxSteps:
		return sel, fmt.Errorf("%w: %d names in one plan, more than %d", errs.ErrInvalid, len(req.Names), p.maxSteps)
	case len(req.Namespaces) > maxPlanNamespaces:
		return sel, fmt.Errorf("%w: %d namespaces in one plan, more than %d", errs.ErrInvalid, len(req.Namespaces), maxPlanNamespaces)
	}
	for _, gr := range req.Resources {
		if gr.Resource == "" {
			return sel, fmt.Errorf("%w: resources: an entry without resource", errs.ErrInvalid)
		}
		if sel.resources == nil {
			sel.resources = map[GroupResource]bool{}
		}
		sel.resources[gr] = true
	}
	for _, n := range req.Names {
		if sel.names == nil {
			sel.names = map[string]bool{}
		}
		sel.names[n] = true
	}
	return sel, nil
}

func (sel selection) has(v *store.VersionRecord) bool {
	if sel.resources != nil && !sel.resources[GroupResource{Group: v.APIGroup, Resource: v.Resource}] {
		return false
	}
	return sel.names == nil || sel.names[v.Name]
}

func (sel selection) hasResource(group, resource string) bool {
	return sel.resources == nil || sel.resources[GroupResource{Group: group, Resource: resource}]
}

// storeResources is the selection's resources in a stable order (nil: all).
func (sel selection) storeResources() []store.GroupResource {
	if sel.resources == nil {
		return nil
	}
	out := make([]store.GroupResource, 0, len(sel.resources))
	for gr := range sel.resources {
		out = append(out, store.GroupResource{Group: gr.Group, Resource: gr.Resource})
	}
	slices.SortFunc(out, func(a, b store.GroupResource) int {
		return strings.Compare(a.Group+"/"+a.Resource, b.Group+"/"+b.Resource)
	})
	return out
}

func (sel selection) storeNames() []string {
	if sel.names == nil {
		return nil
	}
	out := make([]string, 0, len(sel.names))
	for n := range sel.names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
