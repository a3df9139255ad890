package history

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

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/store"
)

// Reader is what the service reads from the record.
type Reader interface {
	Changes(ctx context.Context, q store.ChangeQuery) ([]store.VersionRecord, error)
	Version(ctx context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error)
	StateBefore(ctx context.Context, v *store.VersionRecord) (*store.VersionRecord, error)
	Deletions(ctx context.Context, q store.DeletionQuery) ([]store.Deletion, error)
	FailedMutations(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
	RequestObjects(ctx context.Context, cluster string, keys []store.EventKey, budget int) ([][]byte, error)
	FailedMutation(ctx context.Context, cluster string, at time.Time, key []byte) (*store.EventRecord, error)
	Activity(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
	ObjectsAsOf(ctx context.Context, q store.AsOfQuery) ([]store.VersionRecord, error)
	VersionsByKeyRange(ctx context.Context, q store.KeyRangeQuery) ([]store.VersionRecord, error)
	FailedByKeyRange(ctx context.Context, q store.EventKeyRange) ([]store.EventRecord, error)
}

// ProgressReader reads how far each audit source has delivered for a
// cluster (the store's source_progress).
type ProgressReader interface {
	Progress(ctx context.Context, cluster string) ([]store.SourceProgress, error)
}

// Options configure the service.
type Options struct {
	Reader Reader
	// Progress, when set, answers NewestEvents; nil: no source's progress
	// is known.
	Progress ProgressReader
	// Authorizer decides, per object, what a caller may read:
	// SubjectAccessReview through the cluster, or a read-only authorizer in
	// the standalone mode.
	Authorizer authorizer.Authorizer
	// Cluster, when set, is the only cluster served (the one whose RBAC
	// the Authorizer asks); empty: every cluster of the record (the
	// standalone mode).
	Cluster string
	// CursorKey seals page cursors (32 bytes). Replicas behind one Service
	// need the same key to accept each other's cursors; nil: a random key
	// for this process.
	CursorKey []byte
	Logger    *slog.Logger
}

// Service answers the questions of the record for the caller of the
// context (see WithCaller). It is safe for concurrent use.
type Service struct {
	reader   Reader
	log      *slog.Logger
	authz    authorizer.Authorizer
	cluster  string
	cursors  cipher.AEAD // seals page cursors
	progress ProgressReader
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.Reader == nil || o.Authorizer == nil {
		return nil, errors.New("history: Reader and Authorizer are required")
	}
	s := &Service{reader: o.Reader, authz: o.Authorizer, cluster: o.Cluster, log: o.Logger, progress: o.Progress}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.cursors, err = newCursorAEAD(o.CursorKey); err != nil {
		return nil, err
	}
	return s, nil
}

// WithCaller returns ctx carrying the authenticated caller, the way the
// generic apiserver's handlers carry it: every operation reads, authorizes
// and writes as that caller.
func WithCaller(ctx context.Context, u user.Info) context.Context {
	return genericrequest.WithUser(ctx, u)
}

// Caller returns the authenticated caller of ctx, or nil.
func Caller(ctx context.Context) user.Info {
	u, _ := genericrequest.UserFrom(ctx)
	return u
}

// CheckCluster refuses a cluster this service does not answer for.
func (s *Service) CheckCluster(c string) error {
	if c == "" {
		return fmt.Errorf("%w: empty cluster name", errs.ErrInvalid)
	}
	if s.cluster != "" && c != s.cluster {
		return fmt.Errorf("%w: cluster %q is not served here: this API answers for cluster %q, whose TokenReview and RBAC it uses", errs.ErrNotFound, c, s.cluster)
	}
	return nil
}
