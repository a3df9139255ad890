package restore

import (
	"context"
	"errors"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/impersonate"
	"github.com/options-record/options-record/api/restore/planner"
	"github.com/options-record/options-record/store"
)

// Reader is what restores and their plans read from the record, besides
// what the history service reads for them (each version a caller names,
// authorized).
type Reader interface {
	planner.Reader
}

// RestoreLog records restores (the restores table).
type RestoreLog interface {
	InsertRestore(ctx context.Context, r *store.RestoreRecord) (*store.RestoreRecord, error)
	Restore(ctx context.Context, cluster, id string) (*store.RestoreRecord, error)
	ClaimRestore(ctx context.Context, cluster, id string) (*store.RestoreRecord, error)
	FinishRestore(ctx context.Context, cluster, id, state string, outcome []byte) error
	RestoreNamed(ctx context.Context, cluster, username, userUID, namespace, name string) (*store.RestoreRecord, error)
	NamedRestores(ctx context.Context, q store.NamedRestoreQuery) ([]store.RestoreRecord, error)
}

// Options configure the service.
type Options struct {
	// History loads the versions a caller names and authorizes what the
	// caller may read, for the manifests and the plans.
	History *history.Service
	Reader  Reader
	// Log records restores; required with Kube.
	Log RestoreLog
	// Kube is the sink's client configuration for the cluster named
	// Cluster. Restores impersonate the caller through it. Nil: standalone,
	// read-only (manifests check owners in the record).
	Kube    *rest.Config
	Cluster string
	// MaxPlanSteps caps the objects of a plan (default 2000).
	MaxPlanSteps int
	// MaxUndoRows caps the changes an undo plan reads (default 20,000).
	MaxUndoRows int
	Logger      *slog.Logger
}

// Service exports manifests and carries out restores and plans, for the
// caller of the context (history.WithCaller), as that caller. It is safe
// for concurrent use.
type Service struct {
	history  *history.Service
	reader   Reader
	log      *slog.Logger
	restores RestoreLog
	cluster  string
	kube     *impersonate.Access
	planner  *planner.Planner
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.History == nil || o.Reader == nil {
		return nil, errors.New("restore: History and Reader are required")
	}
	if o.Kube != nil && (o.Log == nil || o.Cluster == "") {
		return nil, errors.New("restore: restores need Log and Cluster")
	}
	s := &Service{history: o.History, reader: o.Reader, restores: o.Log, cluster: o.Cluster, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.Kube != nil {
		k, err := impersonate.New(o.Kube)
		if err != nil {
			return nil, err
		}
		s.kube = k
	}
	p, err := planner.New(planner.Options{History: o.History, Reader: o.Reader, Kube: s.kube,
		MaxSteps: o.MaxPlanSteps, MaxUndoRows: o.MaxUndoRows})
	if err != nil {
		return nil, err
	}
	s.planner = p
	return s, nil
}

// Standalone reports whether the service has no cluster: read-only.
func (s *Service) Standalone() bool { return s.kube == nil }
