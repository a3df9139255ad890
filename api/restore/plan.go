package restore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/planner"
	"github.com/options-record/options-record/api/restoreapi/paths"
	"github.com/options-record/options-record/store"
)

// Plan kinds.
const (
	// KindVersion is the kind of a restore of one version.
	KindVersion = "version"
	KindAsOf    = planner.KindAsOf
	KindUndo    = planner.KindUndo
)

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
		steps, err = s.planner.AsOf(ctx, cluster, &req)
	case KindUndo:
		steps, err = s.planner.Undo(ctx, cluster, &req)
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
