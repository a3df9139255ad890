package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Query selects the timeline: a namespace ("" with All for every one the
// caller may read), a time window and filters.
type Query struct {
	Namespace string
	All       bool
	Since     time.Duration
	User      string
	Resource  string // as kubectl names it (cm, deployments.apps)
	Name      string
	Limit     int
}

// Timeline is the page's data: changes and refused attempts, newest first.
type Timeline struct {
	Events    []Event `json:"events"`
	Truncated bool    `json:"truncated"`
	Namespace string  `json:"namespace"`
}

// Event is one mark on the timeline.
type Event struct {
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"` // change or attempt
	Verb      string    `json:"verb"`
	Group     string    `json:"group"`
	Resource  string    `json:"resource"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       string    `json:"uid"`
	User      string    `json:"user"`
	As        string    `json:"as,omitempty"`
	UserAgent string    `json:"userAgent,omitempty"`
	Version   string    `json:"version,omitempty"`
	// ShortName is the change's or the attempt's short name, shown on
	// its mark (kubectl get change/attempt NAME takes it).
	ShortName    string `json:"shortName,omitempty"`
	Restorable   bool   `json:"restorable,omitempty"`
	InitiatedBy  string `json:"initiatedBy,omitempty"`
	InitiatedVia string `json:"initiatedVia,omitempty"`
	// Initiator is the object whose deletion started a cascade
	// (group/resource/namespace/name, as the page keys its lanes).
	Initiator *ObjectQuery `json:"initiator,omitempty"`
	Code      int32        `json:"code,omitempty"`
	Reason    string       `json:"reason,omitempty"`
}

// ObjectQuery names one object.
type ObjectQuery struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Name      string `json:"name"`
}

// Version is one recorded version of an object.
type Version struct {
	Name       string    `json:"name"`
	ShortName  string    `json:"shortName"`
	At         time.Time `json:"at"`
	Verb       string    `json:"verb"`
	User       string    `json:"user"`
	UID        string    `json:"uid"`
	Restorable bool      `json:"restorable"`
}

// Diff is the keyed diff of two states, as pairs of YAML texts per path.
type Diff struct {
	From    string       `json:"from"`
	To      string       `json:"to"`
	Changes []DiffChange `json:"changes"`
}

// DiffChange is one changed path: the value before and after, as YAML.
type DiffChange struct {
	Op     string `json:"op"`
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// RestoreResult is the outcome (or the dry run) of a restore or a plan.
type RestoreResult struct {
	Phase   string       `json:"phase"`
	Action  string       `json:"action,omitempty"`
	Message string       `json:"message,omitempty"`
	DryRun  bool         `json:"dryRun"`
	Changes []DiffChange `json:"changes,omitempty"`
	Steps   []string     `json:"steps,omitempty"`
	// PlanDigest is, for a plan's run, the digest of its steps: the page
	// sends its dry run's back to execute what it showed.
	PlanDigest string `json:"planDigest,omitempty"`
	// StateDigest is, for a version's restore, the digest of the recorded
	// state restored: the page sends its dry run's back to restore what
	// it showed.
	StateDigest string `json:"stateDigest,omitempty"`
}

// PlanQuery asks for a plan: as of a time, or undoing a user.
type PlanQuery struct {
	Namespace string    `json:"namespace"`
	Kind      string    `json:"kind"`
	At        time.Time `json:"at"`
	User      string    `json:"user"`
	Since     time.Time `json:"since"`
}

// Plan is a reviewable plan.
type Plan struct {
	Name  string     `json:"name"`
	Steps []PlanStep `json:"steps"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	Action    string `json:"action"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason,omitempty"`
}

// maxBody bounds a request body of the page.
const maxBody = 64 << 10

func (s *Server) api(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/timeline", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		since, err := time.ParseDuration(cmpOr(q.Get("since"), "2h"))
		if err != nil || since <= 0 {
			answer(w, nil, badRequest("since: want a duration such as 2h"))
			return
		}
		limit, _ := strconv.Atoi(q.Get("limit"))
		tl, err := s.opts.Backend.Changes(r.Context(), Query{Namespace: clean(q.Get("namespace")), All: q.Get("all") == "true",
			Since: since, User: clean(q.Get("user")), Resource: clean(q.Get("resource")), Name: clean(q.Get("name")), Limit: limit})
		answer(w, tl, err)
	})
	mux.HandleFunc("GET /api/versions", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.opts.Backend.Versions(r.Context(), objectQuery(r))
		answer(w, v, err)
	})
	mux.HandleFunc("GET /api/diff", func(w http.ResponseWriter, r *http.Request) {
		d, err := s.opts.Backend.Diff(r.Context(), objectQuery(r), clean(r.URL.Query().Get("from")), clean(r.URL.Query().Get("to")))
		answer(w, d, err)
	})
	mux.HandleFunc("POST /api/restore", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ObjectQuery
			Version     string `json:"version"`
			DryRun      bool   `json:"dryRun"`
			StateDigest string `json:"stateDigest"`
		}
		if !decode(w, r, &req) {
			return
		}
		res, err := s.opts.Backend.Restore(r.Context(), req.ObjectQuery, req.Version, req.StateDigest, req.DryRun)
		answer(w, res, err)
	})
	mux.HandleFunc("POST /api/plan", func(w http.ResponseWriter, r *http.Request) {
		var req PlanQuery
		if !decode(w, r, &req) {
			return
		}
		p, err := s.opts.Backend.Plan(r.Context(), req)
		answer(w, p, err)
	})
	mux.HandleFunc("POST /api/plan/execute", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			DryRun    bool   `json:"dryRun"`
			Digest    string `json:"digest"`
		}
		if !decode(w, r, &req) {
			return
		}
		res, err := s.opts.Backend.ExecutePlan(r.Context(), req.Namespace, req.Name, req.Digest, req.DryRun)
		answer(w, res, err)
	})
}

func objectQuery(r *http.Request) ObjectQuery {
	q := r.URL.Query()
	return ObjectQuery{Namespace: clean(q.Get("namespace")), Group: clean(q.Get("group")), Resource: clean(q.Get("resource")), Name: clean(q.Get("name"))}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(v); err != nil {
		answer(w, nil, badRequest("the request is not the page's JSON"))
		return false
	}
	return true
}

// Error is an error with the status the page gets.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

func badRequest(m string) error { return &Error{Status: http.StatusBadRequest, Message: m} }

// answer writes v as JSON, or the error as {"error": message}.
func answer(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusBadGateway
		var e *Error
		if errors.As(err, &e) {
			status = e.Status
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
