package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

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
	w.Header().Set("Location", p.Execute[:len(p.Execute)-len("/execute")])
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
	if u := caller(r.Context()); rec.Username != u.GetName() {
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
	return s.planSteps(ctx, cluster, targets, deletes, nil)
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
	return s.planSteps(ctx, cluster, targets, nil, undo)
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

// planSteps checks the caller may read every object involved, looks at
// the live objects as the caller, and orders the steps.
func (s *Server) planSteps(ctx context.Context, cluster string, targets, deletes []store.VersionRecord, undo map[string]*undoInfo) ([]Step, error) {
	if n := len(targets) + len(deletes); n > s.maxSteps {
		return nil, fmt.Errorf("%w: the plan would have %d steps, more than %d: narrow it (resources, names)", ErrInvalid, n, s.maxSteps)
	}
	rf := s.readFilter(ctx)
	for _, set := range [][]store.VersionRecord{targets, deletes} {
		for i := range set {
			v := &set[i]
			if err := rf.s.authorizeCached(rf, v); err != nil {
				return nil, err
			}
		}
	}
	c, err := s.kube.as(caller(ctx))
	if err != nil {
		return nil, err
	}
	targetUIDs := map[string]bool{}
	for i := range targets {
		targetUIDs[targets[i].UID] = true
	}
	deleteUIDs := map[string]bool{}
	for i := range deletes {
		deleteUIDs[deletes[i].UID] = true
	}
	steps := make([]Step, len(targets)+len(deletes))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range targets {
		g.Go(func() error {
			var info *undoInfo
			if undo != nil {
				info = undo[targets[i].UID]
			}
			st, err := s.planTarget(gctx, c, &targets[i], info, targetUIDs)
			steps[i] = st
			return err
		})
	}
	for i := range deletes {
		g.Go(func() error {
			st, err := s.planDelete(gctx, c, &deletes[i], deleteUIDs)
			steps[len(targets)+i] = st
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	steps = orderSteps(steps)
	for i := range steps {
		steps[i].Index = i
	}
	return steps, nil
}

func (s *Server) authorizeCached(rf *readFilter, v *store.VersionRecord) error {
	k := v.APIGroup + "\x00" + v.Resource + "\x00" + v.Namespace
	err, ok := rf.cache[k]
	if !ok {
		err = s.authorize(rf.ctx, "get", v.APIGroup, v.Resource, v.Namespace, "")
		rf.cache[k] = err
	}
	return err
}

// managedByCluster says whether the cluster re-creates an object by itself.
func managedByCluster(v *store.VersionRecord) string {
	switch {
	case v.APIGroup == "" && v.Resource == "events", v.APIGroup == "events.k8s.io":
		return "events are not restored"
	case v.APIGroup == "" && v.Resource == "serviceaccounts" && v.Name == "default":
		return "the cluster creates each namespace's default ServiceAccount"
	case v.APIGroup == "" && v.Resource == "configmaps" && v.Name == "kube-root-ca.crt":
		return "the cluster publishes kube-root-ca.crt in each namespace"
	}
	return ""
}

// ownersOf reads the ownerReferences of a stored or live object.
func ownersOf(obj map[string]any) (uids []string, controller *OwnerReference) {
	refs, _, _ := unstructured.NestedSlice(obj, "metadata", "ownerReferences")
	for _, r := range refs {
		m, _ := r.(map[string]any)
		uid, _ := m["uid"].(string)
		if uid == "" {
			continue
		}
		uids = append(uids, uid)
		if isCtl, _ := m["controller"].(bool); isCtl {
			ref := OwnerReference{UID: uid, Controller: true}
			ref.APIVersion, _ = m["apiVersion"].(string)
			ref.Kind, _ = m["kind"].(string)
			ref.Name, _ = m["name"].(string)
			controller = &ref
		}
	}
	return uids, controller
}

// planTarget plans giving one object the state t (or, for an undo of a
// create, its absence).
func (s *Server) planTarget(ctx context.Context, c dynamic.Interface, t *store.VersionRecord, undo *undoInfo, targetUIDs map[string]bool) (Step, error) {
	src := versionOf(t)
	src.Object = nil
	st := Step{Object: refOf(t), Source: &src}
	live, err := getLive(ctx, c, st.Object)
	if err != nil {
		if code, _, fromCluster := errorStatus(err); fromCluster && code < 500 {
			st.Action, st.Reason = ActionRefuse, err.Error()
			return st, nil
		}
		return st, err
	}
	if live != nil {
		st.Live = &LiveRef{UID: string(live.GetUID()), ResourceVersion: live.GetResourceVersion()}
	}
	if undo != nil {
		if w := s.laterChanges(ctx, undo); w != "" {
			st.Warnings = append(st.Warnings, w)
		}
		switch {
		case undo.unknownPrior:
			st.Source = nil
			st.Action, st.Reason = ActionRefuse, fmt.Sprintf("the record holds no state before %s's first change (%s at %s)",
				undo.first.Username, undo.first.Verb, undo.first.ChangedAt.UTC().Format(time.RFC3339))
			return st, nil
		case undo.absent:
			st.Source = nil
			switch {
			case live == nil:
				st.Action, st.Reason = ActionNone, "already gone"
			case string(live.GetUID()) != t.UID:
				st.Action, st.Reason = ActionSkip, fmt.Sprintf("re-created since %s created it (uid now %s): left alone", undo.first.Username, live.GetUID())
			default:
				st.Action, st.Reason = ActionDelete, undo.first.Username+" created it"
				st.Owners, _ = ownersOf(live.Object)
			}
			return st, nil
		}
	}
	if why := managedByCluster(t); why != "" {
		st.Action, st.Reason = ActionSkip, why
		return st, nil
	}
	if err := restorable(t); err != nil {
		st.Action, st.Reason = ActionRefuse, err.Error()
		return st, nil
	}
	obj, err := decodeObject(t.Object)
	if err != nil {
		return st, err
	}
	var ctl *OwnerReference
	st.Owners, ctl = ownersOf(obj)
	if ctl != nil && live == nil {
		exists := targetUIDs[ctl.UID]
		if !exists {
			_, exists, _ = s.kube.ownerCheck(ctx, c, t.Namespace, nil)(*ctl)
		}
		if exists {
			st.Action, st.Reason = ActionSkip, fmt.Sprintf("its controller %s %s re-creates it", ctl.Kind, ctl.Name)
			return st, nil
		}
	}
	if t.Stale {
		st.Warnings = append(st.Warnings, "a subresource write (such as /scale) changed the object after this state without recording it")
	}
	if live == nil {
		st.Action = ActionCreate
		return st, nil
	}
	if string(live.GetUID()) != t.UID {
		st.Warnings = append(st.Warnings, fmt.Sprintf("the live object is another incarnation (uid %s): it gets this state", live.GetUID()))
	}
	m, err := CleanManifest(obj, func(OwnerReference) (string, bool, string) { return "", true, "" })
	if err != nil {
		return st, err
	}
	changes := compareLive(live.Object, m)
	if len(changes) == 0 {
		st.Action, st.Reason = ActionNone, "the live object already holds this state"
		return st, nil
	}
	st.Action = ActionUpdate
	if len(changes) > maxShownChanges {
		st.Warnings = append(st.Warnings, strconv.Itoa(len(changes))+" changes, the first "+strconv.Itoa(maxShownChanges)+" shown")
		changes = changes[:maxShownChanges]
	}
	st.Changes = changes
	return st, nil
}

// laterChanges warns when someone changed the object after the user whose
// changes an undo reverts.
func (s *Server) laterChanges(ctx context.Context, u *undoInfo) string {
	n, err := s.reader.Newest(ctx, u.last.Cluster, u.last.APIGroup, u.last.Resource, u.last.Namespace, u.last.Name)
	if err != nil || string(n.Key) == string(u.last.Key) || !n.ChangedAt.After(u.last.ChangedAt) {
		return ""
	}
	return fmt.Sprintf("changed after %s's last change, by %s (%s at %s): undoing reverts that too",
		u.last.Username, orNone(n.Username), n.Verb, n.ChangedAt.UTC().Format(time.RFC3339))
}

// planDelete plans deleting an object created after the as-of time.
func (s *Server) planDelete(ctx context.Context, c dynamic.Interface, v *store.VersionRecord, deleting map[string]bool) (Step, error) {
	st := Step{Object: refOf(v)}
	live, err := getLive(ctx, c, st.Object)
	if err != nil {
		if code, _, fromCluster := errorStatus(err); fromCluster && code < 500 {
			st.Action, st.Reason = ActionRefuse, err.Error()
			return st, nil
		}
		return st, err
	}
	switch {
	case live == nil:
		st.Action, st.Reason = ActionNone, "already gone"
		return st, nil
	case string(live.GetUID()) != v.UID:
		st.Action, st.Reason = ActionSkip, fmt.Sprintf("the live object (uid %s) is not the one recorded: left alone", live.GetUID())
		return st, nil
	}
	st.Live = &LiveRef{UID: string(live.GetUID()), ResourceVersion: live.GetResourceVersion()}
	var ctl *OwnerReference
	st.Owners, ctl = ownersOf(live.Object)
	if ctl != nil && deleting[ctl.UID] {
		st.Action, st.Reason = ActionSkip, fmt.Sprintf("the garbage collector deletes it with its controller %s %s", ctl.Kind, ctl.Name)
		return st, nil
	}
	if why := managedByCluster(v); why != "" {
		st.Action, st.Reason = ActionSkip, why
		return st, nil
	}
	st.Action, st.Reason = ActionDelete, "created after the time restored to"
	return st, nil
}

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
