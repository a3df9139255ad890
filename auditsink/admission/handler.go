package admission

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/model/jsonfast"
)

// Authenticator maps a request's credentials to a cluster
// (auditsink.Authenticator, the audit webhook's).
type Authenticator interface {
	Authenticate(r *http.Request) (cluster string, ok bool)
}

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	// Cluster is the cluster of reviews that present no credential (the
	// apiserver of a managed cluster presents none).
	Cluster string
	// Authenticator, if set, gives an authenticated review its caller's
	// cluster; with RequireAuth, a review it does not authenticate is
	// refused (401).
	Authenticator Authenticator
	RequireAuth   bool
	// Digester digests Secret values; required.
	Digester *model.SecretDigester
	Queue    *Queue
	// MaxBodyBytes caps a review's body (default 8 MiB: an object and its
	// old state, each up to etcd's 1.5 MiB, and their JSON escapes).
	MaxBodyBytes int64
	// MaxInFlight caps the reviews decoded and queued at once (default
	// 64), and MaxInFlightBytes the bytes their bodies may hold, read or
	// being read (default 64 MiB, counted as they arrive); more are
	// answered 429 at once, and the apiserver ignores that answer. A body
	// is read before the review takes a slot, as the audit webhook's:
	// a slow sender holds a connection, not a slot.
	MaxInFlight      int
	MaxInFlightBytes int64
	// MinBodyRate and BodyTimeout bound how slowly a body may arrive (the
	// audit webhook's --webhook-min-body-rate and --webhook-body-timeout;
	// auditsink's defaults); slower ones are answered 408.
	MinBodyRate int64
	BodyTimeout time.Duration
	Metrics     *Metrics
	Logger      *slog.Logger
	// Now and ID replace the clock and the random ids (tests).
	Now func() time.Time
	ID  func() string
}

// Handler answers AdmissionReviews: always allowed, never patched.
type Handler struct {
	o     HandlerOptions
	slots chan struct{}
	body  *auditsink.BodyReader
}

// NewHandler returns a Handler.
func NewHandler(o HandlerOptions) (*Handler, error) {
	if o.Digester == nil || o.Queue == nil || o.Metrics == nil {
		return nil, errors.New("admission: a digester, a queue and metrics are required")
	}
	if o.RequireAuth && o.Authenticator == nil {
		return nil, errors.New("admission: authentication required and no authenticator")
	}
	if o.Cluster == "" {
		o.Cluster = "default"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ID == nil {
		o.ID = randomID
	}
	body, err := auditsink.NewBodyReader(auditsink.BodyLimits{MaxBytes: o.MaxBodyBytes, MinRate: o.MinBodyRate,
		Timeout: o.BodyTimeout, MaxInFlightBytes: o.MaxInFlightBytes})
	if err != nil {
		return nil, err
	}
	return &Handler{o: o, slots: make(chan struct{}, o.MaxInFlight), body: body}, nil
}

func randomID() string {
	var b [model.ObservationIDLen / 2]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// errBadReview is a review that cannot be read: 400.
var errBadReview = errors.New("bad AdmissionReview")

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	cluster, ok := h.cluster(r)
	if !ok {
		h.refuse(w, "unauthenticated", http.StatusUnauthorized, "unauthenticated: this endpoint requires the apiserver's client credential")
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		h.refuse(w, "bad_review", http.StatusBadRequest, fmt.Sprintf("%v: Content-Type %q, want application/json", errBadReview, r.Header.Get("Content-Type")))
		return
	}
	// The body is read before a slot is taken, as the audit webhook's.
	body, release, err := h.body.Read(w, r)
	defer release()
	if err != nil {
		h.refuseBody(w, err)
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		h.refuse(w, "busy", http.StatusTooManyRequests, "too many reviews at once")
		return
	}
	out, err := h.review(r, cluster, body)
	if err != nil {
		h.refuse(w, "bad_review", http.StatusBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (h *Handler) refuse(w http.ResponseWriter, reason string, status int, msg string) {
	h.o.Metrics.refused.WithLabelValues(reason).Inc()
	http.Error(w, msg, status)
}

// refuseBody answers a body that could not be read: too large (413),
// beyond the bytes in flight (429), too slow (408), or broken (400). The
// rest of the body is not read: the connection is closed.
func (h *Handler) refuseBody(w http.ResponseWriter, err error) {
	w.Header().Set("Connection", "close")
	switch mb := (*http.MaxBytesError)(nil); {
	case errors.As(err, &mb):
		h.refuse(w, "bad_review", http.StatusRequestEntityTooLarge, fmt.Sprintf("%v: request body too large (over %d bytes)", errBadReview, h.o.MaxBodyBytes))
	case errors.Is(err, auditsink.ErrBytesBusy):
		h.refuse(w, "busy", http.StatusTooManyRequests, "too many review bytes at once")
	case errors.Is(err, auditsink.ErrSlowBody):
		h.refuse(w, "slow_body", http.StatusRequestTimeout, "review body too slow")
	default:
		h.refuse(w, "bad_review", http.StatusBadRequest, fmt.Sprintf("%v: reading the body: %v", errBadReview, err))
	}
}

// cluster is the review's cluster: its caller's, when it authenticates;
// else Cluster, unless authentication is required.
func (h *Handler) cluster(r *http.Request) (string, bool) {
	if h.o.Authenticator != nil {
		if c, ok := h.o.Authenticator.Authenticate(r); ok {
			return c, true
		}
	}
	return h.o.Cluster, !h.o.RequireAuth
}

// review reads the AdmissionReview, queues what it observed and returns
// the answer.
func (h *Handler) review(r *http.Request, cluster string, body []byte) ([]byte, error) {
	var rv admissionv1.AdmissionReview
	if err := jsonfast.Default.Unmarshal(body, &rv); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadReview, err)
	}
	if rv.Kind != "AdmissionReview" || rv.APIVersion != "admission.k8s.io/v1" && rv.APIVersion != "admission.k8s.io/v1beta1" {
		return nil, fmt.Errorf("%w: kind %q apiVersion %q, want an AdmissionReview of admission.k8s.io/v1 or v1beta1", errBadReview, rv.Kind, rv.APIVersion)
	}
	req := rv.Request
	if req == nil || req.UID == "" {
		return nil, fmt.Errorf("%w: no request, or a request without a uid", errBadReview)
	}
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if key, id, ok := h.observe(r, cluster, req); ok {
		resp.AuditAnnotations = map[string]string{key: id}
	}
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: rv.TypeMeta, Response: resp})
	if err != nil {
		return nil, fmt.Errorf("%w: answering: %v", errBadReview, err)
	}
	return out, nil
}

// observe queues the state an UPDATE or DELETE review showed, and returns
// the audit annotation that names it (false: nothing observed or queued).
// The key is the object's (a digest of its uid): a deletecollection is
// reviewed once per object in one request, and the apiserver keeps one
// value per key in the request's audit event.
func (h *Handler) observe(r *http.Request, cluster string, req *admissionv1.AdmissionRequest) (key, id string, ok bool) {
	if req.Operation != admissionv1.Update && req.Operation != admissionv1.Delete || len(req.OldObject.Raw) == 0 {
		return "", "", false
	}
	m := h.o.Metrics
	m.observed.WithLabelValues(cluster).Inc()
	now := h.o.Now()
	v, err := model.BaselineVersion(model.BaselineObject{Cluster: cluster, APIGroup: req.Resource.Group,
		APIVersion: req.Resource.Version, Resource: req.Resource.Resource, Raw: req.OldObject.Raw,
		Digester: h.o.Digester, ObservedAt: now, Origin: model.OriginAdmission})
	if err != nil {
		m.dropped.WithLabelValues("invalid_object").Inc()
		return "", "", false
	}
	o := model.Observation{ID: h.o.ID(), Cluster: cluster, ReceivedAt: now, Source: sourceHost(r.RemoteAddr),
		Operation: string(req.Operation), DryRun: req.DryRun != nil && *req.DryRun,
		APIGroup: req.Resource.Group, Resource: req.Resource.Resource, Subresource: req.SubResource,
		Namespace: req.Namespace, Name: req.Name, Version: v}
	// A forged review's names are hostile as an audit event's: stored as
	// the event's are, they neither fail the batch nor stop matching it.
	o.PGSafe()
	if !h.o.Queue.offer(o) {
		m.dropped.WithLabelValues("queue_full").Inc()
		return "", "", false
	}
	d := sha256.Sum256([]byte(v.UID))
	return model.ObservationKeyPrefix + "-" + hex.EncodeToString(d[:8]), o.ID, true
}

func sourceHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
