package auditsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Delivery is a format other than the webhook's EventList in which a log
// service pushes audit events over HTTPS (package auditsink/firehose for
// EKS). The handler serves it under the webhook's own bounds: the failed
// authentications per address, the body's size, rate and timeout read
// before a slot is taken, the batches and bytes in flight, the write
// timeout. The delivery authenticates its sender, turns a body into
// batches and writes answers in its format; the handler runs each batch
// through the pipeline and answers success only once all are durable.
type Delivery interface {
	// Name names the delivery in logs and metrics ("firehose").
	Name() string
	// Authenticate says whether r comes from the configured sender.
	Authenticate(r *http.Request) bool
	// Check refuses, with a status and a message, a request that is not
	// one of the delivery's (method, content type, encoding).
	Check(r *http.Request) (status int, err error)
	// Decode turns a body into batches, at most one per cluster. An error
	// refuses the request with 400, or a *DeliveryError's status.
	Decode(r *http.Request, body []byte, now time.Time) ([]DeliveryBatch, error)
	// Answer writes the answer: 200 once every batch is stored, otherwise
	// the status and the message.
	Answer(w http.ResponseWriter, r *http.Request, status int, msg string)
}

// DeliveryBatch is the events of one cluster in a delivered body.
type DeliveryBatch struct {
	Cluster     string
	Events      []auditv1.Event
	Undecodable map[string]int
}

// DeliveryError refuses a delivered body with a status other than 400 (413
// for a body that decompresses to too much).
type DeliveryError struct {
	Status int
	Err    error
}

func (e *DeliveryError) Error() string { return e.Err.Error() }
func (e *DeliveryError) Unwrap() error { return e.Err }

// ServeDelivery serves one request of d under the handler's bounds (see
// Delivery).
func (h *Handler) ServeDelivery(w http.ResponseWriter, r *http.Request, d Delivery) {
	start := time.Now()
	outcome := "stored"
	if err := h.serveDelivery(w, r, d); err != nil {
		var ref *refusal
		if !errors.As(err, &ref) {
			ref = newRefusal(http.StatusInternalServerError, "error", "internal error").
				logged(slog.LevelError, d.Name()+" request failed", "err", err)
		}
		if ref.logMsg != "" {
			h.opts.Logger.Log(context.Background(), ref.level, ref.logMsg, ref.logArgs...)
		}
		for i := 0; i+1 < len(ref.header); i += 2 {
			w.Header().Set(ref.header[i], ref.header[i+1])
		}
		d.Answer(w, r, ref.status, ref.msg)
		outcome = ref.outcome
	} else {
		d.Answer(w, r, http.StatusOK, "")
	}
	h.opts.Metrics.batches.WithLabelValues(outcome).Inc()
	h.opts.Metrics.ack.Observe(time.Since(start).Seconds())
}

func (h *Handler) serveDelivery(w http.ResponseWriter, r *http.Request, d Delivery) error {
	if !d.Authenticate(r) {
		if ok, wait := h.fails.allow(r, time.Now()); !ok {
			h.opts.Metrics.authFailures.WithLabelValues("throttled").Inc()
			return newRefusal(http.StatusTooManyRequests, "unauthenticated",
				"too many failed authentications from this address; retry later",
				"Retry-After", strconv.Itoa(int(wait.Seconds())+1), "Connection", "close")
		}
		h.opts.Metrics.authFailures.WithLabelValues("refused").Inc()
		return newRefusal(http.StatusUnauthorized, "unauthenticated", "unauthenticated: present the configured access key")
	}
	if status, err := d.Check(r); err != nil {
		return newRefusal(status, "rejected", err.Error())
	}
	// The answer, whatever it is, must not wait on a sender that does not read it.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.opts.BodyTimeout + h.opts.WriteTimeout + 10*time.Second))
	// The body is read before a slot is taken, as the webhook's.
	body, held, rest, err := h.body.read(w, r)
	defer func() { h.body.mem.Release(held) }()
	if err != nil {
		return h.readRefusal(r, d.Name(), len(body), err)
	}
	if rest != nil {
		// A delivery's body is decoded whole (its records are base64 in
		// one JSON document): it must fit in one chunk.
		return newRefusal(http.StatusRequestEntityTooLarge, "rejected",
			fmt.Sprintf("body longer than %d bytes (--webhook-chunk-bytes): lower the sender's buffer size", h.opts.ChunkBytes),
			"Connection", "close")
	}
	release, err := h.takeSlot()
	if err != nil {
		return err
	}
	defer release()
	now := h.now()
	batches, err := d.Decode(r, body, now)
	if err != nil {
		status := http.StatusBadRequest
		if de, ok := errors.AsType[*DeliveryError](err); ok {
			status = de.Status
		}
		return newRefusal(status, "rejected", err.Error()).
			logged(slog.LevelWarn, "rejected "+d.Name()+" body", "err", err)
	}
	// What has started to be stored is finished whether the sender waits
	// or not: it will deliver again, and the events are found stored.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.opts.WriteTimeout)
	defer cancel()
	for _, b := range batches {
		events, undecodable := h.inWindow(b.Events, b.Undecodable, now)
		out, err := h.opts.Pipeline.ProcessFrom(ctx, d.Name(), b.Cluster, events, undecodable)
		if err != nil {
			return unavailable(b.Cluster, len(events), err)
		}
		if !out.Written.Journaled { // else its drain observes it
			h.opts.Lag.Observe(ctx, d.Name(), b.Cluster, events, h.now())
		}
	}
	return nil
}
