package record

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// proofStorage serves changes/proof and clusterchanges/proof: the
// inclusion proof of a version in its cluster's tamper-evident log, as the
// text of a C2SP tlog-proof (what options-record verify --proof checks),
// to a caller who may read the version, authorized exactly as a get of
// the change is.
type proofStorage struct {
	changes *changeStorage
	proofs  history.Proofs
}

var (
	_ rest.Storage         = (*proofStorage)(nil)
	_ rest.Scoper          = (*proofStorage)(nil)
	_ rest.Getter          = (*proofStorage)(nil)
	_ rest.StorageMetadata = (*proofStorage)(nil)
)

func (s *proofStorage) New() runtime.Object   { return s.changes.New() }
func (s *proofStorage) Destroy()              {}
func (s *proofStorage) NamespaceScoped() bool { return s.changes.namespaced }

// ProducesMIMETypes and ProducesObject document the body: text.
func (s *proofStorage) ProducesMIMETypes(string) []string {
	return []string{recordv1alpha1.ProofContentType}
}
func (s *proofStorage) ProducesObject(string) any { return "" }

// Get answers the proof of the version named (a short or long name, as a
// get of the change takes), once the history service authorized reading
// it in the request's scope.
func (s *proofStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	c := s.changes
	id, err := c.resolve(ctx, name, false)
	if err != nil {
		return nil, err
	}
	v, err := c.hist.VersionRecord(ctx, id)
	if err != nil {
		return nil, registry.StatusError(c.log, err, c.resource, name)
	}
	if !c.serves(ctx, v.Namespace) {
		return nil, apierrors.NewNotFound(c.resource, name)
	}
	if s.proofs == nil {
		return nil, proofNotFound(c.resource, name, history.ErrNoLog)
	}
	p, err := s.proofs(ctx, id.Cluster, id.UID, id.Key)
	if errors.Is(err, history.ErrNoLog) || errors.Is(err, history.ErrNotLogged) || errors.Is(err, history.ErrBeforeLog) {
		return nil, proofNotFound(c.resource, name, err)
	}
	if err != nil {
		return nil, registry.StatusError(c.log, err, c.resource, name)
	}
	return proofText(p), nil
}

// proofNotFound is the not found of a version the caller may read whose
// proof there is not (err: history.ErrNoLog, ErrNotLogged or
// ErrBeforeLog), with its cause.
func proofNotFound(res schema.GroupResource, name string, err error) error {
	cause := recordv1alpha1.CauseNotLogged
	switch {
	case errors.Is(err, history.ErrNoLog):
		cause = recordv1alpha1.CauseNoLog
	case errors.Is(err, history.ErrBeforeLog):
		cause = recordv1alpha1.CauseBeforeLog
	}
	msg := "no proof of " + res.Resource + " " + name + ": " + errMessage(err)
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: msg,
		Details: &metav1.StatusDetails{Group: res.Group, Kind: res.Resource, Name: name,
			Causes: []metav1.StatusCause{{Type: cause, Message: errMessage(err)}}}}}
}

// errMessage is err's message without the "not found: " that
// errs.ErrNotFound leads it with.
func errMessage(err error) string {
	msg, _ := strings.CutPrefix(err.Error(), errs.ErrNotFound.Error()+": ")
	return msg
}

// proofText is a proof's body, written as it is (rest.ResourceStreamer),
// not encoded as an object.
type proofText []byte

func (p proofText) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (p proofText) DeepCopyObject() runtime.Object   { return slices.Clone(p) }

func (p proofText) InputStream(context.Context, string, string) (io.ReadCloser, bool, string, error) {
	return io.NopCloser(bytes.NewReader(p)), false, recordv1alpha1.ProofContentType, nil
}
