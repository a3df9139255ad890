package restore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restoreapi/paths"
	"github.com/options-record/options-record/store"
)

// Plan kinds.
const (
	// KindVersion is the kind of a restore of one version.
	KindVersion = "version"
	KindAsOf    = "as-of"
	KindUndo    = "undo"
)

// maxShownChanges bounds the changes a plan step shows for review.
const maxShownChanges = 50

// CreatePlan makes a plan for the caller to review, and records it: a
// namespace as of a time, or undoing a user's changes. Only what the caller
// may read is planned, and nothing is written to the cluster.
func (s *Service) CreatePlan(ctx context.Context, cluster string, req PlanRequest) (*Plan, error) {
	if s.kube == nil {
		return nil, ErrStandalone
	}
	var steps []Step
	var err error
	switch req.Kind {
	case KindAsOf:
		steps, err = s.planAsOf(ctx, cluster, &req)
	case KindUndo:
		steps, err = s.planUndo(ctx, cluster, &req)
	default:
		return nil, fmt.Errorf("%w: kind %q: want %q or %q", errs.ErrInvalid, req.Kind, KindAsOf, KindUndo)
	}
	if err != nil {
		return nil, err
	}
	reqJSON, _ := json.Marshal(req)
	planJSON, err := json.Marshal(steps)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	u := history.Caller(ctx)
	var extra []byte
	if e := u.GetExtra(); len(e) > 0 {
		extra, _ = json.Marshal(e)
	}
	row := &store.RestoreRecord{
		Cluster: s.cluster, Kind: req.Kind, Username: u.GetName(), UserUID: u.GetUID(), UserGroups: u.GetGroups(),
		UserExtra: extra, Request: reqJSON, Plan: planJSON, State: store.RestorePlanned,
	}
	if req.Record != nil {
		row.ObjectNamespace, row.ObjectName = req.Record.Namespace, req.Record.Name
	}
	if req.Preview {
		row.CreatedAt = time.Now()
		return planOf(row)
	}
	rec, err := s.restores.InsertRestore(ctx, row)
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: a restore plan named %q exists in %q", errs.ErrExists, row.ObjectName, row.ObjectNamespace)
	}
	if err != nil {
		return nil, err
	}
	p, err := planOf(rec)
	if err != nil {
		return nil, err
	}
	s.log.Info("restore planned", "user", u.GetName(), "kind", req.Kind, "restore_id", rec.ID, "steps", len(steps))
	return p, nil
}

// Plan is a plan (or the run of one) the caller made.
func (s *Service) Plan(ctx context.Context, cluster, id string) (*Plan, error) {
	rec, err := s.ownPlan(ctx, cluster, id)
	if err != nil {
		return nil, err
	}
	return planOf(rec)
}

// ownPlan loads a plan; only its author may see it (to anyone else it does
// not exist).
func (s *Service) ownPlan(ctx context.Context, cluster, id string) (*store.RestoreRecord, error) {
	rec, err := s.restoresLog().Restore(ctx, cluster, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no restore plan %q", errs.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	// The author is the user and, when the authenticator gives one, its
	// uid: a ServiceAccount deleted and made again under the same name is
	// another author (and may have other rights).
	// Another's plan answers as an unknown one: a refusal would confirm
	// the plan and, with its author's name, who is restoring what.
	if u := history.Caller(ctx); rec.Username != u.GetName() || rec.UserUID != "" && rec.UserUID != u.GetUID() {
		return nil, fmt.Errorf("%w: no restore plan %q", errs.ErrNotFound, id)
	}
	return rec, nil
}

func (s *Service) restoresLog() RestoreLog {
	if s.restores == nil {
		return noRestores{}
	}
	return s.restores
}

// noRestores is the restore log of the standalone mode: there are none.
type noRestores struct{}

func (noRestores) InsertRestore(context.Context, *store.RestoreRecord) (*store.RestoreRecord, error) {
	return nil, ErrStandalone
}
func (noRestores) Restore(_ context.Context, _, id string) (*store.RestoreRecord, error) {
	return nil, fmt.Errorf("restore %s: %w", id, store.ErrNotFound)
}
func (noRestores) ClaimRestore(context.Context, string, string) (*store.RestoreRecord, error) {
	return nil, ErrStandalone
}
func (noRestores) FinishRestore(context.Context, string, string, string, []byte) error {
	return ErrStandalone
}
func (noRestores) RestoreNamed(_ context.Context, _, _, _, _, name string) (*store.RestoreRecord, error) {
	return nil, fmt.Errorf("restore %s: %w", name, store.ErrNotFound)
}
func (noRestores) NamedRestores(context.Context, store.NamedRestoreQuery) ([]store.RestoreRecord, error) {
	return nil, nil
}

// planOf turns a restores row back into a Plan.
func planOf(rec *store.RestoreRecord) (*Plan, error) {
	p := &Plan{ID: rec.ID, Cluster: rec.Cluster, Kind: rec.Kind, CreatedBy: rec.Username, CreatedAt: rec.CreatedAt.UTC(),
		State: rec.State, DryRun: rec.DryRun, Summary: map[string]int{}}
	if rec.PlanID != nil {
		p.PlanID = *rec.PlanID
	}
	if err := json.Unmarshal(rec.Request, &p.Request); err != nil && rec.Kind != "version" {
		return nil, fmt.Errorf("decode plan request %s: %w", rec.ID, err)
	}
	if err := json.Unmarshal(rec.Plan, &p.Steps); err != nil {
		return nil, fmt.Errorf("decode plan %s: %w", rec.ID, err)
	}
	if len(rec.Outcome) > 0 {
		if err := json.Unmarshal(rec.Outcome, &p.Outcome); err != nil {
			return nil, fmt.Errorf("decode outcome %s: %w", rec.ID, err)
		}
	}
	for _, st := range p.Steps {
		p.Summary[st.Action]++
	}
	p.Digest = PlanDigest(p.Steps)
	id := rec.ID
	if rec.PlanID != nil {
		id = *rec.PlanID
	}
	p.Execute = paths.PlanExecutePath(rec.Cluster, id)
	if rec.ObjectName != "" {
		p.Record = &RecordName{Namespace: rec.ObjectNamespace, Name: rec.ObjectName}
	}
	return p, nil
}

// Named is a restore of the caller's created as the object namespace/name
// (kubectl create). Another user's is answered as one that does not exist.
func (s *Service) Named(ctx context.Context, namespace, name string) (*Plan, error) {
	u := history.Caller(ctx)
	rec, err := s.restoresLog().RestoreNamed(ctx, s.cluster, u.GetName(), u.GetUID(), namespace, name)
	missing := fmt.Errorf("%w: no restore %q in %q of yours", errs.ErrNotFound, name, namespace)
	if errors.Is(err, store.ErrNotFound) {
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	if rec.Username != u.GetName() || rec.UserUID != u.GetUID() {
		return nil, missing
	}
	return planOf(rec)
}

// NamedListOptions select a page of the restores or plans the caller
// created as objects.
type NamedListOptions struct {
	// Namespace, when set, is the only namespace ("" for cluster-scoped
	// ones); Namespaced leaves out cluster-scoped ones.
	Namespace  *string
	Namespaced bool
	// Restores lists restores (executions included); false lists plans.
	Restores bool
	Limit    int
	// Continue is the Next of the previous page.
	Continue string
}

// NamedList lists a page of the restores (or plans) the caller created as
// objects, newest first, and the Continue of the next page ("" at the end).
func (s *Service) NamedList(ctx context.Context, o NamedListOptions) ([]*Plan, string, error) {
	u := history.Caller(ctx)
	q := store.NamedRestoreQuery{Cluster: s.cluster, Username: u.GetName(), Namespace: o.Namespace,
		Namespaced: o.Namespaced, Restores: &o.Restores, Limit: o.Limit + 1}
	if o.Continue != "" {
		at, id, ok := parseNamedCursor(o.Continue)
		if !ok {
			return nil, "", fmt.Errorf("%w: continue %q is not a cursor of this list", errs.ErrInvalid, o.Continue)
		}
		q.AfterAt, q.AfterID = at, id
	}
	recs, err := s.restoresLog().NamedRestores(ctx, q)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(recs) > o.Limit {
		recs = recs[:o.Limit]
		last := recs[len(recs)-1]
		next = namedCursor(last.CreatedAt, last.ID)
	}
	var out []*Plan
	for i := range recs {
		if recs[i].UserUID != "" && recs[i].UserUID != u.GetUID() {
			continue // another user of the same name (a ServiceAccount made again)
		}
		p, err := planOf(&recs[i])
		if err != nil {
			return nil, "", err
		}
		out = append(out, p)
	}
	return out, next, nil
}

// namedCursor is the position after a row of NamedList: its creation time
// (microseconds) and id. It holds nothing the caller has not seen.
func namedCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "." + id))
}

func parseNamedCursor(c string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	us, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || len(id) != 36 {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n), id, true
}

// Bounds of a plan request: its lists, before anything is loaded.
const (
	maxPlanNamespaces = 100 // namespaces of one plan
	maxPlanResources  = 50  // resources of one plan
)

// selection filters the objects of a plan.
type selection struct {
	resources map[GroupResource]bool
	names     map[string]bool
}

func (s *Service) newSelection(req *PlanRequest) (selection, error) {
	sel := selection{}
	switch {
	case len(req.Resources) > maxPlanResources:
		return sel, fmt.Errorf("%w: %d resources in one plan, more than %d", errs.ErrInvalid, len(req.Resources), maxPlanResources)
	case len(req.Names) > s.maxSteps:
		return sel, fmt.Errorf("%w: %d names in one plan, more than %d", errs.ErrInvalid, len(req.Names), s.maxSteps)
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
//     by MaxPlanSteps; a step's stored object is loaded only while it is
//     planned.

// planAsOf plans putting the selected namespaces back as they were at
// req.At: every object that existed then gets its state back (create or
// update); objects recorded as created since are deleted.
func (s *Service) planAsOf(ctx context.Context, cluster string, req *PlanRequest) ([]Step, error) {
	if req.At == nil || req.At.IsZero() {
		return nil, fmt.Errorf("%w: as-of needs at (an RFC 3339 time)", errs.ErrInvalid)
	}
	now := time.Now()
	if req.At.After(now) {
		return nil, fmt.Errorf("%w: at (%s) is in the future", errs.ErrInvalid, req.At.Format(time.RFC3339))
	}
	if len(req.Namespaces) == 0 {
		return nil, fmt.Errorf("%w: as-of needs namespaces (\"\" for cluster-scoped objects, with resources)", errs.ErrInvalid)
	}
	if req.User != "" || req.Since != nil || req.Until != nil {
		return nil, fmt.Errorf("%w: user, since and until are for kind undo", errs.ErrInvalid)
	}
	sel, err := s.newSelection(req)
	if err != nil {
		return nil, err
	}
	var namespaces []string
	for _, ns := range req.Namespaces {
		if !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	// Before the record is read: the caller may list and get what the plan
	// covers.
	rf := s.history.ReadFilter(ctx)
	for _, ns := range namespaces {
		if ns == "" && sel.resources == nil {
			return nil, fmt.Errorf("%w: restoring every cluster-scoped object is not supported: name the resources to restore", errs.ErrInvalid)
		}
		if sel.resources == nil {
			// The Namespace object, authorized in itself.
			if err := rf.Check("", "namespaces", ns); err != nil {
				return nil, err
			}
			continue
		}
		for _, gr := range sel.storeResources() {
			for _, verb := range []string{"list", "get"} {
				if err := rf.CheckVerb(verb, gr.Group, gr.Resource, ns); err != nil {
					return nil, err
				}
			}
		}
	}
	var targets, existing []store.VersionRecord
	load := func(q store.AsOfQuery, into *[]store.VersionRecord) error {
		q.Cluster, q.Limit = cluster, s.maxSteps+1
		if q.Names == nil {
			q.Names = sel.storeNames()
		}
		vs, err := s.reader.ObjectsAsOf(ctx, q)
		if err != nil {
			return err
		}
		for i := range vs {
			if sel.has(&vs[i]) {
				*into = append(*into, vs[i])
			}
		}
		if len(*into) > s.maxSteps {
			return s.tooManySteps(len(*into))
		}
		return nil
	}
	for _, ns := range namespaces {
		resources := sel.storeResources()
		if resources == nil {
			// What the caller may list and get of what is recorded there.
			recorded, err := s.reader.ResourcesIn(ctx, cluster, ns, now, history.MaxChecks)
			if err != nil {
				return nil, err
			}
			resources = []store.GroupResource{}
			for _, gr := range recorded {
				ok, err := rf.AllowedVerbs(gr.Group, gr.Resource, ns, "list", "get")
				if err != nil {
					return nil, err
				}
				if ok {
					resources = append(resources, gr)
				}
			}
		}
		if len(resources) > 0 {
			if err := load(store.AsOfQuery{Namespace: ns, At: *req.At, Resources: resources}, &targets); err != nil {
				return nil, err
			}
			if err := load(store.AsOfQuery{Namespace: ns, At: now, Resources: resources}, &existing); err != nil {
				return nil, err
			}
		}
		if ns != "" && sel.hasResource("", "namespaces") && (sel.names == nil || sel.names[ns]) {
			if err := load(store.AsOfQuery{At: *req.At, Resources: []store.GroupResource{{Resource: "namespaces"}}, Names: []string{ns}}, &targets); err != nil {
				return nil, err
			}
		}
	}
	// Objects recorded as existing now but not then were created since.
	inTarget := map[string]bool{}
	names := map[string]bool{}
	for i := range targets {
		inTarget[targets[i].UID] = true
		names[nameKey(refOf(&targets[i]))] = true
	}
	var deletes []store.VersionRecord
	for i := range existing {
		v := &existing[i]
		if !inTarget[v.UID] && !names[nameKey(refOf(v))] && v.Resource != "namespaces" {
			deletes = append(deletes, *v)
		}
	}
	return s.planSteps(ctx, cluster, targets, deletes, nil, *req.At)
}

func (s *Service) tooManySteps(n int) error {
	return fmt.Errorf("%w: the plan would cover more than %d objects (%d or more): narrow it (namespaces, resources, names, since/until)", errs.ErrInvalid, s.maxSteps, n)
}

// defaultMaxUndoRows bounds the changes an undo plan reads.
const defaultMaxUndoRows = 20000

// undoScanFactor bounds the rows an undo plan scans, hidden ones included,
// as a multiple of its cap.
const undoScanFactor = 10

// planUndo plans reverting what req.User changed between since and until:
// every object they changed gets the state it had before their first change
// in the range (deleted when they created it).
func (s *Service) planUndo(ctx context.Context, cluster string, req *PlanRequest) ([]Step, error) {
	if req.User == "" || req.Since == nil {
		return nil, fmt.Errorf("%w: undo needs user and since", errs.ErrInvalid)
	}
	if req.At != nil {
		return nil, fmt.Errorf("%w: at is for kind as-of", errs.ErrInvalid)
	}
	until := time.Now()
	if req.Until != nil {
		until = *req.Until
	}
	if !req.Since.Before(until) {
		return nil, fmt.Errorf("%w: since must be before until", errs.ErrInvalid)
	}
	sel, err := s.newSelection(req)
	if err != nil {
		return nil, err
	}
	rf := s.history.ReadFilter(ctx)
	// Named namespaces and resources: the caller may read them, before
	// anything is read.
	if sel.resources != nil && len(req.Namespaces) > 0 {
		for _, ns := range req.Namespaces {
			for _, gr := range sel.storeResources() {
				if err := rf.Check(gr.Group, gr.Resource, ns); err != nil {
					return nil, err
				}
			}
		}
	}
	first := map[string]store.VersionRecord{}
	last := map[string]store.VersionRecord{}
	var order []string
	q := store.ChangeQuery{Cluster: cluster, User: req.User, Since: *req.Since, Until: until, Ascending: true, Limit: 500,
		Resources: sel.storeResources(), Names: sel.storeNames(), ChangesOnly: true}
	if len(req.Namespaces) > 0 {
		q.Namespaces = req.Namespaces
	}
	// The cap counts the changes the caller may read: the ones they may not
	// must not refuse (or let through) a plan. Scanning past hidden rows is
	// bounded too, as a list's scan is (history.MaxScanRows): a range that
	// holds more than undoScanFactor times the cap is refused, whoever's
	// rows they are.
	for scanned, read := 0, 0; ; {
		rows, err := s.reader.Changes(ctx, q)
		if err != nil {
			return nil, err
		}
		if scanned += len(rows); scanned > undoScanFactor*s.maxUndo {
			return nil, fmt.Errorf("%w: more than %d changes to scan in this range: narrow it (namespaces, resources, names, since/until)", errs.ErrInvalid, undoScanFactor*s.maxUndo)
		}
		for i := range rows {
			v := rows[i]
			if v.Origin != "change" || v.ResponseCode >= 300 || !sel.has(&v) {
				continue
			}
			ok, err := rf.Allowed(history.AuthzTarget(&v))
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // not the caller's to see: left out, unnamed
			}
			if read++; read > s.maxUndo {
				return nil, fmt.Errorf("%w: more than %d changes of %s in this range: narrow it (namespaces, resources, names, since/until)", errs.ErrInvalid, s.maxUndo, req.User)
			}
			if _, ok := first[v.UID]; !ok {
				first[v.UID] = v
				order = append(order, v.UID)
				if len(order) > s.maxSteps {
					return nil, s.tooManySteps(len(order))
				}
			}
			last[v.UID] = v
		}
		if len(rows) < q.Limit {
			break
		}
		l := rows[len(rows)-1]
		q.After = &store.Cursor{At: l.ChangedAt, UID: l.UID, Key: l.Key}
	}
	var targets []store.VersionRecord
	undo := map[string]*undoInfo{}
	for _, uid := range order {
		f, l := first[uid], last[uid]
		info := &undoInfo{first: &f, last: &l}
		prior, err := s.reader.StateBefore(ctx, &f)
		switch {
		case errors.Is(err, store.ErrNotFound):
			info.unknownPrior = true
			targets = append(targets, f)
		case err != nil:
			return nil, err
		case prior == nil: // they created it: undo deletes it
			info.absent = true
			targets = append(targets, f)
		default:
			// The body is loaded again while the step is planned: the
			// plan holds metadata only.
			p := *prior
			p.Object = nil
			targets = append(targets, p)
		}
		undo[uid] = info
	}
	return s.planSteps(ctx, cluster, targets, nil, undo, time.Time{})
}

// undoInfo is what an undo plan knows of one object.
type undoInfo struct {
	first, last  *store.VersionRecord
	absent       bool // the user created it: the target is its absence
	unknownPrior bool
}

func nameKey(o ObjectRef) string {
	return o.Group + "/" + o.Resource + "/" + o.Namespace + "/" + o.Name
}
