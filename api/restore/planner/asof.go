package planner

// A namespace as of a time.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/store"
)

// AsOf plans putting the selected namespaces back as they were at req.At:
// every object that existed then gets its state back (create or update);
// objects recorded as created since are deleted.
func (p *Planner) AsOf(ctx context.Context, cluster string, req *PlanRequest) ([]Step, error) {
	now := time.Now()
	if err := checkAsOf(req, now); err != nil {
		return nil, err
	}
	sc, err := p.scope(ctx, cluster, req)
	if err != nil {
		return nil, err
	}
	namespaces := unique(req.Namespaces)
	if err := sc.authorizeAsOf(namespaces); err != nil {
		return nil, err
	}
	then, existing, err := p.loadAsOf(ctx, sc, namespaces, *req.At, now)
	if err != nil {
		return nil, err
	}
	return p.planSteps(ctx, cluster, then, createdSince(then, existing), nil, *req.At)
}

// unique is list without repeats, in order.
func unique(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func checkAsOf(req *PlanRequest, now time.Time) error {
	switch {
	case req.At == nil || req.At.IsZero():
		return fmt.Errorf("%w: as-of needs at (an RFC 3339 time)", errs.ErrInvalid)
	case req.At.After(now):
		return fmt.Errorf("%w: at (%s) is in the future", errs.ErrInvalid, req.At.Format(time.RFC3339))
	case len(req.Namespaces) == 0:
		return fmt.Errorf("%w: as-of needs namespaces (\"\" for cluster-scoped objects, with resources)", errs.ErrInvalid)
	case req.User != "" || req.Since != nil || req.Until != nil:
		return fmt.Errorf("%w: user, since and until are for kind undo", errs.ErrInvalid)
	}
	return nil
}

// authorizeAsOf: before the record is read, the caller may list and get
// what the plan covers in each namespace (without resources, the Namespace
// object, authorized in itself).
func (sc *scope) authorizeAsOf(namespaces []string) error {
	for _, ns := range namespaces {
		var err error
		switch {
		case ns == "" && sc.sel.resources == nil:
			err = fmt.Errorf("%w: restoring every cluster-scoped object is not supported: name the resources to restore", errs.ErrInvalid)
		case sc.sel.resources == nil:
			err = sc.rf.Check("", "namespaces", ns)
		default:
			err = sc.authorize(ns, "list", "get")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadAsOf loads, as metadata, the selected objects of each namespace as
// they were at the time restored to and as they are now, and the Namespace
// objects as they were.
func (p *Planner) loadAsOf(ctx context.Context, sc *scope, namespaces []string, at, now time.Time) (then, existing []store.VersionRecord, _ error) {
	for _, ns := range namespaces {
		resources, err := p.resourcesIn(ctx, sc, ns, now)
		if err != nil {
			return nil, nil, err
		}
		if len(resources) > 0 {
			if then, err = p.objectsAsOf(ctx, sc, store.AsOfQuery{Namespace: ns, At: at, Resources: resources}, then); err != nil {
				return nil, nil, err
			}
			if existing, err = p.objectsAsOf(ctx, sc, store.AsOfQuery{Namespace: ns, At: now, Resources: resources}, existing); err != nil {
				return nil, nil, err
			}
		}
		if ns != "" && sc.sel.hasResource("", "namespaces") && (sc.sel.names == nil || sc.sel.names[ns]) {
			q := store.AsOfQuery{At: at, Resources: []store.GroupResource{{Resource: "namespaces"}}, Names: []string{ns}}
			if then, err = p.objectsAsOf(ctx, sc, q, then); err != nil {
				return nil, nil, err
			}
		}
	}
	return then, existing, nil
}

// resourcesIn is the selection's resources or, without any, what the caller
// may list and get of what is recorded in namespace ns.
func (p *Planner) resourcesIn(ctx context.Context, sc *scope, ns string, now time.Time) ([]store.GroupResource, error) {
	if resources := sc.sel.storeResources(); resources != nil {
		return resources, nil
	}
	recorded, err := p.reader.ResourcesIn(ctx, sc.cluster, ns, now, history.MaxChecks)
	if err != nil {
		return nil, err
	}
	var resources []store.GroupResource
	for _, gr := range recorded {
		ok, err := sc.rf.AllowedVerbs(gr.Group, gr.Resource, ns, "list", "get")
		if err != nil {
			return nil, err
		}
		if ok {
			resources = append(resources, gr)
		}
	}
	return resources, nil
}

// objectsAsOf appends to into the selected objects q finds, refusing a plan
// over the step cap.
func (p *Planner) objectsAsOf(ctx context.Context, sc *scope, q store.AsOfQuery, into []store.VersionRecord) ([]store.VersionRecord, error) {
	q.Cluster, q.Limit = sc.cluster, p.maxSteps+1
	if q.Names == nil {
		q.Names = sc.sel.storeNames()
	}
	vs, err := p.reader.ObjectsAsOf(ctx, q)
	if err != nil {
		return nil, err
	}
	for i := range vs {
		if sc.sel.has(&vs[i]) {
			into = append(into, vs[i])
		}
	}
	if len(into) > p.maxSteps {
		return nil, p.tooManySteps(len(into))
	}
	return into, nil
}

// createdSince are the objects recorded as existing now but not then (by
// uid or by name): created since. A Namespace is never deleted.
func createdSince(then, now []store.VersionRecord) []store.VersionRecord {
	uids, names := map[string]bool{}, map[string]bool{}
	for i := range then {
		uids[then[i].UID] = true
		names[nameKey(&then[i])] = true
	}
	var created []store.VersionRecord
	for i := range now {
		v := &now[i]
		if !uids[v.UID] && !names[nameKey(v)] && v.Resource != "namespaces" {
			created = append(created, *v)
		}
	}
	return created
}

func nameKey(v *store.VersionRecord) string {
	return v.APIGroup + "/" + v.Resource + "/" + v.Namespace + "/" + v.Name
}
