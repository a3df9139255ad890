package authlimit

import (
	"cmp"
	"container/list"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultFailureRate        = 1  // failed authentications a second, per address
	DefaultFailureBurst       = 10 // failed authentications at once, per address
	DefaultMaxInFlight        = 64 // requests being authenticated at once, in all
	DefaultMaxInFlightPerAddr = 8  // requests being authenticated at once, per address
)

// maxAddrs bounds the addresses remembered. When it is reached, the least
// recently used addresses as good as new (a full budget, nothing being
// authenticated) are forgotten; if none is, a new address is refused (429)
// until one is: a remembered budget is never forgotten while it is spent.
const maxAddrs = 10000

// Options configure a Limiter; a zero is its default.
type Options struct {
	// FailureRate and FailureBurst are each address's budget of failed
	// authentications: FailureBurst at once, then FailureRate a second.
	FailureRate  float64
	FailureBurst int
	// MaxInFlight and MaxInFlightPerAddr cap the requests being
	// authenticated at once, in all and per address.
	MaxInFlight, MaxInFlightPerAddr int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Limiter limits unauthenticated requests per client address. Its methods
// are safe for concurrent use.
type Limiter struct {
	rate              float64
	burst             float64
	maxAll, maxPerAdr int
	now               func() time.Time

	mu       sync.Mutex
	inFlight int
	addrs    map[string]*list.Element // of *addrState, in lru
	lru      list.List                // of *addrState, most recently used first
	// noRoomUntil is, after forget found nothing to drop, when the first
	// state can be as good as new: until then forget need not walk again.
	noRoomUntil time.Time
}

// addrState is one address's token bucket of failures and its requests
// being authenticated.
type addrState struct {
	key      string
	tokens   float64
	at       time.Time // when tokens was last brought up to date
	inFlight int
}

// New builds a Limiter.
func New(o Options) *Limiter {
	l := &Limiter{
		rate:      cmp.Or(o.FailureRate, DefaultFailureRate),
		burst:     float64(cmp.Or(o.FailureBurst, DefaultFailureBurst)),
		maxAll:    cmp.Or(o.MaxInFlight, DefaultMaxInFlight),
		maxPerAdr: cmp.Or(o.MaxInFlightPerAddr, DefaultMaxInFlightPerAddr),
		now:       o.Now,
		addrs:     map[string]*list.Element{},
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Refusal is the error of a request refused before authentication: answer
// it 429 with Retry-After.
type Refusal struct {
	// RetryAfter is when to try again (at least a second).
	RetryAfter time.Duration
	// Reason says which limit refused, for the caller.
	Reason string
}

func (e *Refusal) Error() string { return e.Reason }

// RetryAfterSeconds is the Retry-After header's value.
func (e *Refusal) RetryAfterSeconds() string {
	return fmt.Sprint(max(int((e.RetryAfter+time.Second-1)/time.Second), 1))
}

// Addr is r's client address: the connection's. A header
// (X-Forwarded-For) is the caller's to choose.
func Addr(r *http.Request) string {
	a, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return a
}

// key is the budget addr is counted in: an IPv4 address (an IPv4-mapped
// IPv6 address is one), or an IPv6 address's /64, the block a network
// commonly gives one customer, so that its many addresses share one budget
// (a network with more /64s can still fill the table: new addresses are
// then refused, see maxAddrs); otherwise addr as it is.
func key(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// Admit takes, before r is authenticated, one failure of its address's
// budget and a place among the requests being authenticated (per address
// and in all); or refuses r with a *Refusal. Call done once authentication
// is decided: authenticated gives the failure back; both release the
// places. Calls of done after the first do nothing.
func (l *Limiter) Admit(r *http.Request) (done func(authenticated bool), err error) {
	addr := key(Addr(r))
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight >= l.maxAll {
		return nil, &Refusal{RetryAfter: time.Second, Reason: fmt.Sprintf("%d requests are being authenticated; retry later", l.maxAll)}
	}
	var s *addrState
	if e, ok := l.addrs[addr]; ok {
		s = e.Value.(*addrState)
		l.lru.MoveToFront(e)
	} else {
		if len(l.addrs) >= maxAddrs && !l.forget(now) {
			return nil, &Refusal{RetryAfter: time.Second, Reason: fmt.Sprintf("%d addresses are being limited; retry later", maxAddrs)}
		}
		s = &addrState{key: addr, tokens: l.burst, at: now}
		l.addrs[addr] = l.lru.PushFront(s)
	}
	l.refill(s, now)
	if s.inFlight >= l.maxPerAdr {
		return nil, &Refusal{RetryAfter: time.Second, Reason: fmt.Sprintf("%d requests from this address are being authenticated; retry later", l.maxPerAdr)}
	}
	if s.tokens < 1 {
		wait := time.Duration((1 - s.tokens) / l.rate * float64(time.Second))
		return nil, &Refusal{RetryAfter: wait, Reason: "too many failed authentications from this address; retry later"}
	}
	s.tokens--
	s.inFlight++
	l.inFlight++
	var once sync.Once
	return func(authenticated bool) { once.Do(func() { l.finish(s, authenticated) }) }, nil
}

func (l *Limiter) finish(s *addrState, authenticated bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	s.inFlight--
	l.refill(s, now)
	if authenticated {
		s.tokens = min(s.tokens+1, l.burst)
	}
	if s.inFlight == 0 && s.tokens >= l.burst {
		l.noRoomUntil = time.Time{} // s can be dropped now
	}
}

// refill adds the failures earned since s was last brought up to date.
func (l *Limiter) refill(s *addrState, now time.Time) {
	if d := now.Sub(s.at); d > 0 {
		s.tokens = min(s.tokens+d.Seconds()*l.rate, l.burst)
		s.at = now
	}
}

// forget drops the least recently used addresses as good as new (a full
// budget, nothing being authenticated): up to an eighth of maxAddrs, so a
// flood of new addresses walks the list once per that many. It tells
// whether it dropped any; when it drops none, it does not walk again before
// a state can be full again (or one is, at the end of its request). A
// state being authenticated is never dropped, so its requests' places are
// always given back to it.
func (l *Limiter) forget(now time.Time) bool {
	if now.Before(l.noRoomUntil) {
		return false
	}
	dropped, first := 0, time.Time{}
	for e := l.lru.Back(); e != nil && dropped < maxAddrs/8; {
		s, prev := e.Value.(*addrState), e.Prev()
		l.refill(s, now)
		if s.tokens >= l.burst && s.inFlight == 0 {
			l.lru.Remove(e)
			delete(l.addrs, s.key)
			dropped++
		} else if at := now.Add(time.Duration((l.burst - s.tokens) / l.rate * float64(time.Second))); first.IsZero() || at.Before(first) {
			first = at // when s is full again, at the earliest
		}
		e = prev
	}
	if dropped == 0 {
		l.noRoomUntil = first
	}
	return dropped > 0
}

// Take takes one from key's budget (FailureBurst at once, then
// FailureRate a second) for work that is not a request being
// authenticated: the notification sender's sends to one destination. It
// reports whether the budget had one, and if not, how long until it will.
// Keys share the table of addresses, so pick keys no address can be (the
// sender's are "notify:" and a destination's name).
func (l *Limiter) Take(key string) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var s *addrState
	if e, found := l.addrs[key]; found {
		s = e.Value.(*addrState)
		l.lru.MoveToFront(e)
	} else {
		if len(l.addrs) >= maxAddrs && !l.forget(now) {
			return false, time.Second
		}
		s = &addrState{key: key, tokens: l.burst, at: now}
		l.addrs[key] = l.lru.PushFront(s)
	}
	l.refill(s, now)
	if s.tokens < 1 {
		return false, time.Duration((1 - s.tokens) / l.rate * float64(time.Second))
	}
	s.tokens--
	return true, 0
}
