package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	historydiff "github.com/options-record/options-record/api/history/diff"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
	uiserver "github.com/options-record/options-record/cmd/kubectl-record/app/ui"
)

// backend answers the page with the typed client, as the caller.
type backend struct{ f *cmdutil.Factory }

// maxTimeline bounds the events of one timeline.
const maxTimeline = 10000

func (b *backend) Changes(ctx context.Context, q uiserver.Query) (*uiserver.Timeline, error) {
	rc, err := b.f.Record()
	if err != nil {
		return nil, err
	}
	ns := q.Namespace
	if ns == "" && !q.All {
		if ns, err = b.f.Namespace(); err != nil {
			return nil, err
		}
	}
	if q.All {
		ns = ""
	}
	sel := []string{cmdutil.Field("since", "-"+q.Since.String())}
	if q.User != "" {
		sel = append(sel, cmdutil.Field("actor.username", q.User))
	}
	if q.Resource != "" {
		gr, _, err := b.f.Resolve(q.Resource)
		if err != nil {
			return nil, err
		}
		sel = append(sel, cmdutil.Field("object.apiGroup", gr.Group), cmdutil.Field("object.resource", gr.Resource))
	}
	if q.Name != "" {
		sel = append(sel, cmdutil.Field("object.name", q.Name))
	}
	limit := q.Limit
	if limit <= 0 || limit > maxTimeline {
		limit = maxTimeline
	}
	tl := &uiserver.Timeline{Events: []uiserver.Event{}, Namespace: ns}
	where := "in namespace " + ns
	if ns == "" {
		where = "in any namespace"
	}
	opts := metav1.ListOptions{FieldSelector: strings.Join(sel, ","), Limit: 500}
	for {
		page, err := rc.Changes(ns).List(ctx, opts)
		if err != nil {
			return nil, cmdutil.Explain(err, "list changes "+where)
		}
		for _, c := range page.Items {
			tl.Events = append(tl.Events, changeEvent(c.ChangeRecord, c.Name))
		}
		if page.Continue == "" || len(tl.Events) >= limit {
			tl.Truncated = page.Continue != ""
			break
		}
		opts.Continue = page.Continue
	}
	opts.Continue = ""
	for n := 0; ; {
		page, err := rc.Attempts(ns).List(ctx, opts)
		if err != nil {
			break // refused writes are a plus: a reader of changes may not read attempts
		}
		for _, a := range page.Items {
			tl.Events = append(tl.Events, attemptEvent(a.AttemptRecord, a.Name))
			n++
		}
		if page.Continue == "" || n >= limit/10 {
			break
		}
		opts.Continue = page.Continue
	}
	sort.SliceStable(tl.Events, func(i, j int) bool { return tl.Events[i].At.After(tl.Events[j].At) })
	if len(tl.Events) > limit {
		tl.Events, tl.Truncated = tl.Events[:limit], true
	}
	return tl, nil
}

func changeEvent(c record.ChangeRecord, name string) uiserver.Event {
	ev := uiserver.Event{At: c.ChangedAt.Time, Kind: "change", Verb: c.Verb, Group: c.Object.APIGroup, Resource: c.Object.Resource,
		Namespace: c.Object.Namespace, Name: c.Object.Name, UID: c.Object.UID, Version: name, ShortName: cmdutil.ShortName(&c, name), Restorable: c.Restorable,
		InitiatedBy: c.InitiatedBy, InitiatedVia: c.InitiatedVia, User: "(baseline)"}
	if a := c.Actor; a != nil {
		ev.User, ev.As, ev.UserAgent = a.Username, a.ImpersonatedUser, a.UserAgent
	}
	if i := c.InitiatedObject; i != nil {
		ev.Initiator = &uiserver.ObjectQuery{Namespace: i.Namespace, Group: i.APIGroup, Resource: i.Resource, Name: i.Name}
	}
	return ev
}

func attemptEvent(a record.AttemptRecord, name string) uiserver.Event {
	return uiserver.Event{At: a.AttemptedAt.Time, Kind: "attempt", Verb: a.Verb, Group: a.Object.APIGroup, Resource: a.Object.Resource,
		Namespace: a.Object.Namespace, Name: a.Object.Name, UID: a.Object.UID, ShortName: cmdutil.AttemptShortName(&a, name), User: a.Actor.Username, As: a.Actor.ImpersonatedUser,
		UserAgent: a.Actor.UserAgent, Code: a.Result.Code, Reason: a.Result.Reason}
}

// target is the page's object as a target of the other verbs, in its
// namespace.
func (b *backend) target(obj uiserver.ObjectQuery) (*cmdutil.Target, *cmdutil.Factory, error) {
	if obj.Resource == "" || obj.Name == "" {
		return nil, nil, &uiserver.Error{Status: http.StatusBadRequest, Message: "resource and name are required"}
	}
	return &cmdutil.Target{Resource: schema.GroupResource{Group: obj.Group, Resource: obj.Resource}, Namespaced: obj.Namespace != "", Name: obj.Name},
		b.f.InNamespace(obj.Namespace), nil
}

func (b *backend) Versions(ctx context.Context, obj uiserver.ObjectQuery) ([]uiserver.Version, error) {
	t, f, err := b.target(obj)
	if err != nil {
		return nil, err
	}
	_, recs, metas, err := f.Versions(ctx, t, nil, 500)
	if err != nil {
		return nil, err
	}
	out := make([]uiserver.Version, 0, len(recs))
	for i, r := range recs {
		v := uiserver.Version{Name: metas[i].Name, ShortName: cmdutil.ShortName(&recs[i], metas[i].Name), At: r.ChangedAt.Time, Verb: r.Verb, UID: r.Object.UID, Restorable: r.Restorable, User: "(baseline)"}
		if r.Actor != nil {
			v.User = r.Actor.Username
		}
		out = append(out, v)
	}
	return out, nil
}

func (b *backend) Diff(ctx context.Context, obj uiserver.ObjectQuery, from, to string) (*uiserver.Diff, error) {
	t, f, err := b.target(obj)
	if err != nil {
		return nil, err
	}
	fromSide, err := f.VersionSide(ctx, t, from)
	if err != nil {
		return nil, err
	}
	var toSide cmdutil.Side
	if to == "live" {
		toSide, err = f.LiveSide(ctx, t)
	} else {
		toSide, err = f.VersionSide(ctx, t, to)
	}
	if err != nil {
		return nil, err
	}
	return &uiserver.Diff{From: fromSide.Label, To: toSide.Label, Changes: uiChanges(historydiff.Diff(fromSide.State, toSide.State, historydiff.Options{}))}, nil
}

func uiChanges(cs []historydiff.Change) []uiserver.DiffChange {
	out := make([]uiserver.DiffChange, 0, len(cs))
	for _, c := range cs {
		dc := uiserver.DiffChange{Op: c.Op, Path: c.Path}
		if c.Op != "add" {
			dc.Before = strings.Join(format.ValueLines(c.From), "\n")
		}
		if c.Op != "remove" {
			dc.After = strings.Join(format.ValueLines(c.To), "\n")
		}
		out = append(out, dc)
	}
	return out
}

func (b *backend) Restore(ctx context.Context, obj uiserver.ObjectQuery, version, digest string, dryRun bool) (*uiserver.RestoreResult, error) {
	t, f, err := b.target(obj)
	if err != nil {
		return nil, err
	}
	if version == "" {
		return nil, &uiserver.Error{Status: http.StatusBadRequest, Message: "version is required"}
	}
	if !dryRun && digest == "" {
		// The page confirms what its dry run showed, or nothing.
		return nil, &uiserver.Error{Status: http.StatusBadRequest, Message: "stateDigest is required: confirm the restore its dry run showed"}
	}
	st, err := f.CreateRestore(ctx, t, record.RestoreSpec{Version: version, StateDigest: digest}, dryRun)
	if err != nil {
		return nil, err
	}
	return restoreResult(st, dryRun), nil
}

func restoreResult(st *record.RestoreStatus, dryRun bool) *uiserver.RestoreResult {
	res := &uiserver.RestoreResult{Phase: st.Phase, Action: st.Action, Message: st.Message, DryRun: dryRun, PlanDigest: st.PlanDigest, StateDigest: st.StateDigest}
	for _, c := range st.Changes {
		dc := uiserver.DiffChange{Op: c.Op, Path: c.Path}
		if c.From != nil {
			dc.Before = strings.Join(format.ValueLines(rawValue(c.From.Raw)), "\n")
		}
		if c.To != nil {
			dc.After = strings.Join(format.ValueLines(rawValue(c.To.Raw)), "\n")
		}
		res.Changes = append(res.Changes, dc)
	}
	for _, s := range st.Steps {
		res.Steps = append(res.Steps, format.StepLine(s))
	}
	return res
}

func rawValue(raw []byte) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return v
}

func (b *backend) Plan(ctx context.Context, q uiserver.PlanQuery) (*uiserver.Plan, error) {
	ns := q.Namespace
	if ns == "" {
		var err error
		if ns, err = b.f.Namespace(); err != nil {
			return nil, err
		}
	}
	f := b.f.InNamespace(ns)
	spec := record.RestorePlanSpec{Kind: q.Kind}
	switch q.Kind {
	case "as-of":
		spec.At = &metav1.Time{Time: q.At}
	case "undo":
		spec.User, spec.Since = q.User, &metav1.Time{Time: q.Since}
	default:
		return nil, &uiserver.Error{Status: http.StatusBadRequest, Message: "kind: as-of or undo"}
	}
	name := cmdutil.RestoreName("ui-" + q.Kind)
	st, _, err := f.CreatePlan(ctx, false, name, spec)
	if err != nil {
		return nil, err
	}
	p := &uiserver.Plan{Name: name, Steps: []uiserver.PlanStep{}}
	for _, s := range st.Steps {
		p.Steps = append(p.Steps, uiserver.PlanStep{Action: s.Action, Resource: format.ResourceCell(s.Object), Namespace: s.Object.Namespace, Name: s.Object.Name, Reason: s.Reason})
	}
	return p, nil
}

func (b *backend) ExecutePlan(ctx context.Context, namespace, name, digest string, dryRun bool) (*uiserver.RestoreResult, error) {
	ns := namespace
	if ns == "" {
		var err error
		if ns, err = b.f.Namespace(); err != nil {
			return nil, err
		}
	}
	t := &cmdutil.Target{Namespaced: true, Name: name, Resource: schema.GroupResource{Group: record.GroupName, Resource: "restoreplans"}}
	st, err := b.f.InNamespace(ns).CreateRestore(ctx, t, record.RestoreSpec{Plan: name, PlanDigest: digest}, dryRun)
	if err != nil {
		return nil, err
	}
	return restoreResult(st, dryRun), nil
}
