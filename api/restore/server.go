package restore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/store"
)

// Reader is what the API reads from the record.
type Reader interface {
	Changes(ctx context.Context, q store.ChangeQuery) ([]store.VersionRecord, error)
	Version(ctx context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error)
	StateBefore(ctx context.Context, v *store.VersionRecord) (*store.VersionRecord, error)
	Newest(ctx context.Context, cluster, group, resource, namespace, name string) (*store.VersionRecord, error)
	ObjectsAsOf(ctx context.Context, q store.AsOfQuery) ([]store.VersionRecord, error)
	ResourcesIn(ctx context.Context, cluster, namespace string, at time.Time, limit int) ([]store.GroupResource, error)
	Deletions(ctx context.Context, q store.DeletionQuery) ([]store.Deletion, error)
	FailedMutations(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
	Activity(ctx context.Context, q store.EventQuery) ([]store.EventRecord, error)
}

// RestoreLog records restores (the restores table).
type RestoreLog interface {
	InsertRestore(ctx context.Context, r *store.RestoreRecord) (*store.RestoreRecord, error)
	Restore(ctx context.Context, cluster, id string) (*store.RestoreRecord, error)
	ClaimRestore(ctx context.Context, cluster, id string) (*store.RestoreRecord, error)
	FinishRestore(ctx context.Context, cluster, id, state string, outcome []byte) error
}

// Options configure the API.
type Options struct {
	Reader Reader
	// Log records restores; required with Kube.
	Log RestoreLog
	// Authenticator and Authorizer: DelegatingAuth, or StaticToken for the
	// standalone mode.
	Authenticator authenticator.Request
	Authorizer    authorizer.Authorizer
	// Kube is the sink's client configuration for the cluster named
	// Cluster. Restores impersonate the caller through it. Nil: standalone,
	// read-only, and every cluster of the record can be read; otherwise
	// only Cluster is served (its RBAC authorizes the reads).
	Kube    *rest.Config
	Cluster string
	// MaxBodyBytes caps request bodies (default 1 MiB).
	MaxBodyBytes int64
	// MaxPlanSteps caps the objects of a plan (default 2000).
	MaxPlanSteps int
	// RequestTimeout bounds each request (default 1 minute); executing a
	// plan has its own, longer deadline.
	RequestTimeout time.Duration
	// MaxInFlight caps the requests served at once (default 16) and
	// MaxInFlightPerUser those of one caller (default 4); past them the API
	// answers 429 with Retry-After.
	MaxInFlight        int
	MaxInFlightPerUser int
	// CursorKey seals page cursors (32 bytes). Replicas behind one Service
	// need the same key to accept each other's cursors; nil: a random key
	// for this process.
	CursorKey []byte
	Logger    *slog.Logger
}

// Server is the restore API.
type Server struct {
	reader   Reader
	log      *slog.Logger
	restores RestoreLog
	authn    authenticator.Request
	authz    authorizer.Authorizer
	cluster  string
	kube     *kubeAccess
	maxBody  int64
	maxSteps int
	router   chi.Router
	openapi  []byte
	timeout  time.Duration
	limits   *inFlight
	cursors  cipher.AEAD // seals page cursors
}

// New builds the API. Serve it over TLS: bearer tokens travel in it.
func New(o Options) (*Server, error) {
	if o.Reader == nil || o.Authenticator == nil || o.Authorizer == nil {
		return nil, errors.New("restore: Reader, Authenticator and Authorizer are required")
	}
	if o.Kube != nil && (o.Log == nil || o.Cluster == "") {
		return nil, errors.New("restore: restores need Log and Cluster")
	}
	s := &Server{
		reader: o.Reader, restores: o.Log, authn: o.Authenticator, authz: o.Authorizer,
		cluster: o.Cluster, maxBody: o.MaxBodyBytes, maxSteps: o.MaxPlanSteps, log: o.Logger,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = 1 << 20
	}
	if s.maxSteps <= 0 {
		s.maxSteps = 2000
	}
	if s.timeout = o.RequestTimeout; s.timeout <= 0 {
		s.timeout = time.Minute
	}
	s.limits = newInFlight(o.MaxInFlight, o.MaxInFlightPerUser)
	var err error
	if s.cursors, err = newCursorAEAD(o.CursorKey); err != nil {
		return nil, err
	}
	if o.Kube != nil {
		k, err := newKubeAccess(o.Kube)
		if err != nil {
			return nil, err
		}
		s.kube = k
	}
	doc, err := json.MarshalIndent(OpenAPI(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("restore: OpenAPI document: %w", err)
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
		"getOpenAPI":      s.getOpenAPI,
		"searchChanges":   s.searchChanges,
		"historyByName":   s.historyByName,
		"historyByUID":    s.historyByUID,
		"getVersion":      s.getVersion,
		"diffVersion":     s.diffVersion,
		"getManifest":     s.getManifest,
		"restoreVersion":  s.restoreVersion,
		"listDeletions":   s.listDeletions,
		"failedMutations": s.failedMutations,
		"userActivity":    s.userActivity,
		"createPlan":      s.createPlan,
		"getPlan":         s.getPlan,
		"executePlan":     s.executePlan,
	}
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, fmt.Errorf("%w: no route %s %s (see %s/openapi.json)", ErrNotFound, r.Method, r.URL.Path, apiPrefix))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, fmt.Errorf("%w: method %s is not allowed on %s", ErrInvalid, r.Method, r.URL.Path))
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
				// each), the caller's after.
				hh = s.limits.global(s.authenticate(s.limits.perCaller(hh, s.log)), s.log)
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
				err = s.checkCluster(chi.URLParam(r, "cluster"))
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
			return fmt.Errorf("%w: unknown query parameter %q (this operation takes: %s)", ErrInvalid, name, op.paramNames())
		}
		if len(vals) > 1 {
			return fmt.Errorf("%w: query parameter %q given %d times", ErrInvalid, name, len(vals))
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, vals[0]) {
			return fmt.Errorf("%w: %s=%q: must be one of %s", ErrInvalid, name, vals[0], strings.Join(p.Enum, ", "))
		}
	}
	for _, p := range op.Params {
		if p.Required && !q.Has(p.Name) {
			return fmt.Errorf("%w: query parameter %q is required", ErrInvalid, p.Name)
		}
	}
	return nil
}

func (s *Server) checkCluster(c string) error {
	if c == "" {
		return fmt.Errorf("%w: empty cluster name", ErrInvalid)
	}
	if s.kube != nil && c != s.cluster {
		return fmt.Errorf("%w: cluster %q is not served here: this API answers for cluster %q, whose TokenReview and RBAC it uses", ErrNotFound, c, s.cluster)
	}
	return nil
}

// respond writes v as JSON, or as YAML when the caller asks for it
// (?format=yaml or Accept: application/yaml).
func respond(w http.ResponseWriter, r *http.Request, status int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	ctype := "application/json"
	if wantsYAML(r) {
		if data, err = jsonToYAML(data); err != nil {
			return fmt.Errorf("encode answer: %w", err)
		}
		ctype = "application/yaml"
	} else {
		data = append(data, '\n')
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(data)
	return nil
}

func wantsYAML(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "yaml":
		return true
	case "json":
		return false
	}
	for _, a := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(a), ";")
		switch mt {
		case "application/yaml", "application/x-yaml", "text/yaml":
			return true
		case "application/json":
			return false
		}
	}
	return false
}

// decodeBody decodes an optional JSON body strictly into v.
func decodeBody(r *http.Request, v any) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("%w: body larger than %d bytes", ErrInvalid, tooBig.Limit)
		}
		return fmt.Errorf("%w: body: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: body: more than one JSON value", ErrInvalid)
	}
	return nil
}

// Query parameter parsing.

const (
	defaultLimit = 100
	maxLimit     = 500
)

// pageParams reads the paging parameters (limit, cursor, since, until) into
// a query and returns the page size; the page scan sets the query's limit
// and cursor for each chunk it reads.
func (s *Server) pageParams(r *http.Request, after **store.Cursor, since, until *time.Time) (int, error) {
	limit, err := limitParam(r)
	if err != nil {
		return 0, err
	}
	if *after, err = s.cursorParam(r); err != nil {
		return 0, err
	}
	if *since, *until, err = timeRange(r); err != nil {
		return 0, err
	}
	return limit, nil
}

func limitParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxLimit {
		return 0, fmt.Errorf("%w: limit=%q: must be a whole number from 1 to %d", ErrInvalid, s, maxLimit)
	}
	return n, nil
}

// timeParam parses an RFC 3339 time, or a negative duration before now
// ("-24h").
func timeParam(r *http.Request, name string, now time.Time) (time.Time, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	return parseTime(name, s, now)
}

func parseTime(name, s string, now time.Time) (time.Time, error) {
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s)
		if err == nil {
			return now.Add(d), nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s=%q: want an RFC 3339 time (2026-11-21T10:00:00Z) or a negative duration (-24h)", ErrInvalid, name, s)
	}
	return t, nil
}

func timeRange(r *http.Request) (since, until time.Time, err error) {
	now := time.Now()
	if since, err = timeParam(r, "since", now); err != nil {
		return
	}
	if until, err = timeParam(r, "until", now); err != nil {
		return
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		err = fmt.Errorf("%w: since (%s) must be before until (%s)", ErrInvalid, since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	return
}

// optional returns a pointer to the parameter's value when it is given,
// even empty (group= is the core group, namespace= cluster-scoped objects).
func optional(r *http.Request, name string) *string {
	q := r.URL.Query()
	if !q.Has(name) {
		return nil
	}
	v := q.Get(name)
	return &v
}

// cursor is the page cursor: where the previous page stopped, which may be a
// row the caller may not read. It is sealed (AES-GCM), so it tells nothing
// of that row.
type cursor struct {
	At  time.Time `json:"t"`
	UID string    `json:"u,omitempty"`
	Key string    `json:"k"`
}

// newCursorAEAD keys the cursor seal: key (32 bytes; replicas that share it
// accept each other's cursors), or a random one for this process.
func newCursorAEAD(key []byte) (cipher.AEAD, error) {
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("restore: cursor key: %w", err)
		}
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("restore: cursor key: %w", err)
	}
	return cipher.NewGCM(block)
}

func (s *Server) encodeCursor(c store.Cursor) string {
	b, _ := json.Marshal(cursor{At: c.At.UTC(), UID: c.UID, Key: hex.EncodeToString(c.Key)})
	nonce := make([]byte, s.cursors.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.cursors.Seal(nonce, nonce, b, nil))
}

func (s *Server) cursorParam(r *http.Request) (*store.Cursor, error) {
	v := r.URL.Query().Get("cursor")
	if v == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: cursor=%q is not a cursor this API returned (pass the next value of a page as is)", ErrInvalid, v)
	sealed, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(sealed) < s.cursors.NonceSize() {
		return nil, bad
	}
	n := s.cursors.NonceSize()
	b, err := s.cursors.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, bad
	}
	var c cursor
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || c.At.IsZero() {
		return nil, bad
	}
	key, err := hex.DecodeString(c.Key)
	if err != nil || len(key) == 0 {
		return nil, bad
	}
	return &store.Cursor{At: c.At, UID: c.UID, Key: key}, nil
}

// versionKeyParam parses the hex version key of the path.
func versionKeyParam(r *http.Request) ([]byte, error) {
	return parseKey(chi.URLParam(r, "key"))
}

func parseKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%w: version key %q: want the 64 hex digits of a version's versionKey", ErrInvalid, s)
	}
	return key, nil
}

// parseVersionID parses "<uid>/<versionKey>".
func parseVersionID(name, s string) (string, []byte, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", nil, fmt.Errorf("%w: %s=%q: want a version id <uid>/<versionKey>", ErrInvalid, name, s)
	}
	key, err := parseKey(s[i+1:])
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	return s[:i], key, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q: want true or false", ErrInvalid, name, s)
	}
	return b, nil
}

func (s *Server) getOpenAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.openapi)
	return nil
}
