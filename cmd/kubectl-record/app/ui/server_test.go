package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// nothing answers every question with an empty record.
type nothing struct{}

func (nothing) Changes(context.Context, Query) (*Timeline, error) {
	return &Timeline{Events: []Event{}}, nil
}
func (nothing) Versions(context.Context, ObjectQuery) ([]Version, error) {
	return []Version{}, nil
}
func (nothing) Diff(context.Context, ObjectQuery, string, string) (*Diff, error) { return &Diff{}, nil }
func (nothing) Restore(context.Context, ObjectQuery, string, bool) (*RestoreResult, error) {
	return &RestoreResult{Phase: "Succeeded"}, nil
}
func (nothing) Plan(context.Context, PlanQuery) (*Plan, error) { return &Plan{}, nil }
func (nothing) ExecutePlan(context.Context, string, string, string, bool) (*RestoreResult, error) {
	return &RestoreResult{}, nil
}

// TestOnlyThePrintedURLOpensThePage: the one-time token is taken once and
// exchanged for a session cookie; other hosts (DNS rebinding), other local
// users (no token) and cross-site writes are refused; every answer carries
// the strict Content-Security-Policy.
func TestOnlyThePrintedURLOpensThePage(t *testing.T) {
	if _, err := Start(Options{Backend: nothing{}, Addr: "0.0.0.0:0"}); err == nil {
		t.Error("listening on every interface was allowed")
	}
	s, err := Start(Options{Backend: nothing{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	u, _ := url.Parse(s.URL())
	base := "http://" + u.Host
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, hdr map[string]string, cookie *http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"resource":"configmaps","name":"a","version":"v"}`))
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := do("GET", "/", nil, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %d", r.StatusCode)
	}
	if r := do("GET", "/?token=wrong", nil, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("a wrong token: %d", r.StatusCode)
	}
	if r := do("GET", "/?token="+u.Query().Get("token"), map[string]string{"Host": "attacker.example:" + u.Port()}, nil); r.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("another host name (DNS rebinding): %d", r.StatusCode)
	}
	r := do("GET", "/?token="+u.Query().Get("token")+"&namespace=shop", nil, nil)
	var session *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == cookieName {
			session = c
		}
	}
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/?namespace=shop" || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the token: %d to %q, cookie %+v", r.StatusCode, r.Header.Get("Location"), session)
	}
	if r := do("GET", "/?token="+u.Query().Get("token"), nil, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("the token again: %d, want it used up", r.StatusCode)
	}
	r = do("GET", "/", nil, session)
	if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") ||
		strings.Contains(r.Header.Get("Content-Security-Policy"), "unsafe") || r.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("the page: %d, headers %v", r.StatusCode, r.Header)
	}
	if r := do("GET", "/api/timeline?since=1h", nil, session); r.StatusCode != http.StatusOK {
		t.Errorf("the timeline: %d", r.StatusCode)
	}
	origin := "http://" + u.Host
	for name, hdr := range map[string]map[string]string{
		"no origin":      {"X-Record-UI": "1", "Content-Type": "application/json"},
		"another origin": {"Origin": "http://evil.example", "X-Record-UI": "1", "Content-Type": "application/json"},
		"a plain form":   {"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"},
	} {
		if r := do("POST", "/api/restore", hdr, session); r.StatusCode != http.StatusForbidden {
			t.Errorf("a restore with %s: %d, want 403", name, r.StatusCode)
		}
	}
	if r := do("POST", "/api/restore", map[string]string{"Origin": origin, "X-Record-UI": "1", "Content-Type": "application/json"}, session); r.StatusCode != http.StatusOK {
		t.Errorf("the page's own restore: %d", r.StatusCode)
	}
}
