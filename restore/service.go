package restore

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/store"
)

// Reader is what the service reads from the record.
type Reader interface {
	Changes(ctx context.Context, q store.ChangeQuery) ([]store.VersionRecord, error)
	Version(ctx context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error)
	StateBefore(ctx context.Context, v *store.VersionRecord) (*store.VersionRecord, error)
	Newest(ctx context.Context, cluster, group, resource, namespace, name string) (*store.VersionRecord, error)
	ObjectsAsOf(ctx context.Context, q store.AsOfQuery) ([]store.VersionRecord, error)
	ResourcesIn(ctx context.Context, cluster, namespace string, at time.Time, limit int) ([]store.GroupResource, error)
	Deletions(ctx context.Context, q store.DeletionQuery) ([]store.Deletion, error)
	FailedMutations(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
	Activity(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
}

// RestoreLog records restores (the restores table).
type RestoreLog interface {
	InsertRestore(ctx context.Context, r *store.RestoreRecord) (*store.RestoreRecord, error)
	Restore(ctx context.Context, cluster, id string) (*store.RestoreRecord, error)
	ClaimRestore(ctx context.Context, cluster, id string) (*store.RestoreRecord, error)
	FinishRestore(ctx context.Context, cluster, id, state string, outcome []byte) error
}

// Options configure the service.
type Options struct {
	Reader Reader
	// Log records restores; required with Kube.
	Log RestoreLog
	// Authorizer decides, per object, what a caller may read (and, before
	// a plan is made, list): SubjectAccessReview through the cluster, or a
	// read-only authorizer in the standalone mode.
	Authorizer authorizer.Authorizer
	// Kube is the sink's client configuration for the cluster named
	// Cluster. Restores impersonate the caller through it. Nil: standalone,
	// read-only, and every cluster of the record can be read; otherwise
	// only Cluster is served (its RBAC authorizes the reads).
	Kube    *rest.Config
	Cluster string
	// MaxPlanSteps caps the objects of a plan (default 2000).
	MaxPlanSteps int
	// CursorKey seals page cursors (32 bytes). Replicas behind one Service
	// need the same key to accept each other's cursors; nil: a random key
	// for this process.
	CursorKey []byte
	Logger    *slog.Logger
}

// Service answers the questions of the record and carries out restores,
// for the caller of the context (see WithCaller). It is safe for concurrent
// use.
type Service struct {
	reader   Reader
	log      *slog.Logger
	restores RestoreLog
	authz    authorizer.Authorizer
	cluster  string
	kube     *kubeAccess
	maxSteps int
	cursors  cipher.AEAD // seals page cursors
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.Reader == nil || o.Authorizer == nil {
		return nil, errors.New("restore: Reader and Authorizer are required")
	}
	if o.Kube != nil && (o.Log == nil || o.Cluster == "") {
		return nil, errors.New("restore: restores need Log and Cluster")
	}
	s := &Service{
		reader: o.Reader, restores: o.Log, authz: o.Authorizer,
		cluster: o.Cluster, maxSteps: o.MaxPlanSteps, log: o.Logger,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxSteps <= 0 {
		s.maxSteps = 2000
	}
	var err error
	if s.cursors, err = newCursorAEAD(o.CursorKey); err != nil {
		return nil, err
	}
	if o.Kube != nil {
		k, err := newKubeAccess(o.Kube)
		if err != nil {
			return nil, err
		}
		s.kube = k
	}
	return s, nil
}

// WithCaller returns ctx carrying the authenticated caller, the way the
// generic apiserver's handlers carry it: every operation of the service
// reads, authorizes and writes as that caller.
func WithCaller(ctx context.Context, u user.Info) context.Context {
	return genericrequest.WithUser(ctx, u)
}

// Caller returns the authenticated caller of ctx, or nil.
func Caller(ctx context.Context) user.Info {
	u, _ := genericrequest.UserFrom(ctx)
	return u
}

func caller(ctx context.Context) user.Info { return Caller(ctx) }

// CheckCluster refuses a cluster this service does not answer for.
func (s *Service) CheckCluster(c string) error {
	if c == "" {
		return fmt.Errorf("%w: empty cluster name", ErrInvalid)
	}
	if s.kube != nil && c != s.cluster {
		return fmt.Errorf("%w: cluster %q is not served here: this API answers for cluster %q, whose TokenReview and RBAC it uses", ErrNotFound, c, s.cluster)
	}
	return nil
}

// Standalone reports whether the service has no cluster: read-only.
func (s *Service) Standalone() bool { return s.kube == nil }
