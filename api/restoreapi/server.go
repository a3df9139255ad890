package restoreapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/options-record/options-record/api/authlimit"
	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/restoreapi/paths"
)

// apiPrefix is the path prefix of every route.
const apiPrefix = paths.APIPrefix

// Options configure the API.
type Options struct {
	// History answers the reads and Restore the manifests, restores and
	// plans, each authorized per object for the caller.
	History *history.Service
	Restore *restore.Service
	// Authenticator: DelegatingAuth, or StaticToken for the standalone
	// mode.
	Authenticator authenticator.Request
	// MaxBodyBytes caps request bodies (default 1 MiB).
	MaxBodyBytes int64
	// RequestTimeout bounds each request (default 1 minute); executing a
	// plan has its own, longer deadline.
	RequestTimeout time.Duration
	// MaxInFlight caps the requests served at once (default 16) and
	// MaxInFlightPerUser those of one caller (default 4); past them the API
	// answers 429 with Retry-After.
	MaxInFlight        int
	MaxInFlightPerUser int
	// Callers, when set, is the per-caller cap shared with the other front
	// door (MaxInFlightPerUser is then unused).
	Callers *history.CallerLimiter
	// AuthLimit limits the requests not yet authenticated (package
	// authlimit): failed authentications per client address, taken from
	// the address's budget before the TokenReview and given back if it
	// authenticates, and the requests being authenticated at once. Share
	// one with the record door so that both spend one budget. Nil: one
	// of its own, with AuthFailureRate and AuthFailureBurst (defaults 1 a
	// second, a burst of 10). Past it the address gets 429 before it takes
	// an in-flight place or costs a TokenReview (a caller behind the same
	// address waits too).
	// Proofs, when set, answers the inclusion proof of a version (package
	// store/tamper's ProveVersion over the record's reader), after the
	// caller was authorized to read it; an error wrapping ErrNotLogged
	// says the version is not in the log (yet). Nil: no proofs (404).
	Proofs           func(ctx context.Context, cluster, uid string, key []byte) ([]byte, error)
	AuthLimit        *authlimit.Limiter
	AuthFailureRate  float64
	AuthFailureBurst int
	Logger           *slog.Logger
}

// Server is the restore API's HTTP front door.
type Server struct {
	hist    *history.Service
	svc     *restore.Service
	log     *slog.Logger
	authn   authenticator.Request
	maxBody int64
	router  chi.Router
	openapi []byte
	timeout time.Duration
	limits  *inFlight
	authLim *authlimit.Limiter
	proofs  func(ctx context.Context, cluster, uid string, key []byte) ([]byte, error)
}

// New builds the API. Serve it over TLS: bearer tokens travel in it.
func New(o Options) (*Server, error) {
	if o.History == nil || o.Restore == nil || o.Authenticator == nil {
		return nil, errors.New("restoreapi: History, Restore and Authenticator are required")
	}
	s := &Server{hist: o.History, svc: o.Restore, authn: o.Authenticator, maxBody: o.MaxBodyBytes, log: o.Logger, proofs: o.Proofs}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.timeout = o.RequestTimeout; s.timeout <= 0 {
		s.timeout = time.Minute
	}
	callers := o.Callers
	if callers == nil {
		callers = history.NewCallerLimiter(o.MaxInFlightPerUser)
	}
	s.limits = newInFlight(o.MaxInFlight, callers)
	if s.authLim = o.AuthLimit; s.authLim == nil {
		s.authLim = authlimit.New(authlimit.Options{FailureRate: o.AuthFailureRate, FailureBurst: o.AuthFailureBurst})
	}
	s.authn = s.authLim.Authenticator(s.authn)
	doc, err := json.MarshalIndent(OpenAPI(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("restoreapi: OpenAPI document: %w", err)
	}
	s.openapi = append(doc, '\n')
	s.router = s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// handlerFunc is a handler that returns its error; handle answers it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) routes() chi.Router {
	handlers := map[string]handlerFunc{
		"getOpenAPI":         s.getOpenAPI,
		"searchChanges":      s.searchChanges,
		"historyByName":      s.historyByName,
		"historyByUID":       s.historyByUID,
		"getVersion":         s.getVersion,
		"getVersionByName":   s.getVersionByName,
		"diffVersion":        s.diffVersion,
		"getManifest":        s.getManifest,
		"proveVersion":       s.proveVersion,
		"proveVersionByName": s.proveVersionByName,
		"restoreVersion":     s.restoreVersion,
		"listDeletions":      s.listDeletions,
		"failedMutations":    s.failedMutations,
		"getFailedMutation":  s.getFailedMutation,
		"userActivity":       s.userActivity,
		"createPlan":         s.createPlan,
		"getPlan":            s.getPlan,
		"executePlan":        s.executePlan,
	}
	r := chi.NewRouter()
	// Every answer says what it is (JSON, YAML), and a browser must not
	// guess otherwise from recorded content.
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Content-Type-Options", "nosniff")
			next.ServeHTTP(w, r)
		})
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, fmt.Errorf("%w: no route %s %s (see %s/openapi.json)", errs.ErrNotFound, r.Method, r.URL.Path, apiPrefix))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, fmt.Errorf("%w: method %s is not allowed on %s", errs.ErrInvalid, r.Method, r.URL.Path))
	})
	r.Route(apiPrefix, func(r chi.Router) {
		for _, op := range operations {
			h, ok := handlers[op.ID]
			if !ok {
				continue // the routes test reports the operation without a route
			}
			var hh http.Handler = s.handle(op, h)
			if !op.Public {
				// The global cap comes before authentication (a TokenReview
				// each), the caller's after. Before both, the limit of
				// unauthenticated requests (authLim) takes a failure of
				// the address's budget, given back once the token is
				// accepted.
				hh = s.authLim.Handler(s.limits.global(s.authenticate(s.limits.perCaller(hh, s.log)), s.log), s.tooManyFailures)
			}
			r.Method(op.Method, op.Path, hh)
		}
	})
	return r
}

// handle checks the query parameters of an operation and the cluster in
// the path, runs h and answers its error.
func (s *Server) handle(op operation, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkParams(op, r)
		if err == nil {
			if strings.Contains(op.Path, "{cluster}") {
				err = s.hist.CheckCluster(chi.URLParam(r, "cluster"))
			}
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
			defer cancel()
			r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
			err = h(w, r.WithContext(ctx))
		}
		if err != nil {
			writeError(w, r, s.log, err)
		}
	})
}

// checkParams refuses query parameters the operation does not take: a
// misspelt filter must not silently widen a search.
func checkParams(op operation, r *http.Request) error {
	q := r.URL.Query()
	for name, vals := range q {
		p, ok := op.param(name)
		if !ok {
			return fmt.Errorf("%w: unknown query parameter %q (this operation takes: %s)", errs.ErrInvalid, name, op.paramNames())
		}
		if len(vals) > 1 {
			return fmt.Errorf("%w: query parameter %q given %d times", errs.ErrInvalid, name, len(vals))
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, vals[0]) {
			return fmt.Errorf("%w: %s=%q: must be one of %s", errs.ErrInvalid, name, vals[0], strings.Join(p.Enum, ", "))
		}
	}
	for _, p := range op.Params {
		if p.Required && !q.Has(p.Name) {
			return fmt.Errorf("%w: query parameter %q is required", errs.ErrInvalid, p.Name)
		}
	}
	return nil
}

func (s *Server) getOpenAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.openapi)
	return nil
}

// tooManyFailures answers a request refused before authentication (an
// address past its failed authentications, or too many requests being
// authenticated).
func (s *Server) tooManyFailures(w http.ResponseWriter, r *http.Request, ref *authlimit.Refusal) {
	w.Header().Set("Retry-After", ref.RetryAfterSeconds())
	writeError(w, r, s.log, fmt.Errorf("%w: %s", errs.ErrTooManyRequests, ref.Reason))
}
