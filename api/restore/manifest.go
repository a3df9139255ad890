package restore

import (
	"context"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/manifest"
	"github.com/options-record/options-record/api/restore/restorable"
	"github.com/options-record/options-record/store"
)

// Manifest is the clean manifest of a version: its state without what the
// server sets, ready to apply; ownerReferences to owners that no longer
// exist are dropped (checked in the cluster as the caller, or in the record
// in the standalone mode).
func (s *Service) Manifest(ctx context.Context, id history.VersionID) (*ManifestResult, error) {
	v, err := s.history.VersionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := restorable.Check(v); err != nil {
		return nil, s.withPriorHint(ctx, v, err)
	}
	obj, err := history.DecodeObject(v.Object)
	if err != nil {
		return nil, err
	}
	res := ManifestResult{Version: history.VersionOf(v)}
	res.Version.Object = nil
	var check manifest.OwnerCheck
	if s.kube != nil {
		c, err := s.kube.As(history.Caller(ctx))
		if err != nil {
			return nil, err
		}
		check, res.OwnersChecked = s.kube.OwnerCheck(ctx, c, v.Namespace, nil), "cluster"
	} else {
		check, res.OwnersChecked = s.recordOwnerCheck(ctx, v.Cluster), "record"
	}
	m, err := restorable.Manifest(v, obj, check)
	if err != nil {
		return nil, err
	}
	res.Manifest, res.Removed, res.DroppedOwners = m.Object, m.Removed, m.DroppedOwners
	if res.Removed == nil {
		res.Removed = []string{}
	}
	return &res, nil
}

// recordOwnerCheck decides owner existence from the record (standalone
// mode: no cluster to ask): the owner's newest version is not a delete.
func (s *Service) recordOwnerCheck(ctx context.Context, cluster string) manifest.OwnerCheck {
	return func(ref manifest.OwnerReference) (string, bool, string) {
		rows, err := s.reader.Changes(ctx, store.ChangeQuery{Cluster: cluster, UID: ref.UID, Limit: 1})
		switch {
		case err != nil:
			return "", false, "could not be checked: " + err.Error()
		case len(rows) == 0:
			return "", false, "owner unknown to the record"
		case rows[0].Deleted:
			return "", false, "owner deleted (according to the record)"
		}
		return ref.UID, true, ""
	}
}
