package planner

// Undoing a user's changes.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/store"
)

// Undo plans reverting what req.User changed between since and until:
// every object they changed gets the state it had before their first change
// in the range (deleted when they created it).
func (p *Planner) Undo(ctx context.Context, cluster string, req *PlanRequest) ([]Step, error) {
	until, err := checkUndo(req, time.Now())
	if err != nil {
		return nil, err
	}
	sc, err := p.scope(ctx, cluster, req)
	if err != nil {
		return nil, err
	}
	// Named namespaces and resources: the caller may read them, before
	// anything is read.
	for _, ns := range req.Namespaces {
		if err := sc.authorize(ns, "get"); err != nil {
			return nil, err
		}
	}
	changed, err := p.changesBy(ctx, sc, req, until)
	if err != nil {
		return nil, err
	}
	targets, undo, err := p.priorStates(ctx, changed)
	if err != nil {
		return nil, err
	}
	return p.planSteps(ctx, cluster, targets, nil, undo, time.Time{})
}

// checkUndo checks an undo request and answers the end of its range.
func checkUndo(req *PlanRequest, now time.Time) (time.Time, error) {
	if req.User == "" || req.Since == nil {
		return time.Time{}, fmt.Errorf("%w: undo needs user and since", errs.ErrInvalid)
	}
	if req.At != nil {
		return time.Time{}, fmt.Errorf("%w: at is for kind as-of", errs.ErrInvalid)
	}
	until := now
	if req.Until != nil {
		until = *req.Until
	}
	if !req.Since.Before(until) {
		return time.Time{}, fmt.Errorf("%w: since must be before until", errs.ErrInvalid)
	}
	return until, nil
}

// undoInfo is what an undo plan knows of one object.
type undoInfo struct {
	first, last  *store.VersionRecord // the user's first and last change of it
	absent       bool                 // the user created it: the target is its absence
	unknownPrior bool
}

// changesBy reads, oldest first, the successful changes of req.User in the
// range that the selection and the caller may read: each object's first
// and last, in the order of their first.
//
// The cap counts the changes the caller may read: the ones they may not
// must not refuse (or let through) a plan. Scanning past hidden rows is
// bounded too, as a list's scan is (history.MaxScanRows): a range that
// holds more than UndoScanFactor times the cap is refused, whoever's rows
// they are.
func (p *Planner) changesBy(ctx context.Context, sc *scope, req *PlanRequest, until time.Time) ([]*undoInfo, error) {
	q := store.ChangeQuery{Cluster: sc.cluster, User: req.User, Since: *req.Since, Until: until, Ascending: true, Limit: 500,
		Resources: sc.sel.storeResources(), Names: sc.sel.storeNames(), ChangesOnly: true}
	if len(req.Namespaces) > 0 {
		q.Namespaces = req.Namespaces
	}
	var changed []*undoInfo
	byUID := map[string]*undoInfo{}
	for scanned, read := 0, 0; ; {
		rows, err := p.reader.Changes(ctx, q)
		if err != nil {
			return nil, err
		}
		if scanned += len(rows); scanned > UndoScanFactor*p.maxUndo {
			return nil, fmt.Errorf("%w: more than %d changes to scan in this range: narrow it (namespaces, resources, names, since/until)", errs.ErrInvalid, UndoScanFactor*p.maxUndo)
		}
		for i := range rows {
			v := rows[i]
			if v.Origin != "change" || v.ResponseCode >= 300 || !sc.sel.has(&v) {
				continue
			}
			ok, err := sc.rf.Allowed(history.AuthzTarget(&v))
			if err != nil {
				return nil, err
			}
			if !ok {
				continue // not the caller's to see: left out, unnamed
			}
			if read++; read > p.maxUndo {
				return nil, fmt.Errorf("%w: more than %d changes of %s in this range: narrow it (namespaces, resources, names, since/until)", errs.ErrInvalid, p.maxUndo, req.User)
			}
			info := byUID[v.UID]
			if info == nil {
				info = &undoInfo{first: &v}
				byUID[v.UID] = info
				if changed = append(changed, info); len(changed) > p.maxSteps {
					return nil, p.tooManySteps(len(changed))
				}
			}
			info.last = &v
		}
		if len(rows) < q.Limit {
			return changed, nil
		}
		l := rows[len(rows)-1]
		q.After = &store.Cursor{At: l.ChangedAt, UID: l.UID, Key: l.Key}
	}
}

// priorStates decides each changed object's target: the state it had
// before the user's first change, or its absence when they created it.
func (p *Planner) priorStates(ctx context.Context, changed []*undoInfo) ([]store.VersionRecord, map[string]*undoInfo, error) {
	var targets []store.VersionRecord
	undo := map[string]*undoInfo{}
	for _, info := range changed {
		prior, err := p.reader.StateBefore(ctx, info.first)
		switch {
		case errors.Is(err, store.ErrNotFound):
			info.unknownPrior = true
			targets = append(targets, *info.first)
		case err != nil:
			return nil, nil, err
		case prior == nil: // they created it: undo deletes it
			info.absent = true
			targets = append(targets, *info.first)
		default:
			// The body is loaded again while the step is planned: the
			// plan holds metadata only.
			t := *prior
			t.Object = nil
			targets = append(targets, t)
		}
		undo[info.first.UID] = info
	}
	return targets, undo, nil
}
