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

// TestAddressesRememberedAreBounded: a flood of addresses does not grow
// the limiter without bound.
func TestAddressesRememberedAreBounded(t *testing.T) {
	t.Parallel()
	l := New(Options{})
	for i := range 3 * maxAddrs {
		r := from("10.0.0.1")
		r.RemoteAddr = fmt.Sprintf("[fd00::%x]:1", i)
		done, err := l.Admit(r)
		if err != nil {
			t.Fatal(err)
		}
		done(false)
	}
	if n := len(l.addrs); n > maxAddrs {
		t.Errorf("%d addresses remembered; want at most %d", n, maxAddrs)
	}
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
