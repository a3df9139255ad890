package auditsink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/decode"
)

// HandlerOptions configure the webhook handler.
type HandlerOptions struct {
	// Pipeline filters and stores the events.
	Pipeline *Pipeline
	// Authenticator maps callers to clusters; required.
	Authenticator *Authenticator
	// MaxBodyBytes caps a request body; 0 (the default): no cap. The
	// kube-apiserver never retries a 413, so a cap loses every event of a
	// batch larger than it.
	MaxBodyBytes int64
	// ChunkBytes is the most of a body held in memory at once (default
	// 16 MiB). A body up to it is decoded and stored at once, in one
	// transaction; a longer one is decoded as a stream and stored in chunks
	// of about ChunkBytes, each in its own transaction, as it arrives. The
	// batch is acknowledged once its last chunk is stored: a chunk that
	// fails makes it 503, and the apiserver's retry stores the rest (the
	// stored chunks' events are found already stored).
	ChunkBytes int64
	// MaxEventBytes caps one event of a streamed body (default 32 MiB,
	// above the largest event a kube-apiserver writes for an object it
	// accepts). A longer event is kept all the same, so that who did what,
	// and when, is never lost for a length a client can pad: without its
	// bodies (a deletecollection's List with its later items as their
	// metadata only), its longest values shortened, marked
	// audit.k8s.io/truncated (see itemStream.event).
	MaxEventBytes int64
	// MaxInFlight caps the batches processed at once (default 8). Beyond it
	// the handler answers 429 with Retry-After, and the apiserver retries.
	MaxInFlight int
	// MaxInFlightBytes caps the bodies held at once (default 96 MiB), so
	// memory stays bounded whatever the load: a request beyond it gets 429.
	// A body is counted as it arrives; a streamed one is counted as
	// ChunkBytes + MaxEventBytes while it is decoded. Beyond that count, a
	// long event holds more for a moment: an eighth of MaxEventBytes for a
	// long member, and, cutting a long deletecollection's List, the copy
	// compact makes and an item's metadata read aside, so that an event
	// holds less than three times MaxEventBytes at its peak (measured by
	// TestALongEventHoldsLittleBeyondItsLimit; see itemStream.event).
	MaxInFlightBytes int64
	// WriteTimeout bounds the store write of one batch (default 20 s, below
	// the apiserver's 30 s request timeout).
	WriteTimeout time.Duration
	// MinBodyRate is the slowest a body may arrive, in bytes per second
	// averaged from the start of the request, once the first 2 s have passed
	// (default 32 KiB/s). A slower body is cut off with 408. Bodies are read
	// before the request takes one of MaxInFlight's slots, so a slow caller
	// never holds one.
	MinBodyRate int64
	// BodyTimeout bounds the reading of a whole body (default 15 s).
	BodyTimeout time.Duration
	// Horizon, if set, returns how far back the record keeps events (the
	// longest retention of the rules in force; 0 when unknown). Events
	// older than that — or than a day, if it is shorter — are skipped and
	// counted (reason "out_of_window"): each day of events is a partition,
	// created on demand, and a caller stamping events on many past days
	// would otherwise create a partition for each. With no Horizon, or
	// none known, the bound is DefaultMaxEventAge. Events more than a day
	// ahead are refused by the decoder.
	Horizon func() time.Duration
	// AuthFailureRate and AuthFailureBurst limit failed authentications
	// per client address (defaults 1 a second, a burst of 10): beyond them
	// the answer is 429 instead of 401. Authenticated callers are never
	// limited.
	AuthFailureRate  float64
	AuthFailureBurst int
	// Lag, if set, records the delay of the events of each Delivery and
	// of the webhook (as WebhookSource).
	Lag     *SourceLag
	Metrics *Metrics
	Logger  *slog.Logger
}

// WebhookSource names the audit webhook in the lag metrics and the
// sources' progress (SourceLag).
const WebhookSource = "webhook"

// DefaultMaxEventAge bounds the age of the events the webhook takes when
// the rules' retention is not known.
const DefaultMaxEventAge = 400 * 24 * time.Hour

// reasonOutOfWindow skips events older than the record keeps.
const reasonOutOfWindow = "out_of_window"

// Handler is the audit webhook endpoint.
type Handler struct {
	opts  HandlerOptions
	sem   chan struct{}
	body  *bodyReader
	fails *failLimiter
	now   func() time.Time
}

// NewHandler validates the options and builds the handler.
func NewHandler(opts HandlerOptions) (*Handler, error) {
	if opts.Pipeline == nil || opts.Authenticator == nil {
		return nil, errors.New("auditsink: handler needs a pipeline and an authenticator")
	}
	if opts.MaxBodyBytes < 0 {
		opts.MaxBodyBytes = 0
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = 16 << 20
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = 32 << 20
	}
	if opts.MaxInFlightBytes <= 0 {
		opts.MaxInFlightBytes = 96 << 20
	}
	if opts.MaxInFlightBytes < opts.ChunkBytes+opts.MaxEventBytes {
		opts.MaxInFlightBytes = opts.ChunkBytes + opts.MaxEventBytes
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 8
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 20 * time.Second
	}
	if opts.MinBodyRate <= 0 {
		opts.MinBodyRate = defaultMinBodyRate
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = defaultBodyTimeout
	}
	if opts.AuthFailureRate <= 0 {
		opts.AuthFailureRate = 1
	}
	if opts.AuthFailureBurst <= 0 {
		opts.AuthFailureBurst = 10
	}
	if opts.Metrics == nil {
		opts.Metrics = opts.Pipeline.metrics
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := decode.Warm(); err != nil {
		opts.Logger.Warn("the EventList decoder was not compiled ahead; the first batch compiles it", "err", err)
	}
	return &Handler{
		opts: opts,
		sem:  make(chan struct{}, opts.MaxInFlight),
		body: &bodyReader{max: opts.MaxBodyBytes, chunk: opts.ChunkBytes, minRate: opts.MinBodyRate, timeout: opts.BodyTimeout,
			mem: semaphore.NewWeighted(opts.MaxInFlightBytes), now: time.Now},
		fails: newFailLimiter(opts.AuthFailureRate, opts.AuthFailureBurst),
		now:   time.Now,
	}, nil
}

// ServeHTTP handles one POSTed EventList: it answers 200 once the batch is
// stored durably, and otherwise writes the refusal serve returned.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	outcome := "stored"
	if err := h.serve(w, r); err != nil {
		outcome = h.refuse(w, err)
	}
	h.opts.Metrics.batches.WithLabelValues(outcome).Inc()
	h.opts.Metrics.ack.Observe(time.Since(start).Seconds())
}

// serve authenticates the caller, reads the body under the limits, records
// the events and acknowledges them. Any other answer is a *refusal.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	cluster, err := h.authenticate(r)
	if err != nil {
		return err
	}
	if err := checkRequest(r); err != nil {
		return err
	}
	// The answer, whatever it is, must not wait on a caller that does not read it.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.opts.BodyTimeout + h.opts.WriteTimeout + 10*time.Second))
	// The body is read before a slot is taken: a slow sender holds its
	// connection, not a slot, and only the bytes it has sent.
	body, held, rest, err := h.body.read(w, r)
	defer func() { h.body.mem.Release(held) }()
	// The events point into the body: it is reused for another request
	// once the batch is answered, unless a writer still reads it.
	var out Outcome
	defer func() {
		if !out.Retained {
			recycleBody(body)
		}
	}()
	if err != nil {
		return h.readRefusal(r, cluster, len(body), err)
	}
	release, err := h.takeSlot()
	if err != nil {
		return err
	}
	defer release()
	if rest != nil {
		if err := h.reserveStream(&held); err != nil {
			return err
		}
		out, err = h.recordStream(w, r, cluster, body, rest)
	} else {
		out, err = h.recordBatch(r.Context(), cluster, body)
	}
	if err != nil {
		return err
	}
	h.ack(w, cluster, out)
	return nil
}

// authenticate returns the caller's cluster, or refuses a caller that is
// not one: 401, or 429 beyond the failures allowed from its address.
func (h *Handler) authenticate(r *http.Request) (string, error) {
	if cluster, ok := h.opts.Authenticator.Authenticate(r); ok {
		return cluster, nil
	}
	if ok, wait := h.fails.allow(r, time.Now()); !ok {
		h.opts.Metrics.authFailures.WithLabelValues("throttled").Inc()
		return "", newRefusal(http.StatusTooManyRequests, "unauthenticated",
			"too many failed authentications from this address; retry later",
			"Retry-After", strconv.Itoa(int(wait.Seconds())+1), "Connection", "close")
	}
	h.opts.Metrics.authFailures.WithLabelValues("refused").Inc()
	return "", newRefusal(http.StatusUnauthorized, "unauthenticated",
		"unauthenticated: present the configured client certificate or bearer token",
		"WWW-Authenticate", `Bearer realm="options-record"`)
}

// checkRequest refuses a request that is not a POST of uncompressed JSON.
func checkRequest(r *http.Request) error {
	if r.Method != http.MethodPost {
		return newRefusal(http.StatusMethodNotAllowed, "rejected",
			"method not allowed: POST an audit.k8s.io/v1 EventList", "Allow", http.MethodPost)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return newRefusal(http.StatusUnsupportedMediaType, "rejected",
				fmt.Sprintf("unsupported content type %q: want application/json", ct))
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// Never inflate: a compressed body escapes the size limit (a bomb).
		return newRefusal(http.StatusUnsupportedMediaType, "rejected",
			fmt.Sprintf("unsupported content encoding %q: send the EventList uncompressed", ce))
	}
	return nil
}

// readRefusal is the answer to a body that could not be read (received
// bytes of it).
func (h *Handler) readRefusal(r *http.Request, cluster string, received int, err error) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return newRefusal(http.StatusRequestEntityTooLarge, "rejected",
			fmt.Sprintf("body exceeds %d bytes: raise or unset --webhook-max-body-bytes", h.opts.MaxBodyBytes))
	case errors.Is(err, errBytesBusy):
		// Connection: close, as the rest of the body is not read.
		return newRefusal(http.StatusTooManyRequests, "throttled", "too many bytes in flight; retry",
			"Retry-After", "1", "Connection", "close")
	case errors.Is(err, errSlowBody):
		// The apiserver retries a failed batch only when the answer says
		// so (webhook.DefaultShouldRetry): a slow link is no reason to
		// lose the batch.
		return newRefusal(http.StatusRequestTimeout, "slow_body",
			fmt.Sprintf("request body slower than %d bytes/s or longer than %v to send", h.opts.MinBodyRate, h.opts.BodyTimeout),
			"Retry-After", slowBodyRetryAfter, "Connection", "close").
			logged(slog.LevelWarn, "request body too slow: cut off", "cluster", cluster, "remote", r.RemoteAddr,
				"received_bytes", received, "min_rate", h.opts.MinBodyRate)
	}
	return newRefusal(http.StatusBadRequest, "rejected", "reading body: "+err.Error())
}

// takeSlot takes one of MaxInFlight's slots, to give back with release,
// or refuses the batch with 429.
func (h *Handler) takeSlot() (release func(), err error) {
	select {
	case h.sem <- struct{}{}:
	default:
		return nil, newRefusal(http.StatusTooManyRequests, "throttled", "too many batches in flight; retry", "Retry-After", "1")
	}
	h.opts.Metrics.inFlight.Inc()
	return func() {
		h.opts.Metrics.inFlight.Dec()
		<-h.sem
	}, nil
}

// reserveStream counts a body longer than a chunk, decoded as a stream, as
// a chunk and the largest event at most, the bytes read so far (held)
// included, or refuses it with 429.
func (h *Handler) reserveStream(held *int64) error {
	need := h.opts.ChunkBytes + h.opts.MaxEventBytes - *held
	if need <= 0 {
		return nil
	}
	if !h.body.mem.TryAcquire(need) {
		// Connection: close, as the rest of the body is not read.
		return newRefusal(http.StatusTooManyRequests, "throttled", "too many bytes in flight; retry",
			"Retry-After", "1", "Connection", "close")
	}
	*held += need
	return nil
}

// recordStream decodes and stores a body longer than a chunk as it
// arrives (see stream): prefix is what was read of it.
func (h *Handler) recordStream(w http.ResponseWriter, r *http.Request, cluster string, prefix []byte, rest *restReader) (Outcome, error) {
	out, status, err := h.stream(r.Context(), cluster, prefix, rest)
	// A long stream outlives the write deadline set for one chunk: the
	// answer, whichever it is, gets its own.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Second))
	switch {
	case err == nil:
		return out, nil
	case status == http.StatusServiceUnavailable:
		return out, unavailable(cluster, out.Received, err)
	case status == http.StatusRequestTimeout:
		return out, newRefusal(status, "slow_body",
			fmt.Sprintf("request body slower than %d bytes/s or a chunk longer than %v to send", h.opts.MinBodyRate, h.opts.BodyTimeout),
			"Retry-After", slowBodyRetryAfter, "Connection", "close").
			logged(slog.LevelWarn, "request body too slow: cut off", "cluster", cluster, "remote", r.RemoteAddr, "min_rate", h.opts.MinBodyRate)
	}
	return out, newRefusal(status, "rejected", err.Error(), "Connection", "close").
		logged(slog.LevelWarn, "rejected webhook body", "cluster", cluster, "err", err)
}

// recordBatch decodes a body read whole and stores its events in one
// transaction.
func (h *Handler) recordBatch(ctx context.Context, cluster string, body []byte) (Outcome, error) {
	now := h.now()
	events, undecodable, err := decode.EventList(body, now)
	if err != nil {
		return Outcome{}, newRefusal(http.StatusBadRequest, "rejected", err.Error()).
			logged(slog.LevelWarn, "rejected webhook body", "cluster", cluster, "err", err)
	}
	events, undecodable = h.inWindow(events, undecodable, now)
	// The write is not cut short by the apiserver hanging up: what has started
	// to be stored is finished (the apiserver will redeliver; we dedupe).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.WriteTimeout)
	defer cancel()
	out, err := h.opts.Pipeline.ProcessFrom(ctx, WebhookSource, cluster, events, undecodable)
	if err != nil {
		return out, unavailable(cluster, len(events), err)
	}
	if !out.Written.Journaled { // else its drain observes it
		h.opts.Lag.Observe(ctx, WebhookSource, cluster, events, h.now())
	}
	return out, nil
}

// ack answers a batch stored durably: 200, with its counts.
func (h *Handler) ack(w http.ResponseWriter, cluster string, out Outcome) {
	h.opts.Logger.Debug("batch stored", "cluster", cluster, "received", out.Received, "kept", out.Kept,
		"events_written", out.Written.Events, "duplicates", out.Written.DuplicateEvents)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"received":`+strconv.Itoa(out.Received)+`,"kept":`+strconv.Itoa(out.Kept)+`}`)
}

// inWindow drops the events older than the record keeps, counting them in
// skipped.
func (h *Handler) inWindow(events []auditv1.Event, skipped map[string]int, now time.Time) ([]auditv1.Event, map[string]int) {
	return InWindow(h.opts.Horizon, events, skipped, now)
}

// InWindow drops the events older than horizon says the record keeps (see
// HandlerOptions.Horizon: nil or 0 is DefaultMaxEventAge, a day at least),
// counting them in skipped (reason "out_of_window", which the pipeline
// counts as dropped). Every source applies it before the pipeline: each
// day of events is a partition.
func InWindow(horizon func() time.Duration, events []auditv1.Event, skipped map[string]int, now time.Time) ([]auditv1.Event, map[string]int) {
	age := time.Duration(0)
	if horizon != nil {
		age = horizon()
	}
	if age <= 0 {
		age = DefaultMaxEventAge
	}
	// The apiserver's delivery (retries, a sink that was down) and clock
	// skew: a day at least.
	age = max(age, 24*time.Hour)
	oldest := now.Add(-age)
	kept := events[:0]
	for i := range events {
		if events[i].StageTimestamp.Time.Before(oldest) {
			if skipped == nil {
				skipped = map[string]int{}
			}
			skipped[reasonOutOfWindow]++
			continue
		}
		kept = append(kept, events[i])
	}
	return kept, skipped
}
