package planner

// Planning each object's step: what the live object and the record say to do.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/digest"
	"github.com/options-record/options-record/api/restore/manifest"
	"github.com/options-record/options-record/api/restore/restorable"
	"github.com/options-record/options-record/store"
)

// planSteps checks the caller may read every object involved, looks at
// the live objects as the caller, and orders the steps.
// createdAfter, when set (as-of plans), is the time an object to delete must
// have been created after: one that already existed then is left alone.
func (p *Planner) planSteps(ctx context.Context, cluster string, targets, deletes []store.VersionRecord, undo map[string]*undoInfo, createdAfter time.Time) ([]Step, error) {
	if n := len(targets) + len(deletes); n > p.maxSteps {
		return nil, p.tooManySteps(n)
	}
	// The planners keep only what the caller may read; this is the last
	// word, and its refusal names no object.
	rf := p.history.ReadFilter(ctx)
	for _, set := range [][]store.VersionRecord{targets, deletes} {
		for i := range set {
			ok, err := rf.Allowed(history.AuthzTarget(&set[i]))
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%w: the plan would cover objects you may not read", errs.ErrForbidden)
			}
		}
	}
	c, err := p.kube.As(history.Caller(ctx))
	if err != nil {
		return nil, err
	}
	live, err := listLive(ctx, c, rf, targets, deletes)
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
	// The targets' states are loaded a batch at a time (one query, not one
	// a step: 5,000 single loads took seconds) and each is let go of once
	// its step is planned, so a plan holds a batch and the steps in flight.
	for start := 0; start < len(targets); start += LoadBatch {
		batch := targets[start:min(start+LoadBatch, len(targets))]
		if err := p.loadObjects(gctx, cluster, batch); err != nil {
			// A failed step cancels gctx: its error is the one to tell.
			if werr := g.Wait(); werr != nil {
				return nil, werr
			}
			return nil, err
		}
		for i := start; i < start+len(batch); i++ {
			g.Go(func() error {
				var info *undoInfo
				if undo != nil {
					info = undo[targets[i].UID]
				}
				st, err := p.planTarget(gctx, c, live, &targets[i], info, targetUIDs)
				targets[i].Object = nil
				steps[i] = st
				return err
			})
		}
	}
	for i := range deletes {
		g.Go(func() error {
			st, err := p.planDelete(gctx, c, live, &deletes[i], deleteUIDs, createdAfter)
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

// LoadBatch is how many states a plan loads in one query.
const LoadBatch = 50

// loadObjects loads the stored objects of the versions that have one and
// are not loaded yet.
func (p *Planner) loadObjects(ctx context.Context, cluster string, vs []store.VersionRecord) error {
	var uids []string
	var keys [][]byte
	for i := range vs {
		if vs[i].HasObject && vs[i].Object == nil {
			uids, keys = append(uids, vs[i].UID), append(keys, vs[i].Key)
		}
	}
	if len(uids) == 0 {
		return nil
	}
	objs, err := p.reader.Objects(ctx, cluster, uids, keys)
	if err != nil {
		return err
	}
	for i := range vs {
		if obj, ok := objs[store.ObjectID(vs[i].UID, vs[i].Key)]; ok && vs[i].Object == nil {
			vs[i].Object = obj
		}
	}
	return nil
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
func ownersOf(obj map[string]any) (uids []string, controller *manifest.OwnerReference) {
	refs, _, _ := unstructured.NestedSlice(obj, "metadata", "ownerReferences")
	for _, r := range refs {
		m, _ := r.(map[string]any)
		uid, _ := m["uid"].(string)
		if uid == "" {
			continue
		}
		uids = append(uids, uid)
		if isCtl, _ := m["controller"].(bool); isCtl {
			ref := manifest.OwnerReference{UID: uid, Controller: true}
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
func (p *Planner) planTarget(ctx context.Context, c dynamic.Interface, lv liveObjects, t *store.VersionRecord, undo *undoInfo, targetUIDs map[string]bool) (Step, error) {
	src := history.VersionOf(t)
	src.Object = nil
	st := Step{Object: restorable.Ref(t), Source: &src}
	live, err := lv.get(ctx, c, st.Object)
	if err != nil {
		if code, _, fromCluster := errs.Status(err); fromCluster && code < 500 {
			st.Action, st.Reason = ActionRefuse, err.Error()
			return st, nil
		}
		return st, err
	}
	if live != nil {
		st.Live = &LiveRef{UID: string(live.GetUID()), ResourceVersion: live.GetResourceVersion()}
	}
	if undo != nil {
		if w := p.laterChanges(ctx, undo); w != "" {
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
	if t.Object == nil && t.HasObject {
		// Plans read metadata: the stored object is loaded for this step
		// only, and let go with it.
		full, err := p.reader.Version(ctx, t.Cluster, t.UID, t.Key)
		if err != nil {
			return st, fmt.Errorf("load version %s/%x: %w", t.UID, t.Key, err)
		}
		full.Stale = t.Stale
		t = full
	}
	if err := restorable.Check(t); err != nil {
		st.Action, st.Reason = ActionRefuse, err.Error()
		return st, nil
	}
	st.StateDigest = digest.Of(t.Object)
	obj, err := history.DecodeObject(t.Object)
	if err != nil {
		return st, err
	}
	var ctl *manifest.OwnerReference
	st.Owners, ctl = ownersOf(obj)
	if ctl != nil {
		exists := targetUIDs[ctl.UID]
		if !exists {
			_, exists, _ = p.kube.OwnerCheck(ctx, c, t.Namespace, nil)(*ctl)
		}
		switch {
		case exists && live == nil:
			st.Action, st.Reason = ActionSkip, fmt.Sprintf("its controller %s %s re-creates it", ctl.Kind, ctl.Name)
			return st, nil
		case exists:
			// Written directly, the controller would undo it (an old
			// ReplicaSet's replicas): the controller's own state is what
			// restores it.
			st.Action, st.Reason = ActionSkip, fmt.Sprintf("its controller %s %s manages it: restoring the controller restores it", ctl.Kind, ctl.Name)
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
	m, err := restorable.Manifest(t, obj, func(manifest.OwnerReference) (string, bool, string) { return "", true, "" })
	if err != nil {
		return st, err
	}
	changes := restorable.Changes(live.Object, m)
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
func (p *Planner) laterChanges(ctx context.Context, u *undoInfo) string {
	n, err := p.reader.Newest(ctx, u.last.Cluster, u.last.APIGroup, u.last.Resource, u.last.Namespace, u.last.Name)
	if err != nil || string(n.Key) == string(u.last.Key) || !n.ChangedAt.After(u.last.ChangedAt) {
		return ""
	}
	return fmt.Sprintf("changed after %s's last change, by %s (%s at %s): undoing reverts that too",
		u.last.Username, restorable.Author(n), n.Verb, n.ChangedAt.UTC().Format(time.RFC3339))
}

// planDelete plans deleting an object created after the as-of time.
func (p *Planner) planDelete(ctx context.Context, c dynamic.Interface, lv liveObjects, v *store.VersionRecord, deleting map[string]bool, createdAfter time.Time) (Step, error) {
	st := Step{Object: restorable.Ref(v)}
	live, err := lv.get(ctx, c, st.Object)
	if err != nil {
		if code, _, fromCluster := errs.Status(err); fromCluster && code < 500 {
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
	// Not recorded as existing then is not proof of being created since: the
	// record may start later (a baseline taken after that time, a first
	// change with no prior state). The apiserver's creationTimestamp says.
	if created := live.GetCreationTimestamp(); !createdAfter.IsZero() && !created.After(createdAfter) {
		// creationTimestamp has whole seconds: in the same second as the
		// time restored to, it may have been created just after it.
		why := "it existed at %s (created %s) but the record holds no state of it from then: left alone"
		if created.Time.Equal(createdAfter.Truncate(time.Second)) {
			why = "created in the same second as %s (at %s), whether before or after cannot be told: left alone"
		}
		st.Action, st.Reason = ActionRefuse, fmt.Sprintf(why, createdAfter.UTC().Format(time.RFC3339Nano), created.UTC().Format(time.RFC3339))
		return st, nil
	}
	var ctl *manifest.OwnerReference
	st.Owners, ctl = ownersOf(live.Object)
	switch {
	case ctl != nil && deleting[ctl.UID]:
		st.Action, st.Reason = ActionSkip, fmt.Sprintf("the garbage collector deletes it with its controller %s %s", ctl.Kind, ctl.Name)
		return st, nil
	case ctl != nil:
		// A ReplicaSet of a rollout since: restoring its Deployment
		// scales it away; deleting it would kill its pods at once.
		st.Action, st.Reason = ActionSkip, fmt.Sprintf("its controller %s %s manages it: restoring the controller restores it", ctl.Kind, ctl.Name)
		return st, nil
	}
	if why := managedByCluster(v); why != "" {
		st.Action, st.Reason = ActionSkip, why
		return st, nil
	}
	st.Action, st.Reason = ActionDelete, "created after the time restored to"
	return st, nil
}
