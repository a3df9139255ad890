package restoreapi

// Reading requests: query parameters, path parameters and bodies.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
)

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
			return fmt.Errorf("%w: body larger than %d bytes", errs.ErrInvalid, tooBig.Limit)
		}
		return fmt.Errorf("%w: body: %v", errs.ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: body: more than one JSON value", errs.ErrInvalid)
	}
	return nil
}

// pageParams reads the paging parameters (limit, cursor, since, until).
func pageParams(r *http.Request) (history.PageOptions, error) {
	var p history.PageOptions
	var err error
	if p.Limit, err = limitParam(r); err != nil {
		return p, err
	}
	p.Continue = r.URL.Query().Get("cursor")
	now := time.Now()
	if p.Since, err = timeParam(r, "since", now); err != nil {
		return p, err
	}
	if p.Until, err = timeParam(r, "until", now); err != nil {
		return p, err
	}
	return p, nil
}

func limitParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return history.DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > history.MaxLimit {
		return 0, fmt.Errorf("%w: limit=%q: must be a whole number from 1 to %d", errs.ErrInvalid, s, history.MaxLimit)
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
	return history.ParseTime(name, s, now)
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

// objectFilter reads the filters of deletions and failed mutations.
func objectFilter(r *http.Request) history.ObjectFilter {
	v := r.URL.Query()
	return history.ObjectFilter{Cluster: chi.URLParam(r, "cluster"), Group: optional(r, "group"), Namespace: optional(r, "namespace"),
		Resource: v.Get("resource"), Name: v.Get("name"), User: v.Get("user")}
}

// versionParam is the version of the path.
func versionParam(r *http.Request) (history.VersionID, error) {
	key, err := history.ParseVersionKey(chi.URLParam(r, "key"))
	if err != nil {
		return history.VersionID{}, err
	}
	return history.VersionID{Cluster: chi.URLParam(r, "cluster"), UID: chi.URLParam(r, "uid"), Key: key}, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q: want true or false", errs.ErrInvalid, name, s)
	}
	return b, nil
}
