package ui

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
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
func (nothing) Restore(context.Context, ObjectQuery, string, string, bool) (*RestoreResult, error) {
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
	base := "http://" + u.Host + strings.TrimSuffix(u.Path, "/")
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
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
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
		if c.Name == s.cookie {
			session = c
		}
	}
	if r.StatusCode != http.StatusOK || refresh(t, r) != u.Path+"?namespace=shop" || session == nil || !session.HttpOnly ||
		session.SameSite != http.SameSiteStrictMode || session.Path != u.Path {
		t.Fatalf("the token: %d to %q, cookie %+v", r.StatusCode, refresh(t, r), session)
	}
	// The printed URL pasted after the browser took the hand-over: refused,
	// and saying why (not "open the URL kubectl record ui printed").
	if r := do("GET", "/?token="+u.Query().Get("token"), nil, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("the token again: %d, want it used up", r.StatusCode)
	} else if b, _ := io.ReadAll(r.Body); !strings.Contains(string(b), "opened already") {
		t.Errorf("the token again: %q, want it to say the URL was opened already", b)
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

// session opens s's printed URL and returns its session cookie.
func session(t *testing.T, s *Server) *http.Cookie {
	t.Helper()
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == s.cookie {
			return c
		}
	}
	t.Fatalf("no session cookie from %s: %d", s.URL(), resp.StatusCode)
	return nil
}

// TestTheSessionServesThisServerOnly: cookies are not bound to ports, so
// the browser sends every loopback cookie to every loopback server. The
// session is scoped to a random path (another server is not sent it) and
// named for its server; a request without the path is refused, cookie or
// not, and another server's session is refused, under its name or ours.
func TestTheSessionServesThisServerOnly(t *testing.T) {
	a, err := Start(Options{Backend: nothing{}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	b, err := Start(Options{Backend: nothing{}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	sa, sb := session(t, a), session(t, b)
	if sa.Name == sb.Name || sa.Path == "/" || sa.Path == sb.Path || !strings.HasPrefix(a.URL(), "http://"+a.host+sa.Path+"?") {
		t.Errorf("the cookies: %s at %q and %s at %q; want a name and a random path of each server's own", sa.Name, sa.Path, sb.Name, sb.Path)
	}
	get := func(path string, cookies ...*http.Cookie) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+a.host+path, nil)
		for _, c := range cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(a.base+"api/timeline?since=1h", sa); code != http.StatusOK {
		t.Fatalf("a's own session under its path: %d", code)
	}
	for name, c := range map[string]struct {
		path    string
		cookies []*http.Cookie
	}{
		"a's session without the path":         {"/api/timeline?since=1h", []*http.Cookie{sa}},
		"a's session at the root":              {"/", []*http.Cookie{sa}},
		"a's session under b's path":           {b.base + "api/timeline?since=1h", []*http.Cookie{sa}},
		"b's session under a's path":           {a.base + "api/timeline?since=1h", []*http.Cookie{sb}},
		"b's session value under a's name":     {a.base + "api/timeline?since=1h", []*http.Cookie{{Name: sa.Name, Value: sb.Value}}},
		"b's token under a's path":             {a.base + "?token=" + b.token, nil},
		"a's session under a path it prefixes": {a.base[:len(a.base)-2] + "/api/timeline", []*http.Cookie{sa}},
	} {
		if code := get(c.path, c.cookies...); code != http.StatusNotFound && code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403 or 404", name, code)
		}
	}
}

// TestTheHandoverFileKeepsTheToken: the browser is started with a file
// URL; the file is 0600 in a new 0700 directory, sends a browser to the
// token's URL, and is removed with the server.
func TestTheHandoverFileKeepsTheToken(t *testing.T) {
	s, err := Start(Options{Backend: nothing{}, HandoverDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	open, err := s.Handover("&namespace=shop")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(open, s.token) || !strings.HasPrefix(open, "file:///") {
		t.Fatalf("the browser's URL %q carries the token", open)
	}
	u, _ := url.Parse(open)
	path := filepath.FromSlash(u.Path)
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	target := refreshTarget(string(page))
	if target != s.URL()+"&namespace=shop" {
		t.Fatalf("the hand-over sends the browser to %q, want %q", target, s.URL()+"&namespace=shop")
	}
	// Followed as a browser does: the token's answer sets the session and
	// refreshes to the page's path.
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := client.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	next := refresh(t, resp)
	resp.Body.Close()
	resp, err = client.Get("http://" + s.host + next)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "app.js") || resp.Request.URL.Query().Get("namespace") != "shop" {
		t.Errorf("following the hand-over: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the hand-over directory outlives the server: %v", err)
	}
}

// refreshTarget is where a page's meta refresh sends a browser.
func refreshTarget(page string) string {
	i := strings.Index(page, "url=")
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], `"`)
	return html.UnescapeString(page[i+4 : i+j])
}

// refresh is where the answer r sends a browser on.
func refresh(t *testing.T, r *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(b)))
	return refreshTarget(string(b))
}

// TestTheHandoverDirectory: by default (on Linux) the hand-over directory
// is made in $HOME, not hidden (a snap browser, Ubuntu's default, reads
// only non-hidden files of the home and has its own /tmp); a home that
// is not the user's own and private falls back to $TMPDIR; a directory
// given that another user owns, or that others may write without the
// sticky bit, is refused. The directory is 0700, the file 0600.
func TestTheHandoverDirectory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("$HOME is the default on Linux only")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	private := t.TempDir()
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	sticky := t.TempDir()
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, home, given string
		want              string // the directory it is made in, or the error
	}{
		{name: "home", home: private, want: private},
		{name: "home writable by others", home: open, want: tmp},
		{name: "no home", home: "", want: tmp},
		{name: "given", home: private, given: sticky, want: sticky},
		{name: "given writable by others", home: private, given: open, want: "writable by others"},
		{name: "given, a file", home: private, given: filepath.Join(private, "f"), want: "not a directory"},
	}
	if err := os.WriteFile(filepath.Join(private, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		foreign := t.TempDir()
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases,
			struct{ name, home, given, want string }{name: "home of another user (sudo)", home: foreign, want: tmp},
			struct{ name, home, given, want string }{name: "given, another user's", home: private, given: foreign, want: "belongs to uid 65534"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HOME", c.home)
			s, err := Start(Options{Backend: nothing{}, HandoverDir: c.given})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			u, err := s.Handover("")
			if !filepath.IsAbs(c.want) {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("hand-over %q, %v; want an error %q", u, err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, _ := url.Parse(u)
			file := filepath.FromSlash(p.Path)
			dir := filepath.Dir(file)
			if filepath.Dir(dir) != c.want || strings.HasPrefix(filepath.Base(dir), ".") {
				t.Errorf("hand-over file %s, want it in a non-hidden directory of %s", file, c.want)
			}
			for p, want := range map[string]os.FileMode{file: 0o600, dir: 0o700 | os.ModeDir} {
				if fi, err := os.Lstat(p); err != nil || fi.Mode() != want {
					t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
				}
			}
		})
	}
}
