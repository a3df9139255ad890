package auditsink

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
)

// refusal is an answer to a webhook request other than 200, as an error:
// the steps of Handler.serve return it, and refuse writes it, in one place.
type refusal struct {
	status  int
	outcome string   // the batches metric's outcome
	msg     string   // the answer's body
	header  []string // key/value pairs set on the answer
	// logMsg, if set, is logged at level with logArgs when the refusal is
	// written.
	level   slog.Level
	logMsg  string
	logArgs []any
}

func (e *refusal) Error() string { return e.msg }

// newRefusal answers status with msg and the header's key/value pairs, and
// counts the batch as outcome.
func newRefusal(status int, outcome, msg string, header ...string) *refusal {
	return &refusal{status: status, outcome: outcome, msg: msg, header: header}
}

// logged has the refusal logged when it is written.
func (e *refusal) logged(level slog.Level, msg string, args ...any) *refusal {
	e.level, e.logMsg, e.logArgs = level, msg, args
	return e
}

// unavailable answers a batch the store did not take (events of it): 503,
// so that the apiserver retries it.
func unavailable(cluster string, events int, err error) *refusal {
	return newRefusal(http.StatusServiceUnavailable, "unavailable", "the record is unavailable; retry", "Retry-After", "5").
		logged(slog.LevelError, "batch not stored; the apiserver will retry", "cluster", cluster, "events", events, "err", err)
}

// refuse writes the refusal err (logging it if it says so) and returns the
// batch's outcome for the metric.
func (h *Handler) refuse(w http.ResponseWriter, err error) string {
	var ref *refusal
	if !errors.As(err, &ref) {
		ref = newRefusal(http.StatusInternalServerError, "error", "internal error").
			logged(slog.LevelError, "webhook request failed", "err", err)
	}
	if ref.logMsg != "" {
		h.opts.Logger.Log(context.Background(), ref.level, ref.logMsg, ref.logArgs...)
	}
	for i := 0; i+1 < len(ref.header); i += 2 {
		w.Header().Set(ref.header[i], ref.header[i+1])
	}
	http.Error(w, ref.msg, ref.status)
	return ref.outcome
}
