package history

import (
	"sync"

	"k8s.io/apiserver/pkg/authentication/user"
)

// The bounds of the API's work, the same for both front doors (the direct
// API and the aggregated API), and the defaults of --api-max-in-flight and
// --api-max-in-flight-per-user.
const (
	DefaultMaxInFlight        = 16
	DefaultMaxInFlightPerUser = 4
)

// CallerLimiter caps the requests of one caller served at once. One
// limiter is shared by both front doors, so a caller holds at most Limit
// requests in all, whichever door they come through: a few callers cannot
// hold every connection of the API's pool nor every SubjectAccessReview.
type CallerLimiter struct {
	limit int
	mu    sync.Mutex
	users map[string]int
}

// NewCallerLimiter returns a limiter of limit requests per caller
// (DefaultMaxInFlightPerUser when limit <= 0).
func NewCallerLimiter(limit int) *CallerLimiter {
	if limit <= 0 {
		limit = DefaultMaxInFlightPerUser
	}
	return &CallerLimiter{limit: limit, users: map[string]int{}}
}

// Limit is the number of requests of one caller served at once.
func (l *CallerLimiter) Limit() int { return l.limit }

// Acquire takes one of u's places, or reports that u has none left. The
// caller must call release once its request is served.
func (l *CallerLimiter) Acquire(u user.Info) (release func(), ok bool) {
	k := u.GetName() + "\x00" + u.GetUID()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users[k] >= l.limit {
		return nil, false
	}
	l.users[k]++
	return func() {
		l.mu.Lock()
		if l.users[k]--; l.users[k] == 0 {
			delete(l.users, k)
		}
		l.mu.Unlock()
	}, true
}
