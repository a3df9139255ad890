package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
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
	Restore(ctx context.Context, obj ObjectQuery, version string, dryRun bool) (*RestoreResult, error)
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
}

// Server is the running page.
type Server struct {
	opts    Options
	ln      net.Listener
	srv     *http.Server
	host    string // host:port the page must be reached as
	token   string // the one-time token of the printed URL
	session string // the cookie's value once the token was used

	mu   sync.Mutex
	used bool
}

const cookieName = "record-ui-session"

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
	s := &Server{opts: opts, ln: ln, host: ln.Addr().String(), token: secret(), session: secret()}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("ui: serve", "err", err)
		}
	}()
	return s, nil
}

// URL is the address to open, with its one-time token.
func (s *Server) URL() string { return "http://" + s.host + "/?token=" + s.token }

// Close stops the server.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		// DNS rebinding: a name that resolves to 127.0.0.1 still names
		// another origin; answer only requests for this server's host.
		if r.Host != s.host {
			http.Error(w, "wrong host", http.StatusMisdirectedRequest)
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
		mux.ServeHTTP(w, r)
	})
}

// authorized takes the one-time token once (setting the session cookie
// and sending the browser on without the token in its URL), then the
// cookie.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) (ok, answered bool) {
	if c, err := r.Cookie(cookieName); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1 {
		return true, false
	}
	tok := r.URL.Query().Get("token")
	if tok == "" || r.URL.Path != "/" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used {
		return false, false
	}
	s.used = true
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del("token")
	target := "/"
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return false, true
}

// clean trims a query value.
func clean(v string) string { return strings.TrimSpace(v) }
