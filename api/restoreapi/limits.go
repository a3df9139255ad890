package restoreapi

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
)

// inFlight caps the requests served at once, in all and per caller, so
// that a few callers cannot hold every connection of the API's pool nor
// every SubjectAccessReview: a request over a cap is answered 429 at once,
// never queued.
type inFlight struct {
	all     chan struct{}
	callers *history.CallerLimiter
}

func newInFlight(all int, callers *history.CallerLimiter) *inFlight {
	if all <= 0 {
		all = history.DefaultMaxInFlight
	}
	return &inFlight{all: make(chan struct{}, all), callers: callers}
}

func (l *inFlight) global(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case l.all <- struct{}{}:
			defer func() { <-l.all }()
			next.ServeHTTP(w, r)
		default:
			writeError(w, r, log, fmt.Errorf("%w: the API serves %d requests at once", errs.ErrTooManyRequests, cap(l.all)))
		}
	})
}

func (l *inFlight) perCaller(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, ok := l.callers.Acquire(history.Caller(r.Context()))
		if !ok {
			writeError(w, r, log, fmt.Errorf("%w: %d of your requests are being served; wait for them", errs.ErrTooManyRequests, l.callers.Limit()))
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}
