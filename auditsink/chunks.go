package auditsink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/options-record/options-record/auditsink/decode"
)

// reasonTooLarge skips an item of a streamed body longer than
// MaxEventBytes that is not an event (not a JSON object): an event is
// kept whatever its length (see decode.Chunk).
const reasonTooLarge = "too_large"

// stream decodes and stores a body longer than a chunk as it arrives:
// prefix is what was read of it, rest the reader of the others. Each chunk
// of about ChunkBytes is filtered and stored in its own transaction; at
// most one chunk and one event are held. It returns the outcome of the
// whole batch, or the status to answer and why.
func (h *Handler) stream(ctx context.Context, cluster string, prefix []byte, rest *restReader) (Outcome, int, error) {
	var total Outcome
	s := decode.NewStream(io.MultiReader(bytes.NewReader(prefix), rest), h.opts.MaxEventBytes, h.opts.ChunkBytes)
	if err := s.Start(); err != nil {
		return total, readStatus(err), err
	}
	for {
		c, err := s.Next()
		if err != nil {
			return total, readStatus(err), err
		}
		if c.Cut > 0 {
			h.opts.Logger.Warn("deletecollection answers longer than the largest event taken: their later items kept as their metadata only",
				"cluster", cluster, "items", c.Cut, "max_event_bytes", h.opts.MaxEventBytes)
		}
		if c.Truncated > 0 {
			h.opts.Metrics.truncated.WithLabelValues(cluster).Add(float64(c.Truncated))
			h.opts.Logger.Warn("events longer than the largest event taken: kept without their bodies or longest values, marked audit.k8s.io/truncated",
				"cluster", cluster, "events", c.Truncated, "max_event_bytes", h.opts.MaxEventBytes)
		}
		rest.pause() // the sender waits for the chunk to be stored
		now := h.now()
		events, undecodable, err := decode.EventList(c.Body, now)
		if err != nil {
			return total, http.StatusBadRequest, err
		}
		if c.TooLarge > 0 {
			if undecodable == nil {
				undecodable = map[string]int{}
			}
			undecodable[reasonTooLarge] += c.TooLarge
			h.opts.Logger.Warn("events longer than the largest event taken: skipped", "cluster", cluster,
				"events", c.TooLarge, "max_event_bytes", h.opts.MaxEventBytes)
		}
		events, undecodable = h.inWindow(events, undecodable, now)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.WriteTimeout)
		out, err := h.opts.Pipeline.ProcessFrom(wctx, WebhookSource, cluster, events, undecodable)
		if err == nil && !out.Written.Journaled { // else its drain observes it
			h.opts.Lag.Observe(wctx, WebhookSource, cluster, events, h.now())
		}
		cancel()
		total.Add(out)
		if err != nil {
			return total, http.StatusServiceUnavailable, err
		}
		rest.resume()
		if c.Last {
			return total, http.StatusOK, nil
		}
	}
}

// readStatus is the answer to a body that could not be read to its end
// (or is not an EventList).
func readStatus(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, errSlowBody):
		return http.StatusRequestTimeout
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
