package auditsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// reasonTooLarge skips an item of a streamed body longer than
// MaxEventBytes that is not an event (not a JSON object): an event is
// kept whatever its length (see itemStream.event).
const reasonTooLarge = "too_large"

// maxChunkItems bounds the events of one chunk as ChunkBytes bounds its
// bytes: decoding costs a few hundred bytes per event however small it is.
const maxChunkItems = 4000

// chunkHeader and chunkTrailer make each chunk of a streamed body an
// EventList of its own, decoded by DecodeEventList like any batch.
var (
	chunkHeader  = `{"kind":"EventList","apiVersion":"` + auditv1.SchemeGroupVersion.String() + `","items":[`
	chunkTrailer = `]}`
)

// stream decodes and stores a body longer than a chunk as it arrives:
// prefix is what was read of it, rest the reader of the others. Each chunk
// of about ChunkBytes is filtered and stored in its own transaction; at
// most one chunk and one event are held. It returns the outcome of the
// whole batch, or the status to answer and why.
func (h *Handler) stream(ctx context.Context, cluster string, prefix []byte, rest *restReader) (Outcome, int, error) {
	var total Outcome
	s := newItemStream(io.MultiReader(bytes.NewReader(prefix), rest), h.opts.MaxEventBytes)
	if err := s.start(); err != nil {
		return total, readStatus(err), fmt.Errorf("%w: body is not a JSON EventList: %v", ErrBadRequest, err)
	}
	if s.kind != "EventList" || s.apiVersion != auditv1.SchemeGroupVersion.String() {
		return total, http.StatusBadRequest, wrongKind(s.kind, s.apiVersion)
	}
	cut, truncated := 0, 0 // s.cut and s.truncated already logged
	for done := false; !done; {
		var (
			buf     bytes.Buffer
			n       int
			tooLong int
		)
		buf.Grow(int(min(h.opts.ChunkBytes, 1<<20)))
		buf.WriteString(chunkHeader)
		for int64(buf.Len()) < h.opts.ChunkBytes && n+tooLong < maxChunkItems {
			mark := buf.Len()
			if n > 0 {
				buf.WriteByte(',')
			}
			err := s.next(&buf)
			if errors.Is(err, io.EOF) {
				buf.Truncate(mark)
				done = true
				break
			}
			if errors.Is(err, errItemTooLarge) {
				buf.Truncate(mark)
				tooLong++
				continue
			}
			if err != nil {
				return total, readStatus(err), fmt.Errorf("%w: body is not a JSON EventList: %v", ErrBadRequest, err)
			}
			n++
		}
		buf.WriteString(chunkTrailer)
		if s.cut > cut {
			h.opts.Logger.Warn("deletecollection answers longer than the largest event taken: their later items kept as their metadata only",
				"cluster", cluster, "items", s.cut-cut, "max_event_bytes", h.opts.MaxEventBytes)
			cut = s.cut
		}
		if s.truncated > truncated {
			h.opts.Metrics.truncated.WithLabelValues(cluster).Add(float64(s.truncated - truncated))
			h.opts.Logger.Warn("events longer than the largest event taken: kept without their bodies or longest values, marked audit.k8s.io/truncated",
				"cluster", cluster, "events", s.truncated-truncated, "max_event_bytes", h.opts.MaxEventBytes)
			truncated = s.truncated
		}
		rest.pause() // the sender waits for the chunk to be stored
		now := h.now()
		events, undecodable, err := DecodeEventList(buf.Bytes(), now)
		if err != nil {
			return total, http.StatusBadRequest, err
		}
		if tooLong > 0 {
			if undecodable == nil {
				undecodable = map[string]int{}
			}
			undecodable[reasonTooLarge] += tooLong
			h.opts.Logger.Warn("events longer than the largest event taken: skipped", "cluster", cluster,
				"events", tooLong, "max_event_bytes", h.opts.MaxEventBytes)
		}
		events, undecodable = h.inWindow(events, undecodable, now)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.opts.WriteTimeout)
		out, err := h.opts.Pipeline.Process(wctx, cluster, events, undecodable)
		cancel()
		total.Add(out)
		if err != nil {
			return total, http.StatusServiceUnavailable, err
		}
		rest.resume()
	}
	return total, http.StatusOK, nil
}

// readStatus is the answer to a body that could not be read to its end.
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
