package restoreapi

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxFailingAddrs bounds the client addresses whose failed
// authentications are remembered.
const maxFailingAddrs = 10000

// failures limits failed authentications per client address (a token
// bucket each, as the webhook does). An address past its budget is
// answered 429 before it takes one of the API's global in-flight places or
// costs a TokenReview, so a flood of bad tokens cannot make the API refuse
// its operators. A request that authenticates is not counted.
type failures struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	addrs map[string]*rate.Limiter
}

func newFailures(perSecond float64, burst int) *failures {
	return &failures{rate: rate.Limit(perSecond), burst: burst, addrs: map[string]*rate.Limiter{}}
}

// addr is the connection's address: a header (X-Forwarded-For) is the
// caller's to choose.
func addr(r *http.Request) string {
	a, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return a
}

// blocked tells whether r's address has no failure left, and for how long.
func (f *failures) blocked(r *http.Request, now time.Time) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.addrs[addr(r)]
	if !ok || lim.TokensAt(now) >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - lim.TokensAt(now)) / float64(f.rate) * float64(time.Second))
}

// fail counts one failed authentication of r's address.
func (f *failures) fail(r *http.Request, now time.Time) {
	a := addr(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.addrs[a]
	if !ok {
		if len(f.addrs) >= maxFailingAddrs {
			for k, l := range f.addrs {
				if l.TokensAt(now) >= float64(f.burst) {
					delete(f.addrs, k)
				}
			}
			if len(f.addrs) >= maxFailingAddrs {
				clear(f.addrs)
			}
		}
		lim = rate.NewLimiter(f.rate, f.burst)
		f.addrs[a] = lim
	}
	lim.AllowN(now, 1)
}

// guard answers 429 to an address past its failures, before next.
func (f *failures) guard(next http.Handler, answer func(http.ResponseWriter, *http.Request, time.Duration)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if blocked, wait := f.blocked(r, time.Now()); blocked {
			answer(w, r, wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// FailedAuthGuard limits failed authentications per client address in
// front of another server that authenticates bearer tokens (the record
// API served directly, package aggregated): an answer 401 counts as a
// failure, and an address past its budget (perSecond, burst) is answered
// 429 with Retry-After before it reaches next, its in-flight places or a
// TokenReview.
func FailedAuthGuard(next http.Handler, perSecond float64, burst int) http.Handler {
	f := newFailures(perSecond, burst)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if blocked, wait := f.blocked(r, time.Now()); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(max(int(wait.Seconds()+0.999), 1)))
			http.Error(w, "too many failed authentications from this address: retry later", http.StatusTooManyRequests)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized {
			f.fail(r, time.Now())
		}
	})
}

// statusWriter remembers the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
