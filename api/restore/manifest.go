package restore

import (
	"context"
	"errors"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/manifest"
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
	if err := restorable(v); err != nil {
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
	m, err := cleanManifest(v, obj, check)
	if err != nil {
		return nil, err
	}
	res.Manifest, res.Removed, res.DroppedOwners = m.Object, m.Removed, m.DroppedOwners
	if res.Removed == nil {
		res.Removed = []string{}
	}
	return &res, nil
}

func orNone(s string) string {
	if s == "" {
		return "(baseline)"
	}
	return s
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

// cleanManifest is manifest.CleanManifest of the state of v, checked to
// read back in kubectl as exactly the object v is (manifest.
// CheckSingleObject), with a namespaced object's namespace filled in when
// its state lacks it. Its "not an object" errors are answered as
// errs.ErrUnprocessable (the manifest cleaner is pure and knows nothing
// of the service's errors), their messages unchanged.
func cleanManifest(v *store.VersionRecord, obj map[string]any, check manifest.OwnerCheck) (*manifest.Manifest, error) {
	m, err := manifest.CleanManifest(obj, check)
	if err == nil {
		if md, ok := m.Object["metadata"].(map[string]any); ok && v.Namespace != "" && md["namespace"] == nil {
			md["namespace"] = v.Namespace
		}
		err = manifest.CheckSingleObject(m.Object, manifest.Identity{Group: v.APIGroup, Kind: v.Kind, Namespace: v.Namespace, Name: v.Name})
	}
	if errors.Is(err, manifest.ErrNotObject) {
		return nil, unprocessable{err}
	}
	return m, err
}

// unprocessable is an error that is also errs.ErrUnprocessable.
type unprocessable struct{ err error }

func (e unprocessable) Error() string   { return e.err.Error() }
func (e unprocessable) Unwrap() []error { return []error{e.err, errs.ErrUnprocessable} }
