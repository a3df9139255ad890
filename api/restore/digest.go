package restore

// Pinning what was reviewed: a plan's digest and its steps' state digests.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/digest"
	"github.com/options-record/options-record/api/restore/planner"
	"github.com/options-record/options-record/store"
)

// PlanDigest is the digest of a plan's steps: SHA-256 over their JSON
// encoding (the steps as this package decodes them, fields in the order
// Step declares them, maps with sorted keys). Each create and update step
// carries the digest of the state it restores (StateDigest), so the digest
// pins the states too. A plan and every dry run of it answer it; a real
// run must carry it, and is refused when the plan's steps, or a state they
// restore, no longer match it.
func PlanDigest(steps []Step) string {
	if steps == nil {
		steps = []Step{}
	}
	b, err := json.Marshal(steps)
	if err != nil {
		// Steps hold strings, numbers and decoded JSON values only.
		panic(fmt.Sprintf("restore: encode steps: %v", err))
	}
	return digest.Of(b)
}

// errDigestMismatch is the refusal of a run whose plan is not the one
// reviewed. It names no object: only the plan's own steps differ.
func errDigestMismatch(id, want, got string) error {
	return fmt.Errorf("%w: restore plan %s is not the plan you reviewed: its steps (digest %s) differ from the digest given (%s); nothing was written: review it again (a dry run answers its digest) or make a new plan", errs.ErrConflict, id, got, want)
}

// checkDigest refuses steps whose digest is not want.
func checkDigest(id string, steps []Step, want string) error {
	if got := PlanDigest(steps); !digest.Equal(got, want) {
		return errDigestMismatch(id, want, got)
	}
	return nil
}

// checkStates refuses a plan a state of which the record no longer holds as
// it was planned (a version rewritten since), before anything is written.
// Each state is checked again when its step loads it.
func (s *Service) checkStates(ctx context.Context, cluster string, steps []Step) error {
	for start := 0; start < len(steps); start += planner.LoadBatch {
		batch := steps[start:min(start+planner.LoadBatch, len(steps))]
		var uids []string
		var keys [][]byte
		for i := range batch {
			st := &batch[i]
			if st.StateDigest == "" || st.Source == nil || (st.Action != ActionCreate && st.Action != ActionUpdate) {
				continue
			}
			key, err := history.ParseVersionKey(st.Source.VersionKey)
			if err != nil {
				return err
			}
			uids, keys = append(uids, st.Source.UID), append(keys, key)
		}
		if len(uids) == 0 {
			continue
		}
		objs, err := s.reader.Objects(ctx, cluster, uids, keys)
		if err != nil {
			return err
		}
		for i := range batch {
			st := &batch[i]
			if st.StateDigest == "" || st.Source == nil || (st.Action != ActionCreate && st.Action != ActionUpdate) {
				continue
			}
			key, _ := history.ParseVersionKey(st.Source.VersionKey)
			obj, ok := objs[store.ObjectID(st.Source.UID, key)]
			if !ok || !digest.Equal(digest.Of(obj), st.StateDigest) {
				return errStateChanged(st.Index)
			}
		}
	}
	return nil
}

// errStateChanged refuses a step whose recorded state is not the one
// planned.
func errStateChanged(index int) error {
	return fmt.Errorf("%w: the recorded state step %d restores is not the one planned (the record was changed since): nothing of it was written; make a new plan", errs.ErrConflict, index)
}

// errVersionStateChanged refuses the restore of a version whose recorded
// state is not the one the caller's dry run showed.
func errVersionStateChanged(id history.VersionID, want, got string) error {
	return fmt.Errorf("%w: the recorded state of version %s is not the one you reviewed: the record holds digest %s, the request gives %s (the record was changed since); nothing was written: review it again (a dry run answers its stateDigest)",
		errs.ErrConflict, id.UID+"."+hex.EncodeToString(id.Key), got, want)
}
