package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/digest"
	"github.com/options-record/options-record/api/restore/impersonate"
	"github.com/options-record/options-record/api/restore/planner"
	"github.com/options-record/options-record/api/restore/restorable"
	"github.com/options-record/options-record/api/restoreapi/paths"
	"github.com/options-record/options-record/store"
)

// FieldManager names the restore API's writes in managedFields.
const FieldManager = "options-record-restore"

// Plan and step actions.
const (
	ActionCreate = planner.ActionCreate
	ActionUpdate = planner.ActionUpdate
	ActionDelete = planner.ActionDelete
	ActionNone   = planner.ActionNone
	ActionSkip   = planner.ActionSkip
	ActionRefuse = planner.ActionRefuse
)

// States of a restore or plan (Plan.State).
const (
	StatePlanned   = store.RestorePlanned
	StateRunning   = store.RestoreRunning
	StateSucceeded = store.RestoreSucceeded
	StatePartial   = store.RestorePartial
	StateFailed    = store.RestoreFailed
	StateRefused   = store.RestoreRefused
)

// Step results.
const (
	ResultDone    = "done"
	ResultFailed  = "failed"
	ResultSkipped = "skipped"
)

// ErrStandalone refuses a restore in the standalone mode (no cluster).
var ErrStandalone = fmt.Errorf("%w: standalone mode is read-only: restores need the sink to run with its cluster (--kubeconfig or --in-cluster)", errs.ErrForbidden)

// withPriorHint adds to a "no state" refusal the version to use instead.
func (s *Service) withPriorHint(ctx context.Context, v *store.VersionRecord, err error) error {
	if v.HasState() || !errors.Is(err, errs.ErrUnprocessable) {
		return err
	}
	prior, perr := s.reader.StateBefore(ctx, v)
	if perr != nil || prior == nil {
		return err
	}
	return fmt.Errorf("%w; the state before it is version %s/%x: %s", err, prior.UID, prior.Key, paths.LinksFor(prior.Cluster, prior.UID, prior.Key).Restore)
}

// RestoreVersion writes a version's state back into the cluster, as the
// caller: created when the object is gone, updated when it holds another
// state. It is recorded in the restores table before anything is written.
func (s *Service) RestoreVersion(ctx context.Context, id history.VersionID, req RestoreRequest) (*RestoreResult, error) {
	if s.kube == nil {
		return nil, ErrStandalone
	}
	v, err := s.history.VersionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	// What was reviewed is what runs: the state the dry run answered the
	// digest of, checked on the very bytes this restore writes back.
	sum := digest.Of(v.Object)
	if req.StateDigest != "" && !digest.Equal(sum, req.StateDigest) {
		s.log.Warn("restore of a version refused: the recorded state is not the one reviewed", "user", history.Caller(ctx).GetName(),
			"resource", v.Resource, "namespace", v.Namespace, "name", v.Name, "uid", v.UID)
		return nil, errVersionStateChanged(id, req.StateDigest, sum)
	}
	u := history.Caller(ctx)
	src := history.VersionOf(v)
	src.Object = nil
	step := Step{Index: 0, Action: "restore", Object: restorable.Ref(v), Source: &src, StateDigest: sum}
	rec, err := s.begin(ctx, "version", map[string]any{"version": src.ID, "options": req}, []Step{step}, req.DryRun, nil, req.Record)
	if err != nil {
		return nil, err
	}
	// The write runs to its end and is recorded even if the caller goes.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	res, err := s.restoreOne(ctx, v, req, u)
	res.StateDigest = sum
	out := StepOutcome{Index: 0, Action: res.Action, Result: ResultDone}
	state := store.RestoreSucceeded
	if err != nil {
		out.Result = ResultFailed
		out.Code, _, _ = errs.Status(err)
		out.Message = err.Error()
		state = store.RestoreFailed
		if errors.Is(err, errs.ErrConflict) || errors.Is(err, errs.ErrUnprocessable) {
			state = store.RestoreRefused
		}
	} else {
		if res.Action == ActionNone {
			out.Result = ResultSkipped
			out.Message = "the live object already holds this state"
		}
		out.DroppedOwners = res.DroppedOwners
		var live metav1.PartialObjectMetadata
		if json.Unmarshal(res.Object, &live) == nil {
			out.UID, out.ResourceVersion = string(live.UID), live.ResourceVersion
		}
	}
	res.RestoreID = rec.ID
	if ferr := s.finish(ctx, rec.ID, state, []StepOutcome{out}); ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	s.log.Info("restore of a version", "user", u.GetName(), "resource", v.Resource, "namespace", v.Namespace, "name", v.Name,
		"version", src.ID, "action", res.Action, "dry_run", req.DryRun, "restore_id", rec.ID, "state", state, "code", out.Code)
	if err != nil {
		// The refusal or failure is recorded (res.RestoreID names it).
		return &res, s.withPriorHint(ctx, v, err)
	}
	return &res, nil
}

// restoreOne writes a version's state back as u.
func (s *Service) restoreOne(ctx context.Context, v *store.VersionRecord, req RestoreRequest, u user.Info) (RestoreResult, error) {
	res := RestoreResult{Source: history.VersionOf(v), DryRun: req.DryRun}
	res.Source.Object = nil
	if err := restorable.Check(v); err != nil {
		return res, err
	}
	obj, err := history.DecodeObject(v.Object)
	if err != nil {
		return res, err
	}
	c, err := s.kube.As(u)
	if err != nil {
		return res, err
	}
	ref := restorable.Ref(v)
	live, err := impersonate.GetLive(ctx, c, ref)
	if err != nil {
		return res, err
	}
	if live != nil {
		res.Live = &LiveRef{UID: string(live.GetUID()), ResourceVersion: live.GetResourceVersion()}
	}
	if !req.Force {
		if err := s.guard(ctx, v, live, req.ExpectedResourceVersion); err != nil {
			return res, err
		}
	}
	m, err := restorable.Manifest(v, obj, s.kube.OwnerCheck(ctx, c, v.Namespace, nil))
	if err != nil {
		return res, err
	}
	res.DroppedOwners = m.DroppedOwners
	var dryRun []string
	if req.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	var out *unstructured.Unstructured
	if live == nil {
		res.Action = ActionCreate
		out, err = impersonate.Resource(c, ref).Create(ctx, &unstructured.Unstructured{Object: m.Object}, metav1.CreateOptions{DryRun: dryRun, FieldManager: FieldManager})
	} else {
		res.Changes = restorable.Changes(live.Object, m)
		if len(res.Changes) == 0 {
			res.Action = ActionNone
			res.Object, _ = json.Marshal(live.Object)
			return res, nil
		}
		res.Action = ActionUpdate
		target := &unstructured.Unstructured{Object: m.Object}
		target.SetResourceVersion(live.GetResourceVersion())
		out, err = impersonate.Resource(c, ref).Update(ctx, target, metav1.UpdateOptions{DryRun: dryRun, FieldManager: FieldManager})
	}
	if err != nil {
		return res, fmt.Errorf("%s %s %s as %q: %w", res.Action, v.Resource, impersonate.ObjName(v.Namespace, v.Name), u.GetName(), err)
	}
	res.Object, _ = json.Marshal(out.Object)
	return res, nil
}

// guard refuses a restore when the live object changed after the version
// the request is based on: the resourceVersion the caller expects, or else
// the newest recorded version of the object.
func (s *Service) guard(ctx context.Context, v *store.VersionRecord, live *unstructured.Unstructured, expected string) error {
	what := v.Resource + " " + impersonate.ObjName(v.Namespace, v.Name)
	const hint = "review the live object, then restore with force=true (or expectedResourceVersion set to its resourceVersion)"
	if expected != "" {
		switch {
		case live == nil:
			return fmt.Errorf("%w: %s no longer exists, but the request expected resourceVersion %s: %s", errs.ErrConflict, what, expected, hint)
		case live.GetResourceVersion() != expected:
			return fmt.Errorf("%w: the live %s has resourceVersion %s, the request expected %s: it changed since; %s", errs.ErrConflict, what, live.GetResourceVersion(), expected, hint)
		}
		return nil
	}
	if live == nil {
		return nil // gone: putting it back is the point
	}
	newest, err := s.reader.Newest(ctx, v.Cluster, v.APIGroup, v.Resource, v.Namespace, v.Name)
	if err != nil {
		return err
	}
	liveRV := live.GetResourceVersion()
	switch {
	case string(live.GetUID()) != newest.UID:
		return fmt.Errorf("%w: the live %s (uid %s) is not the incarnation the record knows last (uid %s): it was re-created after the newest recorded version; %s",
			errs.ErrConflict, what, live.GetUID(), newest.UID, hint)
	case newest.ResourceVersion != nil && strconv.FormatInt(*newest.ResourceVersion, 10) == liveRV:
		return nil
	case newest.HasState() && !newest.Deleted:
		if obj, err := history.DecodeObject(newest.Object); err == nil && len(history.Diff(obj, live.Object, history.DiffOptions{})) == 0 {
			return nil // only server-set fields or status changed since
		}
	}
	recorded := "unknown"
	if newest.ResourceVersion != nil {
		recorded = strconv.FormatInt(*newest.ResourceVersion, 10)
	}
	return fmt.Errorf("%w: the live %s changed after the newest recorded version (live resourceVersion %s, recorded %s at %s by %s; the change may not be recorded yet, or not recorded at all); %s",
		errs.ErrConflict, what, liveRV, recorded, newest.ChangedAt.UTC().Format(time.RFC3339), restorable.Author(newest), hint)
}

// begin records a restore before anything is written.
func (s *Service) begin(ctx context.Context, kind string, request any, steps []Step, dryRun bool, planID *string, named *RecordName) (*store.RestoreRecord, error) {
	u := history.Caller(ctx)
	reqJSON, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("encode restore request: %w", err)
	}
	planJSON, err := json.Marshal(steps)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	var extra []byte
	if e := u.GetExtra(); len(e) > 0 {
		extra, _ = json.Marshal(e)
	}
	now := time.Now()
	rec := &store.RestoreRecord{
		Cluster: s.cluster, Kind: kind, Username: u.GetName(), UserUID: u.GetUID(), UserGroups: u.GetGroups(),
		UserExtra: extra, Request: reqJSON, Plan: planJSON, DryRun: dryRun, State: store.RestoreRunning,
		ExecutedAt: &now, PlanID: planID,
	}
	if named != nil {
		rec.ObjectNamespace, rec.ObjectName = named.Namespace, named.Name
	}
	out, err := s.restores.InsertRestore(ctx, rec)
	if errors.Is(err, store.ErrExists) {
		return nil, fmt.Errorf("%w: a restore named %q exists in %q", errs.ErrExists, rec.ObjectName, rec.ObjectNamespace)
	}
	return out, err
}

func (s *Service) finish(ctx context.Context, id, state string, outcome []StepOutcome) error {
	b, err := json.Marshal(outcome)
	if err != nil {
		return fmt.Errorf("encode outcome: %w", err)
	}
	return s.restores.FinishRestore(ctx, s.cluster, id, state, b)
}

// stepError turns a failed write into a step outcome.
func stepError(o *StepOutcome, err error) {
	o.Result = ResultFailed
	o.Code, _, _ = errs.Status(err)
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		o.Message = st.Status().Message
	}
	if o.Message == "" {
		o.Message = err.Error()
	}
}
