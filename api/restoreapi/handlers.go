package restoreapi

// The handlers: each reads its request, calls the restore service and
// answers in JSON or YAML.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/restoreapi/paths"
	"github.com/options-record/options-record/api/shortname"
)

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

// answer responds with the result of a service call, or returns its error.
func answer[T any](w http.ResponseWriter, r *http.Request, status int, v T, err error) error {
	if err != nil {
		return err
	}
	return respond(w, r, status, v)
}

func (s *Server) searchChanges(w http.ResponseWriter, r *http.Request) error {
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	v := r.URL.Query()
	f := history.ChangeFilter{Cluster: chi.URLParam(r, "cluster"),
		Group: optional(r, "group"), Namespace: optional(r, "namespace"), Resource: v.Get("resource"),
		Name: v.Get("name"), UID: v.Get("uid"), User: v.Get("user"), Verb: v.Get("verb")}
	if at := v.Get("asOf"); at != "" {
		t, err := history.ParseTime("asOf", at, time.Now())
		if err != nil {
			return fmt.Errorf("%w: %v", errs.ErrInvalid, err)
		}
		f.AsOf = &t
	}
	page, err := s.hist.Changes(r.Context(), f, p)
	s.newestEvents(w, r, "changes", err)
	return answer(w, r, http.StatusOK, page, err)
}

func (s *Server) historyByName(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	o := history.ObjectName{Group: v.Get("group"), Resource: v.Get("resource"), Namespace: v.Get("namespace"), Name: v.Get("name")}
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := s.hist.History(r.Context(), chi.URLParam(r, "cluster"), o, p)
	s.newestEvents(w, r, "changes", err)
	return answer(w, r, http.StatusOK, page, err)
}

func (s *Server) historyByUID(w http.ResponseWriter, r *http.Request) error {
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := s.hist.HistoryByUID(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "uid"), p)
	s.newestEvents(w, r, "changes", err)
	return answer(w, r, http.StatusOK, page, err)
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) error {
	id, err := versionParam(r)
	if err != nil {
		return err
	}
	v, err := s.hist.Version(r.Context(), id)
	return answer(w, r, http.StatusOK, v, err)
}

func (s *Server) getVersionByName(w http.ResponseWriter, r *http.Request) error {
	id, err := s.hist.ResolveVersion(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "name"), history.NameScope{})
	if err != nil {
		return err
	}
	v, err := s.hist.Version(r.Context(), id)
	return answer(w, r, http.StatusOK, v, err)
}

func (s *Server) diffVersion(w http.ResponseWriter, r *http.Request) error {
	includeStatus, err := boolParam(r, "includeStatus")
	if err != nil {
		return err
	}
	id, err := versionParam(r)
	if err != nil {
		return err
	}
	var against *history.VersionID
	if a := r.URL.Query().Get("against"); a != "" {
		uid, key, err := history.ParseVersionID("against", a)
		if err == nil {
			against = &history.VersionID{Cluster: id.Cluster, UID: uid, Key: key}
		} else {
			// A short name (or a long one, <uid>.<versionKey>).
			sid, rerr := s.hist.ResolveVersion(r.Context(), id.Cluster, a, history.NameScope{})
			if errors.Is(rerr, shortname.ErrNotAName) {
				return fmt.Errorf("%w: against=%q: want a version id <uid>/<versionKey>, or a short name (app-config-3f9a2c1b)", errs.ErrInvalid, a)
			}
			if rerr != nil {
				return fmt.Errorf("against: %w", rerr)
			}
			against = &sid
		}
	}
	res, err := s.hist.Diff(r.Context(), id, against, history.DiffOptions{IncludeStatus: includeStatus})
	return answer(w, r, http.StatusOK, res, err)
}

func (s *Server) getManifest(w http.ResponseWriter, r *http.Request) error {
	id, err := versionParam(r)
	if err != nil {
		return err
	}
	res, err := s.svc.Manifest(r.Context(), id)
	if err != nil {
		return err
	}
	if !wantsYAML(r) {
		return respond(w, r, http.StatusOK, res)
	}
	// YAML: the bare manifest for kubectl apply -f -, the report in comments.
	body, err := toYAML(res.Manifest)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(manifestHeader(&res.Version, res.DroppedOwners))
	_, _ = w.Write(body)
	return nil
}

// ErrNotLogged is the error a Proofs function wraps for a version that is
// not in the tamper-evident log (yet): not found (history.ErrNotLogged).
var ErrNotLogged = history.ErrNotLogged

// proveVersion answers a version's inclusion proof to a caller who may
// read the version: the same authorization, and the same not found for a
// version the caller may not read as for one that is missing.
func (s *Server) proveVersion(w http.ResponseWriter, r *http.Request) error {
	id, err := versionParam(r)
	if err != nil {
		return err
	}
	return s.prove(w, r, id)
}

func (s *Server) proveVersionByName(w http.ResponseWriter, r *http.Request) error {
	id, err := s.hist.ResolveVersion(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "name"), history.NameScope{})
	if err != nil {
		return err
	}
	return s.prove(w, r, id)
}

func (s *Server) prove(w http.ResponseWriter, r *http.Request, id history.VersionID) error {
	if _, err := s.hist.VersionRecord(r.Context(), id); err != nil {
		return err
	}
	if s.proofs == nil {
		return history.ErrNoLog
	}
	proof, err := s.proofs(r.Context(), id.Cluster, id.UID, id.Key)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(proof)
	return nil
}

func (s *Server) listDeletions(w http.ResponseWriter, r *http.Request) error {
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := s.hist.Deletions(r.Context(), objectFilter(r), p)
	s.newestEvents(w, r, "deletions", err)
	return answer(w, r, http.StatusOK, page, err)
}

func (s *Server) getFailedMutation(w http.ResponseWriter, r *http.Request) error {
	id, err := s.hist.ResolveAttempt(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "attempt"), history.NameScope{})
	if err != nil {
		return err
	}
	e, err := s.hist.FailedMutation(r.Context(), id)
	return answer(w, r, http.StatusOK, e, err)
}

func (s *Server) failedMutations(w http.ResponseWriter, r *http.Request) error {
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := s.hist.FailedMutationsWithBodies(r.Context(), objectFilter(r), p)
	s.newestEvents(w, r, "attempts", err)
	return answer(w, r, http.StatusOK, page, err)
}

func (s *Server) userActivity(w http.ResponseWriter, r *http.Request) error {
	p, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := s.hist.Activity(r.Context(), chi.URLParam(r, "cluster"), r.URL.Query().Get("user"), p)
	s.newestEvents(w, r, "changes", err)
	return answer(w, r, http.StatusOK, page, err)
}

func (s *Server) restoreVersion(w http.ResponseWriter, r *http.Request) error {
	var req restore.RestoreRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	dry, err := boolParam(r, "dryRun")
	if err != nil {
		return err
	}
	req.DryRun = req.DryRun || dry
	id, err := versionParam(r)
	if err != nil {
		return err
	}
	res, err := s.svc.RestoreVersion(r.Context(), id, req)
	return answer(w, r, http.StatusOK, res, err)
}

func (s *Server) createPlan(w http.ResponseWriter, r *http.Request) error {
	if s.svc.Standalone() {
		return restore.ErrStandalone
	}
	if r.ContentLength == 0 {
		return fmt.Errorf("%w: send the plan request as a JSON body", errs.ErrInvalid)
	}
	var req restore.PlanRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	p, err := s.svc.CreatePlan(r.Context(), chi.URLParam(r, "cluster"), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", paths.ClusterPath(p.Cluster)+"/restore-plans/"+p.ID)
	return respond(w, r, http.StatusCreated, p)
}

func (s *Server) getPlan(w http.ResponseWriter, r *http.Request) error {
	p, err := s.svc.Plan(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "id"))
	return answer(w, r, http.StatusOK, p, err)
}

func (s *Server) executePlan(w http.ResponseWriter, r *http.Request) error {
	if s.svc.Standalone() {
		return restore.ErrStandalone
	}
	var req restore.ExecuteRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	dry, err := boolParam(r, "dryRun")
	if err != nil {
		return err
	}
	req.DryRun = req.DryRun || dry
	p, err := s.svc.ExecutePlan(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "id"), req)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if p.State != restore.StateSucceeded {
		code = http.StatusMultiStatus // partial failures are listed, not hidden
	}
	return respond(w, r, code, p)
}

// newestEvents adds recordv1alpha1.NewestEventsHeader to a list answered (listErr
// nil) to its authenticated caller: how late each audit source of the
// list's cluster is, only when the caller may list resource (the record
// API's deletions, changes or attempts the list answers as) at the cluster
// scope: the times are the whole cluster's. Not read, it is left out (and
// logged).
func (s *Server) newestEvents(w http.ResponseWriter, r *http.Request, resource string, listErr error) {
	if listErr != nil {
		return
	}
	cluster := chi.URLParam(r, "cluster")
	newest, err := s.hist.NewestEvents(r.Context(), cluster, recordv1alpha1.GroupName, resource)
	if err != nil {
		s.log.Warn("the sources' progress could not be read: a list answered without it", "err", err)
		return
	}
	if v := recordv1alpha1.FormatNewestEvents(cluster, time.Now(), newest); v != "" {
		w.Header().Set(recordv1alpha1.NewestEventsHeader, v)
	}
}
