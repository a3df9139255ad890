package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Backend answers the page's questions as the caller (package app
// implements it with the record API's typed client).
type Backend interface {
	Changes(ctx context.Context, q Query) (*Timeline, error)
	Versions(ctx context.Context, obj ObjectQuery) ([]Version, error)
	Diff(ctx context.Context, obj ObjectQuery, from, to string) (*Diff, error)
	// Restore restores a version: a dry run, or for real with the digest
	// of the recorded state that was reviewed (its dry run's).
	Restore(ctx context.Context, obj ObjectQuery, version, digest string, dryRun bool) (*RestoreResult, error)
	Plan(ctx context.Context, p PlanQuery) (*Plan, error)
	// ExecutePlan runs a plan: a dry run, or for real with the digest of
	// the plan that was reviewed (its dry run's).
	ExecutePlan(ctx context.Context, namespace, name, digest string, dryRun bool) (*RestoreResult, error)
}

// Options configure the server.
type Options struct {
	Backend Backend
	// Addr is where to listen; it must be a loopback address (default
	// 127.0.0.1:0, a random port).
	Addr   string
	Logger *slog.Logger
	// HandoverDir is where the hand-over file's private directory is
	// made (default: DefaultHandoverDir). It must be a directory of the
	// user's or root's that others may not write, unless sticky (/tmp).
	HandoverDir string
}

// Server is the running page.
type Server struct {
	opts    Options
	ln      net.Listener
	srv     *http.Server
	host    string // host:port the page must be reached as
	base    string // the random path every request must be under ("/<hex>/")
	cookie  string // the session cookie's name, this server's own
	token   string // the one-time token of the printed URL
	session string // the cookie's value once the token was used

	mu       sync.Mutex
	used     bool
	handover string // the hand-over file's directory, removed by Close
}

// Start listens and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.Backend == nil {
		return nil, errors.New("ui: no backend")
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ui: address %q: %w", opts.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("ui: address %q: the page listens on loopback only", opts.Addr)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ui: listen: %w", err)
	}
	// Cookies are not bound to ports: every server on loopback is sent
	// every loopback cookie. The session is therefore scoped to a random
	// path no other server knows (the browser sends it nowhere else), and
	// its name is this server's own (no other server's cookie shadows it).
	s := &Server{opts: opts, ln: ln, host: ln.Addr().String(), base: "/" + secret()[:32] + "/",
		cookie: "record-ui-" + secret()[:16], token: secret(), session: secret()}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("ui: serve", "err", err)
		}
	}()
	return s, nil
}

// URL is the address to open, with its one-time token. Print it, never
// pass it on a command line: /proc/PID/cmdline is world-readable.
func (s *Server) URL() string { return "http://" + s.host + s.base + "?token=" + s.token }

// handoverPage sends the browser on to the URL (the way notebook servers
// hand a browser their token): a meta refresh, and a link for a browser
// that does not follow it.
var handoverPage = template.Must(template.New("open").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={{.}}"><title>kubectl record ui</title></head>
<body><p><a href="{{.}}">Open the timeline</a></p></body></html>
`))

// Close stops the server and removes the hand-over file.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	dir := s.handover
	s.mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	return s.srv.Shutdown(ctx)
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// headers every answer carries: the page runs only its own script and
// style, is never framed, and sends no referrer.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (s *Server) handler() http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux := http.NewServeMux()
	mux.Handle("GET /app.js", files)
	mux.Handle("GET /app.css", files)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.api(mux)
	page := http.StripPrefix(strings.TrimSuffix(s.base, "/"), mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		// DNS rebinding: a name that resolves to 127.0.0.1 still names
		// another origin; answer only requests for this server's host.
		if r.Host != s.host {
			http.Error(w, "wrong host", http.StatusMisdirectedRequest)
			return
		}
		// Outside the random path nothing is served, cookie or not.
		if !strings.HasPrefix(r.URL.Path, s.base) || r.URL.RawPath != "" && !strings.HasPrefix(r.URL.RawPath, s.base) {
			http.Error(w, "open the URL kubectl record ui printed", http.StatusNotFound)
			return
		}
		switch ok, answered := s.authorized(w, r); {
		case answered:
			return
		case !ok:
			http.Error(w, "open the URL kubectl record ui printed", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// A write comes from the page: its own origin, and a header
			// no cross-site form or simple request can carry.
			if r.Header.Get("Origin") != "http://"+s.host || r.Header.Get("X-Record-UI") != "1" {
				http.Error(w, "cross-site request refused", http.StatusForbidden)
				return
			}
		}
		page.ServeHTTP(w, r)
	})
}

// authorized takes the one-time token once (setting the session cookie
// and sending the browser on, without the token in its URL, to the
// page's path), then the cookie.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) (ok, answered bool) {
	if c, err := r.Cookie(s.cookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1 {
		return true, false
	}
	tok := r.URL.Query().Get("token")
	if tok == "" || r.URL.Path != s.base || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used {
		// The printed URL pasted after the browser took the hand-over
		// (or the other way round): its token works once.
		http.Error(w, "this URL was opened already (its token works once): use the browser tab it opened, or restart kubectl record ui", http.StatusForbidden)
		return false, true
	}
	s.used = true
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.session, Path: s.base, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del("token")
	target := s.base
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	// Sent on by the page itself, not by a redirect: the browser came
	// from the hand-over file, another site, and a redirect would keep
	// the navigation cross-site, without the SameSite=Strict cookie.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = handoverPage.Execute(w, template.URL(target))
	return false, true
}

// clean trims a query value.
func clean(v string) string { return strings.TrimSpace(v) }
