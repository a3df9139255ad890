package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/dynamic"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/digest"
	"github.com/options-record/options-record/api/restore/impersonate"
	"github.com/options-record/options-record/api/restore/restorable"
	"github.com/options-record/options-record/store"
)

// executeTimeout bounds the execution of a plan. It runs to its end even
// if the caller goes away, so its outcome is recorded.
const executeTimeout = 10 * time.Minute

// ExecutePlan carries out a plan of the caller's, as the caller: once for
// real (the plan is claimed, so it runs once), or as a server-side dry run
// as often as wanted (each recorded as a run of its own). The returned plan
// holds the outcome of each step; its State says whether all succeeded.
func (s *Service) ExecutePlan(ctx context.Context, cluster, id string, req ExecuteRequest) (*Plan, error) {
	if s.kube == nil {
		return nil, ErrStandalone
	}
	rec, err := s.ownPlan(ctx, cluster, id)
	if err != nil {
		return nil, err
	}
	if rec.DryRun || rec.Kind == "version" {
		return nil, fmt.Errorf("%w: restore %s is the record of a restore, not a plan", errs.ErrInvalid, rec.ID)
	}
	if !req.DryRun && req.Digest == "" {
		return nil, fmt.Errorf("%w: digest is required to execute a plan for real: the digest of the plan you reviewed (the plan and each dry run of it answer it)", errs.ErrInvalid)
	}
	steps, err := stepsOf(rec)
	if err != nil {
		return nil, err
	}
	// What was reviewed is what runs: the plan's steps and the states they
	// restore, checked before anything is written (and each state again
	// when its step loads it).
	if req.Digest != "" {
		if err := checkDigest(rec.ID, steps, req.Digest); err != nil {
			return nil, err
		}
	}
	u := history.Caller(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), executeTimeout)
	defer cancel()
	if req.DryRun {
		id := rec.ID
		run, err := s.begin(ctx, rec.Kind, map[string]any{"planId": rec.ID, "options": req}, steps, true, &id, req.Record)
		if err != nil {
			return nil, err
		}
		return s.run(ctx, u, run, steps, req)
	}
	if err := s.checkStates(ctx, rec.Cluster, steps); err != nil {
		return nil, err
	}
	if req.Record != nil {
		return s.runNamed(ctx, u, rec, steps, req)
	}
	claimed, err := s.restores.ClaimRestore(ctx, rec.Cluster, rec.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: restore plan %s is %s: a plan executes once; make a new plan", errs.ErrConflict, rec.ID, rec.State)
	}
	if err != nil {
		return nil, err
	}
	if steps, err = s.claimedSteps(ctx, claimed, req.Digest); err != nil {
		return nil, err
	}
	return s.run(ctx, u, claimed, steps, req)
}

// claimedSteps are the steps of a plan as claimed, checked against the
// digest again (the row was read anew); a plan claimed with other steps is
// finished as refused, unrun.
func (s *Service) claimedSteps(ctx context.Context, claimed *store.RestoreRecord, digest string) ([]Step, error) {
	steps, err := stepsOf(claimed)
	if err == nil {
		err = checkDigest(claimed.ID, steps, digest)
	}
	if err != nil {
		out := StepOutcome{Result: ResultFailed, Message: err.Error()}
		out.Code, _, _ = errs.Status(err)
		if ferr := s.finish(ctx, claimed.ID, store.RestoreRefused, []StepOutcome{out}); ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		return nil, err
	}
	return steps, nil
}

// runNamed executes a plan for a Restore of the aggregated API: the run is
// recorded under the Restore's name first (which refuses a name taken
// before anything happens), then the plan is claimed so it runs once, and
// the outcome is written to both rows.
func (s *Service) runNamed(ctx context.Context, u user.Info, plan *store.RestoreRecord, steps []Step, req ExecuteRequest) (*Plan, error) {
	id := plan.ID
	exec, err := s.begin(ctx, plan.Kind, map[string]any{"planId": plan.ID, "options": req}, steps, false, &id, req.Record)
	if err != nil {
		return nil, err
	}
	claimed, err := s.restores.ClaimRestore(ctx, plan.Cluster, plan.ID)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: restore plan %s is %s: a plan executes once; make a new plan", errs.ErrConflict, plan.ID, plan.State)
	}
	if err == nil {
		_, err = s.claimedSteps(ctx, claimed, req.Digest)
	}
	if err != nil {
		out := StepOutcome{Result: ResultFailed, Message: err.Error()}
		out.Code, _, _ = errs.Status(err)
		if ferr := s.finish(ctx, exec.ID, store.RestoreRefused, []StepOutcome{out}); ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		final, ferr := s.restores.Restore(ctx, exec.Cluster, exec.ID)
		if ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		p, ferr := planOf(final)
		if ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		return p, err
	}
	p, err := s.run(ctx, u, exec, steps, req)
	if err != nil {
		return nil, err
	}
	if err := s.finish(ctx, claimed.ID, p.State, p.Outcome); err != nil {
		return nil, err
	}
	return p, nil
}

func stepsOf(rec *store.RestoreRecord) ([]Step, error) {
	var steps []Step
	if err := json.Unmarshal(rec.Plan, &steps); err != nil {
		return nil, fmt.Errorf("decode plan %s: %w", rec.ID, err)
	}
	return steps, nil
}

// run executes the steps as u, records the outcome and returns the plan.
func (s *Service) run(ctx context.Context, u user.Info, rec *store.RestoreRecord, steps []Step, req ExecuteRequest) (*Plan, error) {
	c, err := s.kube.As(u)
	if err != nil {
		return nil, err
	}
	outcome := s.runSteps(ctx, c, rec.Cluster, steps, req)
	state := stateOf(outcome)
	if err := s.finish(ctx, rec.ID, state, outcome); err != nil {
		return nil, err
	}
	final, err := s.restores.Restore(ctx, rec.Cluster, rec.ID)
	if err != nil {
		return nil, err
	}
	p, err := planOf(final)
	if err != nil {
		return nil, err
	}
	s.log.Info("restore plan executed", "user", u.GetName(), "restore_id", rec.ID, "state", state, "dry_run", req.DryRun)
	return p, nil
}

func stateOf(outcome []StepOutcome) string {
	var done, failed int
	for _, o := range outcome {
		switch o.Result {
		case ResultDone:
			done++
		case ResultFailed:
			failed++
		}
	}
	switch {
	case failed == 0:
		return store.RestoreSucceeded
	case done == 0:
		return store.RestoreFailed
	}
	return store.RestorePartial
}

// execution is the state of one run of a plan.
type execution struct {
	s       *Service
	c       dynamic.Interface
	cluster string
	req     ExecuteRequest
	renamed map[string]string // uid in the record → uid of the object restored or updated
	created map[string]int    // namespaces and CRD groups/resources created by a step (dry runs)
}

func (s *Service) runSteps(ctx context.Context, c dynamic.Interface, cluster string, steps []Step, req ExecuteRequest) []StepOutcome {
	e := &execution{s: s, c: c, cluster: cluster, req: req, renamed: map[string]string{}, created: map[string]int{}}
	out := make([]StepOutcome, 0, len(steps))
	for i := range steps {
		st := &steps[i]
		o := StepOutcome{Index: st.Index, Action: st.Action}
		switch st.Action {
		case ActionNone:
			o.Result, o.Message = ResultSkipped, st.Reason
		case ActionSkip:
			o.Result, o.Message = ResultSkipped, st.Reason
		case ActionRefuse:
			o.Result, o.Code, o.Message = ResultFailed, errs.CodeUnprocessable, st.Reason
		case ActionCreate, ActionUpdate:
			e.apply(ctx, st, &o)
		case ActionDelete:
			e.delete(ctx, st, &o)
		default:
			o.Result, o.Message = ResultFailed, "unknown action "+st.Action
		}
		out = append(out, o)
	}
	return out
}

func (e *execution) dryRun() []string {
	if e.req.DryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// dependsOnDryRun names the earlier step a dry run could not really carry
// out that this step needs (its namespace, its CRD).
func (e *execution) dependsOnDryRun(st *Step) (int, bool) {
	if !e.req.DryRun {
		return 0, false
	}
	if i, ok := e.created["ns/"+st.Object.Namespace]; ok && st.Object.Namespace != "" {
		return i, true
	}
	i, ok := e.created["crd/"+st.Object.Group+"/"+st.Object.Resource]
	return i, ok
}

func (e *execution) apply(ctx context.Context, st *Step, o *StepOutcome) {
	if i, ok := e.dependsOnDryRun(st); ok {
		o.Result, o.Message = ResultSkipped, fmt.Sprintf("needs what step %d creates: a dry run cannot check it", i)
		return
	}
	src, err := e.source(ctx, st)
	if err != nil {
		stepError(o, err)
		return
	}
	obj, err := history.DecodeObject(src.Object)
	if err != nil {
		stepError(o, err)
		return
	}
	ri := impersonate.Resource(e.c, st.Object)
	live, err := impersonate.GetLive(ctx, e.c, st.Object)
	if err != nil {
		stepError(o, err)
		return
	}
	action := st.Action
	switch {
	case live == nil && action == ActionUpdate && !e.req.Force:
		stepError(o, fmt.Errorf("%w: the object is gone since the plan", errs.ErrConflict))
		return
	case live != nil && action == ActionCreate && !e.req.Force:
		stepError(o, fmt.Errorf("%w: the object exists since the plan (uid %s, resourceVersion %s)", errs.ErrConflict, live.GetUID(), live.GetResourceVersion()))
		return
	case live != nil && action == ActionUpdate && st.Live != nil && live.GetResourceVersion() != st.Live.ResourceVersion && !e.req.Force:
		stepError(o, fmt.Errorf("%w: the object changed since the plan (resourceVersion %s, planned at %s)", errs.ErrConflict, live.GetResourceVersion(), st.Live.ResourceVersion))
		return
	case live == nil:
		action = ActionCreate
	default:
		action = ActionUpdate
	}
	o.Action = action
	m, err := restorable.Manifest(src, obj, e.s.kube.OwnerCheck(ctx, e.c, st.Object.Namespace, e.renamed))
	if err != nil {
		stepError(o, err)
		return
	}
	o.DroppedOwners = m.DroppedOwners
	var res *unstructured.Unstructured
	if action == ActionCreate {
		res, err = ri.Create(ctx, &unstructured.Unstructured{Object: m.Object}, metav1.CreateOptions{DryRun: e.dryRun(), FieldManager: FieldManager})
	} else {
		if len(restorable.Changes(live.Object, m)) == 0 {
			o.Result, o.Message = ResultSkipped, "the live object already holds this state"
			o.UID, o.ResourceVersion = string(live.GetUID()), live.GetResourceVersion()
			e.renamed[src.UID] = string(live.GetUID())
			return
		}
		u := &unstructured.Unstructured{Object: m.Object}
		u.SetResourceVersion(live.GetResourceVersion())
		res, err = ri.Update(ctx, u, metav1.UpdateOptions{DryRun: e.dryRun(), FieldManager: FieldManager})
	}
	if err != nil {
		stepError(o, err)
		return
	}
	o.Result, o.UID, o.ResourceVersion = ResultDone, string(res.GetUID()), res.GetResourceVersion()
	if e.req.DryRun {
		o.Message = "dry run: the apiserver accepted it"
	}
	e.renamed[src.UID] = string(res.GetUID())
	isCRD := st.Object.Group == "apiextensions.k8s.io" && st.Object.Resource == "customresourcedefinitions"
	switch {
	case e.req.DryRun && st.Object.Group == "" && st.Object.Resource == "namespaces":
		e.created["ns/"+st.Object.Name] = st.Index
	case e.req.DryRun && isCRD:
		group, _, _ := unstructured.NestedString(obj, "spec", "group")
		plural, _, _ := unstructured.NestedString(obj, "spec", "names", "plural")
		e.created["crd/"+group+"/"+plural] = st.Index
	case isCRD:
		if err := impersonate.WaitEstablished(ctx, e.c, st.Object.Name); err != nil {
			o.Message = err.Error()
		}
		e.s.kube.ResetDiscovery()
	}
}

// source loads the version a step restores, checking again that the caller
// may read it.
func (e *execution) source(ctx context.Context, st *Step) (*store.VersionRecord, error) {
	if st.Source == nil {
		return nil, fmt.Errorf("%w: the step names no version", errs.ErrInvalid)
	}
	key, err := history.ParseVersionKey(st.Source.VersionKey)
	if err != nil {
		return nil, err
	}
	v, err := e.s.history.VersionRecord(ctx, history.VersionID{Cluster: e.cluster, UID: st.Source.UID, Key: key})
	if err != nil {
		return nil, err
	}
	if err := restorable.Check(v); err != nil {
		return nil, err
	}
	if st.StateDigest != "" && !digest.Equal(digest.Of(v.Object), st.StateDigest) {
		return nil, errStateChanged(st.Index)
	}
	return v, nil
}

func (e *execution) delete(ctx context.Context, st *Step, o *StepOutcome) {
	live, err := impersonate.GetLive(ctx, e.c, st.Object)
	if err != nil {
		stepError(o, err)
		return
	}
	switch {
	case live == nil:
		o.Result, o.Message = ResultDone, "already gone"
		return
	case st.Live == nil || string(live.GetUID()) != st.Live.UID:
		// Even with force: another object has the name now.
		stepError(o, fmt.Errorf("%w: another object has this name since the plan (uid %s)", errs.ErrConflict, live.GetUID()))
		return
	case live.GetResourceVersion() != st.Live.ResourceVersion && !e.req.Force:
		stepError(o, fmt.Errorf("%w: the object changed since the plan (resourceVersion %s, planned at %s)", errs.ErrConflict, live.GetResourceVersion(), st.Live.ResourceVersion))
		return
	}
	uid := live.GetUID()
	pre := &metav1.Preconditions{UID: &uid}
	if !e.req.Force {
		rv := live.GetResourceVersion()
		pre.ResourceVersion = &rv
	}
	policy := metav1.DeletePropagationBackground
	err = impersonate.Resource(e.c, st.Object).Delete(ctx, st.Object.Name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy, DryRun: e.dryRun()})
	if err != nil {
		stepError(o, err)
		return
	}
	o.Result, o.UID = ResultDone, string(uid)
	if e.req.DryRun {
		o.Message = "dry run: the apiserver accepted it"
	}
}
