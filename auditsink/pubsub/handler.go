package pubsub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/authlimit"
	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
)

// Path is where the push endpoint is served, on the webhook's server.
const Path = "/gke/pubsub"

// Options configure the push endpoint.
type Options struct {
	// Pipeline filters and stores the events (the webhook's).
	Pipeline *auditsink.Pipeline
	// Cluster is the name the events are recorded under.
	Cluster string
	// Verifier checks each push's token; required.
	Verifier *Verifier
	// Limiter limits failed authentications per address (the one of every
	// front door); default authlimit.New with its defaults.
	Limiter *authlimit.Limiter
	// MaxBodyBytes caps a push body (default 16 MiB: a Pub/Sub message
	// holds 10 MB at most, base64 in the push's JSON).
	MaxBodyBytes int64
	// MaxInFlight caps the pushes processed at once (default 8), and
	// MaxInFlightBytes the bodies held at once (default 96 MiB); beyond
	// them the answer is 429 and Pub/Sub pushes again later.
	MaxInFlight      int
	MaxInFlightBytes int64
	// BodyTimeout bounds the reading of a body (default 15 s) and
	// WriteTimeout its store write (default 20 s).
	BodyTimeout  time.Duration
	WriteTimeout time.Duration
	// Horizon, if set, returns how far back the record keeps events (as
	// auditsink.HandlerOptions.Horizon); older events are skipped and
	// counted out_of_window.
	Horizon func() time.Duration
	// Lag, if set, records the delay of the events stored (source
	// "pubsub"), as the other managed sources' (auditsink.SourceLag).
	Lag        *auditsink.SourceLag
	Registerer Registerer
	Logger     *slog.Logger
	Now        func() time.Time
}

// Handler is the Pub/Sub push endpoint of GKE's audit log entries: one
// LogEntry per push, converted and run through the pipeline, answered 200
// only once it is durable.
type Handler struct {
	o       Options
	served  http.Handler // serveAdmitted behind the failed-authentication limiter
	slots   chan struct{}
	mem     *semaphore.Weighted
	metrics *metrics
}

// NewHandler validates the options and builds the handler.
func NewHandler(o Options) (*Handler, error) {
	if o.Pipeline == nil || o.Verifier == nil || o.Cluster == "" {
		return nil, errors.New("pubsub: the push endpoint needs a pipeline, a verifier and a cluster")
	}
	if o.Limiter == nil {
		o.Limiter = authlimit.New(authlimit.Options{})
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 16 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 8
	}
	if o.MaxInFlightBytes < o.MaxBodyBytes {
		o.MaxInFlightBytes = max(96<<20, o.MaxBodyBytes)
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 15 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 20 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{o: o, slots: make(chan struct{}, o.MaxInFlight), mem: semaphore.NewWeighted(o.MaxInFlightBytes),
		metrics: newMetrics(o.Registerer)}
	h.served = o.Limiter.Handler(http.HandlerFunc(h.serveAdmitted), func(w http.ResponseWriter, _ *http.Request, ref *authlimit.Refusal) {
		h.metrics.pushes.WithLabelValues("throttled").Inc()
		w.Header().Set("Retry-After", ref.RetryAfterSeconds())
		http.Error(w, ref.Reason, http.StatusTooManyRequests)
	})
	return h, nil
}

// pushRequest is the body of a push
// (https://cloud.google.com/pubsub/docs/push#receive_push): the message,
// its data base64 in JSON, and the subscription.
type pushRequest struct {
	Message struct {
		Data        []byte            `json:"data"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime"`
		Attributes  map[string]string `json:"attributes"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// refusal is an answer other than 200.
type refusal struct {
	status  int
	outcome string
	msg     string
}

func (r *refusal) Error() string { return r.msg }

// ServeHTTP handles one push.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.served.ServeHTTP(w, r) }

func (h *Handler) serveAdmitted(w http.ResponseWriter, r *http.Request) {
	outcome := "stored"
	if err := h.serve(w, r); err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = &refusal{status: http.StatusInternalServerError, outcome: "error", msg: err.Error()}
		}
		outcome = ref.outcome
		if ref.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="options-record"`)
		}
		if ref.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, ref.msg, ref.status)
	}
	h.metrics.pushes.WithLabelValues(outcome).Inc()
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return &refusal{http.StatusMethodNotAllowed, "rejected", "method not allowed: Pub/Sub pushes with POST"}
	}
	email, err := h.o.Verifier.Verify(r.Context(), r)
	authlimit.Done(r.Context(), err == nil)
	if err != nil {
		h.o.Logger.Warn("push refused: token not verified", "remote", r.RemoteAddr, "err", err)
		return &refusal{http.StatusUnauthorized, "unauthenticated", "unauthenticated: present the push subscription's Google-signed OIDC token"}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &refusal{http.StatusUnsupportedMediaType, "rejected", fmt.Sprintf("unsupported content type %q: want application/json", ct)}
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return &refusal{http.StatusUnsupportedMediaType, "rejected", fmt.Sprintf("unsupported content encoding %q", ce)}
	}
	body, release, err := h.read(w, r)
	defer release()
	if err != nil {
		return err
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		return &refusal{http.StatusTooManyRequests, "throttled", "too many pushes in flight; Pub/Sub pushes again"}
	}
	var push pushRequest
	if err := json.Unmarshal(body, &push); err != nil {
		return &refusal{http.StatusBadRequest, "rejected", "not a Pub/Sub push: " + err.Error()}
	}
	now := h.o.Now()
	events, undecodable := h.convert(push.Message.Data, now)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.o.WriteTimeout)
	defer cancel()
	out, err := h.o.Pipeline.Process(ctx, h.o.Cluster, events, undecodable)
	if err != nil {
		h.o.Logger.Error("push not stored: Pub/Sub pushes it again", "cluster", h.o.Cluster, "message_id", push.Message.MessageID, "err", err)
		return &refusal{http.StatusServiceUnavailable, "store_failed", "not stored; push again"}
	}
	h.o.Lag.Observe(Source, h.o.Cluster, events, h.o.Now())
	h.o.Logger.Debug("push stored", "cluster", h.o.Cluster, "message_id", push.Message.MessageID, "subscription", push.Subscription,
		"push_account", email, "kept", out.Kept, "duplicates", out.Written.DuplicateEvents)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"received":`+strconv.Itoa(out.Received)+`,"kept":`+strconv.Itoa(out.Kept)+`}`)
	return nil
}

// Reasons a message gives no event: it is acknowledged all the same (a
// push answered otherwise is pushed again, forever), and counted.
const (
	reasonNotKubernetes = "gke_not_kubernetes"
	reasonMalformed     = "gke_malformed"
	reasonOutOfWindow   = "out_of_window"
)

// convert turns a message's data into the events it holds: one, or none
// and the reason. The converted event goes through the webhook's decoder
// (decode.EventList), so it is checked, and its strings made safe, as an
// event the apiserver posted would be.
func (h *Handler) convert(data []byte, now time.Time) ([]auditv1.Event, map[string]int) {
	ev, err := Convert(data)
	if err != nil {
		reason := reasonMalformed
		if errors.Is(err, ErrNotKubernetes) {
			reason = reasonNotKubernetes
		}
		h.o.Logger.Warn("push message skipped", "cluster", h.o.Cluster, "reason", reason, "err", err)
		return nil, map[string]int{reason: 1}
	}
	list, err := json.Marshal(auditv1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "EventList"},
		Items: []auditv1.Event{ev}})
	if err == nil {
		var events []auditv1.Event
		var undecodable map[string]int
		if events, undecodable, err = decode.EventList(list, now); err == nil {
			return h.inWindow(events, undecodable, now)
		}
	}
	h.o.Logger.Warn("push message skipped", "cluster", h.o.Cluster, "reason", reasonMalformed, "audit_id", ev.AuditID, "err", err)
	return nil, map[string]int{reasonMalformed: 1}
}

// inWindow drops the events older than the record keeps, counting them.
func (h *Handler) inWindow(events []auditv1.Event, undecodable map[string]int, now time.Time) ([]auditv1.Event, map[string]int) {
	age := time.Duration(0)
	if h.o.Horizon != nil {
		age = h.o.Horizon()
	}
	if age <= 0 {
		age = auditsink.DefaultMaxEventAge
	}
	oldest := now.Add(-max(age, 24*time.Hour))
	kept := events[:0]
	for i := range events {
		if events[i].StageTimestamp.Time.Before(oldest) {
			if undecodable == nil {
				undecodable = map[string]int{}
			}
			undecodable[reasonOutOfWindow]++
			continue
		}
		kept = append(kept, events[i])
	}
	return kept, undecodable
}

// read reads the body under the limits: the size cap, the body timeout,
// and the bytes in flight (what it holds is given back by release).
func (h *Handler) read(w http.ResponseWriter, r *http.Request) ([]byte, func(), error) {
	want := h.o.MaxBodyBytes
	if n := r.ContentLength; n >= 0 && n < want {
		want = n + 1
	}
	if !h.mem.TryAcquire(want) {
		return nil, func() {}, &refusal{http.StatusTooManyRequests, "throttled", "too many bytes in flight; Pub/Sub pushes again"}
	}
	release := func() { h.mem.Release(want) }
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.o.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes))
	_ = rc.SetReadDeadline(time.Time{})
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, release, &refusal{http.StatusRequestEntityTooLarge, "rejected", fmt.Sprintf("body exceeds %d bytes", h.o.MaxBodyBytes)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, release, &refusal{http.StatusRequestTimeout, "slow_body", "request body too slow"}
	case err != nil:
		return nil, release, &refusal{http.StatusBadRequest, "rejected", "reading body: " + err.Error()}
	case int64(len(body)) > want:
		return nil, release, &refusal{http.StatusBadRequest, "rejected", "body longer than its Content-Length"}
	}
	return body, release, nil
}
