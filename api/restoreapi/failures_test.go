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
