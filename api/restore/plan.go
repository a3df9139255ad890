package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/options-record/options-record/store"
)

// Plan kinds.
const (
	KindAsOf = "as-of"
	KindUndo = "undo"
)

// maxShownChanges bounds the changes a plan step shows for review.
const maxShownChanges = 50

func (s *Server) createPlan(w http.ResponseWriter, r *http.Request) error {
	if s.kube == nil {
		return errStandalone
	}
	if r.ContentLength == 0 {
		return fmt.Errorf("%w: send the plan request as a JSON body", ErrInvalid)
	}
	var req PlanRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	ctx := r.Context()
	cluster := chi.URLParam(r, "cluster")
	var steps []Step
	var err error
	switch req.Kind {
	case KindAsOf:
		steps, err = s.planAsOf(ctx, cluster, &req)
	case KindUndo:
		steps, err = s.planUndo(ctx, cluster, &req)
	default:
		return fmt.Errorf("%w: kind %q: want %q or %q", ErrInvalid, req.Kind, KindAsOf, KindUndo)
	}
	if err != nil {
		return err
	}
	reqJSON, _ := json.Marshal(req)
	planJSON, err := json.Marshal(steps)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	u := caller(ctx)
	var extra []byte
	if e := u.GetExtra(); len(e) > 0 {
		extra, _ = json.Marshal(e)
	}
	rec, err := s.restores.InsertRestore(ctx, &store.RestoreRecord{
		Cluster: s.cluster, Kind: req.Kind, Username: u.GetName(), UserUID: u.GetUID(), UserGroups: u.GetGroups(),
		UserExtra: extra, Request: reqJSON, Plan: planJSON, State: store.RestorePlanned,
	})
	if err != nil {
		return err
	}
	p, err := planOf(rec)
	if err != nil {
		return err
	}
	s.log.Info("restore planned", "user", u.GetName(), "kind", req.Kind, "restore_id", rec.ID, "steps", len(steps))
	w.Header().Set("Location", clusterPath(rec.Cluster)+"/restore-plans/"+rec.ID)
	return respond(w, r, http.StatusCreated, p)
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.ownPlan(r)
	if err != nil {
		return err
	}
	p, err := planOf(rec)
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, p)
}

// ownPlan loads the plan of the path; only its author may see it.
func (s *Server) ownPlan(r *http.Request) (*store.RestoreRecord, error) {
	id := chi.URLParam(r, "id")
	rec, err := s.restoresLog().Restore(r.Context(), chi.URLParam(r, "cluster"), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no restore plan %q", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	// The author is the user and, when the authenticator gives one, its
	// uid: a ServiceAccount deleted and made again under the same name is
	// another author (and may have other rights).
	if u := caller(r.Context()); rec.Username != u.GetName() || rec.UserUID != "" && rec.UserUID != u.GetUID() {
		return nil, fmt.Errorf("%w: restore plan %s was made by %q: only its author may read or execute it", ErrForbidden, id, rec.Username)
	}
	return rec, nil
}

func (s *Server) restoresLog() RestoreLog {
	if s.restores == nil {
		return noRestores{}
	}
	return s.restores
}

// noRestores is the restore log of the standalone mode: there are none.
type noRestores struct{}

func (noRestores) InsertRestore(context.Context, *store.RestoreRecord) (*store.RestoreRecord, error) {
	return nil, errStandalone
}
func (noRestores) Restore(_ context.Context, _, id string) (*store.RestoreRecord, error) {
	return nil, fmt.Errorf("restore %s: %w", id, store.ErrNotFound)
}
func (noRestores) ClaimRestore(context.Context, string, string) (*store.RestoreRecord, error) {
	return nil, errStandalone
}
func (noRestores) FinishRestore(context.Context, string, string, string, []byte) error {
	return errStandalone
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
	id := rec.ID
	if rec.PlanID != nil {
		id = *rec.PlanID
	}
	p.Execute = clusterPath(rec.Cluster) + "/restore-plans/" + id + "/execute"
	return p, nil
}

// selection filters the objects of a plan.
type selection struct {
	resources map[GroupResource]bool
	names     map[string]bool
}

func newSelection(req *PlanRequest) (selection, error) {
	sel := selection{}
	for _, gr := range req.Resources {
		if gr.Resource == "" {
			return sel, fmt.Errorf("%w: resources: an entry without resource", ErrInvalid)
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

// maxPlanNamespaces bounds the namespaces of one as-of plan.
const maxPlanNamespaces = 100

// planAsOf plans putting the selected namespaces back as they were at
// req.At: every object that existed then gets its state back (create or
// update); objects recorded as created since are deleted.
func (s *Server) planAsOf(ctx context.Context, cluster string, req *PlanRequest) ([]Step, error) {
	if req.At == nil || req.At.IsZero() {
		return nil, fmt.Errorf("%w: as-of needs at (an RFC 3339 time)", ErrInvalid)
	}
	if req.At.After(time.Now()) {
		return nil, fmt.Errorf("%w: at (%s) is in the future", ErrInvalid, req.At.Format(time.RFC3339))
	}
	if len(req.Namespaces) == 0 {
		return nil, fmt.Errorf("%w: as-of needs namespaces (\"\" for cluster-scoped objects, with resources)", ErrInvalid)
	}
	if req.User != "" || req.Since != nil || req.Until != nil {
		return nil, fmt.Errorf("%w: user, since and until are for kind undo", ErrInvalid)
	}
	sel, err := newSelection(req)
	if err != nil {
		return nil, err
	}
	if len(req.Namespaces) > maxPlanNamespaces {
		return nil, fmt.Errorf("%w: %d namespaces in one plan, more than %d", ErrInvalid, len(req.Namespaces), maxPlanNamespaces)
	}
	// Before the record is read: the caller may read what the plan covers
	// (each object is checked again when planned), so a caller with no
	// rights cannot make the sink load whole namespaces.
	rf := s.readFilter(ctx)
	for _, ns := range req.Namespaces {
		if sel.resources != nil {
			for gr := range sel.resources {
				if err := rf.check(gr.Group, gr.Resource, ns); err != nil {
					return nil, err
				}
			}
		} else if err := rf.check("", "namespaces", ns); err != nil { // the Namespace object, authorized in itself
			return nil, err
		}
	}
	var targets, existing []store.VersionRecord
	var clusterScoped []store.VersionRecord
	seenNS := map[string]bool{}
	for _, ns := range req.Namespaces {
		if seenNS[ns] {
			continue
		}
		seenNS[ns] = true
		if ns == "" && sel.resources == nil {
			return nil, fmt.Errorf("%w: restoring every cluster-scoped object is not supported: name the resources to restore", ErrInvalid)
		}
		then, err := s.reader.AsOf(ctx, cluster, ns, *req.At)
		if err != nil {
			return nil, err
		}
		now, err := s.reader.AsOf(ctx, cluster, ns, time.Now())
		if err != nil {
			return nil, err
		}
		for i := range then {
			if sel.has(&then[i]) {
				targets = append(targets, then[i])
			}
		}
		for i := range now {
			if sel.has(&now[i]) {
				existing = append(existing, now[i])
			}
		}
		if ns != "" && sel.hasResource("", "namespaces") {
			if clusterScoped == nil {
				if clusterScoped, err = s.reader.AsOf(ctx, cluster, "", *req.At); err != nil {
					return nil, err
				}
			}
			for i := range clusterScoped {
				if v := &clusterScoped[i]; v.APIGroup == "" && v.Resource == "namespaces" && v.Name == ns {
					targets = append(targets, *v)
				}
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

// planUndo plans reverting what req.User changed between since and until:
// every object they changed gets the state it had before their first change
// in the range (deleted when they created it).
func (s *Server) planUndo(ctx context.Context, cluster string, req *PlanRequest) ([]Step, error) {
	if req.User == "" || req.Since == nil {
		return nil, fmt.Errorf("%w: undo needs user and since", ErrInvalid)
	}
	if req.At != nil {
		return nil, fmt.Errorf("%w: at is for kind as-of", ErrInvalid)
	}
	until := time.Now()
	if req.Until != nil {
		until = *req.Until
	}
	if !req.Since.Before(until) {
		return nil, fmt.Errorf("%w: since must be before until", ErrInvalid)
	}
	sel, err := newSelection(req)
	if err != nil {
		return nil, err
	}
	inNS := map[string]bool{}
	for _, ns := range req.Namespaces {
		inNS[ns] = true
	}
	first := map[string]*store.VersionRecord{}
	last := map[string]*store.VersionRecord{}
	var order []string
	q := store.ChangeQuery{Cluster: cluster, User: req.User, Since: *req.Since, Until: until, Ascending: true, Limit: 500}
	for {
		rows, err := s.reader.Changes(ctx, q)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			v := &rows[i]
			if v.Origin != "change" || v.ResponseCode >= 300 || !sel.has(v) || (len(inNS) > 0 && !inNS[v.Namespace]) {
				continue
			}
			if _, ok := first[v.UID]; !ok {
				first[v.UID] = v
				order = append(order, v.UID)
				if len(order) > s.maxSteps {
					return nil, fmt.Errorf("%w: %s changed more than %d objects in this range: narrow it (namespaces, resources, names, since/until)", ErrInvalid, req.User, s.maxSteps)
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
		f := first[uid]
		info := &undoInfo{first: f, last: last[uid]}
		prior, err := s.reader.StateBefore(ctx, f)
		switch {
		case errors.Is(err, store.ErrNotFound):
			info.unknownPrior = true
			targets = append(targets, *f)
		case err != nil:
			return nil, err
		case prior == nil: // they created it: undo deletes it
			info.absent = true
			targets = append(targets, *f)
		default:
			targets = append(targets, *prior)
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
