package restoreapi

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// countingAuth is tokenUsers counting the requests it is asked about (each
// a TokenReview in production).
type countingAuth struct {
	tokenUsers
	calls atomic.Int64
}

func (c *countingAuth) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	c.calls.Add(1)
	return c.tokenUsers.AuthenticateRequest(r)
}

// TestFailedAuthenticationsAreLimitedPerAddress: an address that keeps
// sending bad tokens is answered 429 before it takes an in-flight place or
// costs a TokenReview, so a flood of bad tokens leaves the API to others.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	auth := &countingAuth{}
	s := newServer(t, recordOptions{Reader: &fakeReader{versions: testVersions()}, Authorizer: denySecrets{}}, Options{Authenticator: auth, AuthFailureRate: 0.001, AuthFailureBurst: 5})
	send := func(addr, token string) int {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/clusters/default/changes", nil)
		req.RemoteAddr = addr + ":4000"
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	codes := map[int]int{}
	for range 50 {
		codes[send("10.0.0.66", "forged")]++
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 45 {
		t.Errorf("answers to 50 bad tokens: %v; want 5 refused, then 45 throttled", codes)
	}
	if n := auth.calls.Load(); n != 5 {
		t.Errorf("%d authentications asked; want the 5 before the address was throttled", n)
	}
	if code := send("10.0.0.7", "user:alice"); code != http.StatusOK {
		t.Errorf("an operator from another address: %d", code)
	}
}

// blockingAuth refuses every token, each answer held until release is
// closed; entered receives one value per request it is asked about (a
// TokenReview each in production).
type blockingAuth struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAuth) AuthenticateRequest(*http.Request) (*authenticator.Response, bool, error) {
	b.entered <- struct{}{}
	<-b.release
	return nil, false, nil
}

// TestConcurrentBadTokensReachAtMostTheBurst: the failure budget is taken
// before authentication, so 500 bad tokens sent at once from one address
// cost at most the burst of TokenReviews, however long each takes.
func TestConcurrentBadTokensReachAtMostTheBurst(t *testing.T) {
	t.Parallel()
	const n, burst = 500, 5
	auth := &blockingAuth{entered: make(chan struct{}, n), release: make(chan struct{})}
	s := newServer(t, recordOptions{Reader: &fakeReader{versions: testVersions()}, Authorizer: denySecrets{}},
		Options{Authenticator: auth, AuthFailureRate: 0.001, AuthFailureBurst: burst, MaxInFlight: n})
	answered := make(chan int, n)
	for range n {
		go func() {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/clusters/default/changes", nil)
			req.RemoteAddr = "10.0.0.66:4000"
			req.Header.Set("Authorization", "Bearer forged")
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			answered <- rec.Code
		}()
	}
	// Every request is either answered (refused before authentication) or
	// held in the authenticator.
	reached, refused, codes := 0, 0, map[int]int{}
	for reached+refused < n {
		select {
		case <-auth.entered:
			reached++
		case c := <-answered:
			refused++
			codes[c]++
		}
	}
	close(auth.release)
	for range reached {
		codes[<-answered]++
	}
	if reached > burst {
		t.Errorf("%d of %d concurrent bad tokens reached the authenticator; want at most the burst, %d", reached, n, burst)
	}
	if codes[http.StatusTooManyRequests] != n-reached || codes[http.StatusUnauthorized] != reached {
		t.Errorf("answers: %v; want %d refused 401 and the rest 429", codes, reached)
	}
}
