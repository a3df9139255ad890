package auditsink

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxFailingAddrs bounds the addresses whose failures are remembered.
const maxFailingAddrs = 10000

// failLimiter limits failed authentications per client address (a token
// bucket each). It is consulted only after authentication has failed: an
// authenticated caller is never delayed or refused by it.
type failLimiter struct {
	rate  rate.Limit
	burst int

	mu    sync.Mutex
	addrs map[string]*rate.Limiter
}

func newFailLimiter(perSecond float64, burst int) *failLimiter {
	return &failLimiter{rate: rate.Limit(perSecond), burst: burst, addrs: map[string]*rate.Limiter{}}
}

// allow counts one failure of r's address and tells whether it is within
// the limit, and if not, how long until the next one is.
func (f *failLimiter) allow(r *http.Request, now time.Time) (bool, time.Duration) {
	// The connection's address: a header (X-Forwarded-For) is the
	// caller's to choose.
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	lim, ok := f.addrs[addr]
	if !ok {
		if len(f.addrs) >= maxFailingAddrs {
			f.forget(now)
		}
		lim = rate.NewLimiter(f.rate, f.burst)
		f.addrs[addr] = lim
	}
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// forget drops the addresses whose bucket has filled up again (they are
// as good as new), or all of them if none has: memory stays bounded
// whatever the number of addresses.
func (f *failLimiter) forget(now time.Time) {
	for a, lim := range f.addrs {
		if lim.TokensAt(now) >= float64(f.burst) {
			delete(f.addrs, a)
		}
	}
	if len(f.addrs) >= maxFailingAddrs {
		clear(f.addrs)
	}
}
