package authlimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

func from(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = addr + ":4000"
	r.Header.Set("X-Forwarded-For", "10.9.9.9") // never read
	return r
}

// clock is a clock the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func refusal(t *testing.T, err error, reason string) {
	t.Helper()
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.Contains(ref.Reason, reason) || ref.RetryAfter <= 0 {
		t.Fatalf("err = %v; want a Refusal naming %q with a Retry-After", err, reason)
	}
}

// TestFailuresAreTakenBeforeAndGivenBack: each admission takes a failure
// of its address's budget before authentication; an authenticated request
// gives it back, a failed one does not, and the budget refills at its rate.
func TestFailuresAreTakenBeforeAndGivenBack(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1e9, 0)}
	l := New(Options{FailureRate: 1, FailureBurst: 3, MaxInFlightPerAddr: 100, Now: c.now})
	var pending []func(bool)
	for range 3 {
		done, err := l.Admit(from("10.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, done)
	}
	// Three undecided: the budget is spent although none has failed yet.
	_, err := l.Admit(from("10.0.0.1"))
	refusal(t, err, "failed authentications")
	if _, err := l.Admit(from("10.0.0.2")); err != nil {
		t.Fatalf("another address: %v", err)
	}
	pending[0](true) // authenticated: its failure comes back
	pending[0](false)
	pending[1](false)
	done, err := l.Admit(from("10.0.0.1"))
	if err != nil {
		t.Fatalf("after a success gave its failure back: %v", err)
	}
	done(false)
	_, err = l.Admit(from("10.0.0.1"))
	refusal(t, err, "failed authentications")
	c.t = c.t.Add(time.Second)
	if _, err := l.Admit(from("10.0.0.1")); err != nil {
		t.Fatalf("a second later (rate 1/s): %v", err)
	}
}

// TestRequestsBeingAuthenticatedAreCapped: per address and in all; a
// decided request frees its places.
func TestRequestsBeingAuthenticatedAreCapped(t *testing.T) {
	t.Parallel()
	l := New(Options{FailureBurst: 100, MaxInFlight: 3, MaxInFlightPerAddr: 2})
	a1, err := l.Admit(from("10.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(from("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(from("10.0.0.1"))
	refusal(t, err, "from this address")
	if _, err := l.Admit(from("10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(from("10.0.0.3"))
	refusal(t, err, "3 requests are being authenticated")
	a1(true)
	if _, err := l.Admit(from("10.0.0.3")); err != nil {
		t.Fatalf("once one is decided: %v", err)
	}
}

// ipv4 is the i-th of a run of distinct IPv4 addresses.
func ipv4(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }

// TestAddressesRememberedAreBounded: a flood of addresses does not grow
// the limiter without bound; the addresses that have recovered make room.
func TestAddressesRememberedAreBounded(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1e9, 0)}
	l := New(Options{Now: c.now})
	for i := range 3 * maxAddrs {
		if i%maxAddrs == 0 {
			c.t = c.t.Add(time.Hour) // all recovered
		}
		done, err := l.Admit(from(ipv4(i)))
		if err != nil {
			t.Fatalf("address %d: %v", i, err)
		}
		done(false)
	}
	if n := len(l.addrs); n > maxAddrs {
		t.Errorf("%d addresses remembered; want at most %d", n, maxAddrs)
	}
}

// TestAFullTableForgetsNoBudget: addresses that fill the table with
// failures cannot reset another address's spent budget, nor orphan its
// requests being authenticated; a new address is refused instead until an
// old one has recovered, and then the least recently used one makes room.
func TestAFullTableForgetsNoBudget(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1e9, 0)}
	l := New(Options{FailureRate: 1, FailureBurst: 2, MaxInFlight: 1 << 20, MaxInFlightPerAddr: 1, Now: c.now})
	victim := "192.0.2.1"
	for range 2 {
		done, err := l.Admit(from(victim))
		if err != nil {
			t.Fatal(err)
		}
		done(false)
	}
	refusal(t, try(l, victim), "failed authentications")
	holder := "192.0.2.2"
	held, err := l.Admit(from(holder)) // being authenticated throughout
	if err != nil {
		t.Fatal(err)
	}
	// The attacker fills the table with failures, and keeps going.
	refused := 0
	for i := range maxAddrs + 10 {
		done, err := l.Admit(from(ipv4(i)))
		if err != nil {
			refusal(t, err, "addresses")
			refused++
			continue
		}
		done(false)
	}
	if refused == 0 {
		t.Errorf("no new address refused although the table was full of spent budgets")
	}
	refusal(t, try(l, victim), "failed authentications")
	refusal(t, try(l, holder), "from this address")
	if n := len(l.addrs); n > maxAddrs {
		t.Errorf("%d addresses remembered; want at most %d", n, maxAddrs)
	}
	// Time passes: the attacker's addresses recover, and make room.
	c.t = c.t.Add(time.Second) // rate 1: just when the first has one failure back
	if err := try(l, "198.51.100.1"); err != nil {
		t.Fatalf("a new address once old ones recovered: %v", err)
	}
	refusal(t, try(l, holder), "from this address")
	held(true)
	held(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight != 1 { // the new address's, never decided
		t.Errorf("%d requests counted in flight; want 1", l.inFlight)
	}
	if e := l.addrs[holder]; e == nil || e.Value.(*addrState).inFlight != 0 {
		t.Errorf("the holder's state after its request was decided: %+v", e)
	}
	if l.lru.Len() != len(l.addrs) {
		t.Errorf("%d states listed, %d keyed", l.lru.Len(), len(l.addrs))
	}
}

// TestIPv6IsKeyedByItsSlash64: the addresses of one /64 share one budget,
// so one network cannot fill the table; another /64, and an IPv4-mapped
// address, have their own.
func TestIPv6IsKeyedByItsSlash64(t *testing.T) {
	t.Parallel()
	l := New(Options{FailureRate: 0.001, FailureBurst: 3, MaxInFlightPerAddr: 100})
	for i := range 3 {
		done, err := l.Admit(from(fmt.Sprintf("[2001:db8:1:2::%x]", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		done(false)
	}
	refusal(t, try(l, "[2001:db8:1:2:ffff:ffff:ffff:ffff]"), "failed authentications")
	if err := try(l, "[2001:db8:1:3::1]"); err != nil {
		t.Errorf("another /64: %v", err)
	}
	if err := try(l, "[::ffff:192.0.2.7]"); err != nil {
		t.Errorf("an IPv4-mapped address: %v", err)
	}
	if n := len(l.addrs); n != 3 {
		t.Errorf("%d keys; want 3", n)
	}
}

// try admits a request from addr and returns only the error.
func try(l *Limiter, addr string) error {
	_, err := l.Admit(from(addr))
	return err
}

// TestHandlerDecidesByAuthenticatorOrStatus: a request the authenticator
// refuses, or that next answers 401 without asking it, spends a failure;
// one it accepts does not; a refused request never reaches next.
func TestHandlerDecidesByAuthenticatorOrStatus(t *testing.T) {
	t.Parallel()
	l := New(Options{FailureRate: 0.001, FailureBurst: 2})
	authn := l.Authenticator(authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		return nil, r.Header.Get("Authorization") == "Bearer good", nil
	}))
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized) // never asked the authenticator
			return
		}
		if _, ok, _ := authn.AuthenticateRequest(r); !ok {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	h := l.Handler(next, func(w http.ResponseWriter, _ *http.Request, ref *Refusal) {
		w.Header().Set("Retry-After", ref.RetryAfterSeconds())
		w.WriteHeader(http.StatusTooManyRequests)
	})
	send := func(token string) int {
		r := from("10.0.0.1")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for range 5 {
		if code := send("good"); code != http.StatusOK {
			t.Fatalf("a good token: %d", code)
		}
	}
	if a, b := send("bad"), send(""); a != http.StatusUnauthorized || b != http.StatusUnauthorized {
		t.Fatalf("a bad token, no token: %d %d; want 401 401", a, b)
	}
	if code := send("good"); code != http.StatusTooManyRequests {
		t.Fatalf("after the burst of failures: %d, want 429", code)
	}
}

// TestTake: a key's budget is FailureBurst at once, then FailureRate a
// second, apart from every other key's.
func TestTake(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Options{FailureRate: 2, FailureBurst: 3, Now: func() time.Time { return now }})
	for i := range 3 {
		if ok, _ := l.Take("notify:a"); !ok {
			t.Fatalf("take %d of a burst of 3 refused", i+1)
		}
	}
	ok, wait := l.Take("notify:a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th take: %v, wait %s; want refused, 500ms", ok, wait)
	}
	if ok, _ := l.Take("notify:b"); !ok {
		t.Fatal("another key's take refused")
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Take("notify:a"); !ok {
		t.Fatal("take after the refill refused")
	}
}
