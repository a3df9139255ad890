package restoreapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/options-record/options-record/api/history"
)

// inFlight caps the requests served at once, in all and per caller, so
// that a few callers cannot hold every connection of the API's pool nor
// every SubjectAccessReview: a request over a cap is answered 429 at once,
// never queued.
type inFlight struct {
	all     chan struct{}
	perUser int
	mu      sync.Mutex
	users   map[string]int
}

func newInFlight(all, perUser int) *inFlight {
	if all <= 0 {
		all = 16
	}
	if perUser <= 0 {
		perUser = 4
	}
	return &inFlight{all: make(chan struct{}, all), perUser: perUser, users: map[string]int{}}
}

func (l *inFlight) global(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case l.all <- struct{}{}:
			defer func() { <-l.all }()
			next.ServeHTTP(w, r)
		default:
			writeError(w, r, log, fmt.Errorf("%w: the API serves %d requests at once", history.ErrTooManyRequests, cap(l.all)))
		}
	})
}

func (l *inFlight) perCaller(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := history.Caller(r.Context())
		k := u.GetName() + "\x00" + u.GetUID()
		l.mu.Lock()
		if l.users[k] >= l.perUser {
			l.mu.Unlock()
			writeError(w, r, log, fmt.Errorf("%w: %d of your requests are being served; wait for them", history.ErrTooManyRequests, l.perUser))
			return
		}
		l.users[k]++
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			if l.users[k]--; l.users[k] == 0 {
				delete(l.users, k)
			}
			l.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}
