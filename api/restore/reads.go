package restore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/options-record/options-record/store"
)

// readFilter remembers, for one request, which (group, resource, namespace)
// the caller may get, so a list asks each question once.
type readFilter struct {
	s     *Server
	ctx   context.Context
	cache map[string]error
}

func (s *Server) readFilter(ctx context.Context) *readFilter {
	return &readFilter{s: s, ctx: ctx, cache: map[string]error{}}
}

// check asks once per request whether the caller may get the resource in
// namespace: nil, an ErrForbidden, or the authorizer's failure.
func (f *readFilter) check(group, resource, namespace string) error {
	k := group + "\x00" + resource + "\x00" + namespace
	err, ok := f.cache[k]
	if !ok {
		err = f.s.authorize(f.ctx, "get", group, resource, namespace, "")
		f.cache[k] = err
	}
	return err
}

// allowed reports whether the caller may get the resource in namespace;
// errors other than a denial are returned.
func (f *readFilter) allowed(group, resource, namespace string) (bool, error) {
	err := f.check(group, resource, namespace)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, ErrForbidden) {
		return false, nil
	}
	return false, err
}

// pageOf converts rows (fetched with limit+1) into a page of the caller's
// readable items.
func pageOf[R any, T any](rows []R, limit int, f *readFilter, gr func(*R) (string, string, string), conv func(*R) T, cur func(*R) store.Cursor) (Page[T], error) {
	page := Page[T]{Items: []T{}}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
		page.Next = f.s.encodeCursor(cur(&rows[len(rows)-1]))
	}
	for i := range rows {
		g, res, ns := gr(&rows[i])
		ok, err := f.allowed(g, res, ns)
		if err != nil {
			return page, err
		}
		if ok {
			page.Items = append(page.Items, conv(&rows[i]))
		}
	}
	return page, nil
}

func versionGR(v *store.VersionRecord) (string, string, string) {
	return v.APIGroup, v.Resource, authzNamespace(v.APIGroup, v.Resource, v.Namespace, v.Name)
}

// authzNamespace is the namespace a request for an object is authorized in.
// The apiserver authorizes a request for a Namespace object as in that
// namespace itself, so a RoleBinding in team-a that grants reading
// namespaces lets its subjects read team-a.
func authzNamespace(group, resource, namespace, name string) string {
	if group == "" && resource == "namespaces" && namespace == "" {
		return name
	}
	return namespace
}
func versionCursor(v *store.VersionRecord) store.Cursor {
	return store.Cursor{At: v.ChangedAt, UID: v.UID, Key: v.Key}
}
func versionConv(v *store.VersionRecord) Version { return versionOf(v) }

func (s *Server) searchChanges(w http.ResponseWriter, r *http.Request) error {
	q := store.ChangeQuery{Cluster: chi.URLParam(r, "cluster"), Group: optional(r, "group"),
		Namespace: optional(r, "namespace")}
	v := r.URL.Query()
	q.Resource, q.Name, q.UID, q.User, q.Verb = v.Get("resource"), v.Get("name"), v.Get("uid"), v.Get("user"), v.Get("verb")
	// A search for objects the caller may not read is refused as such: an
	// empty page with a next cursor would tell that some exist.
	if q.Group != nil && q.Resource != "" && q.Namespace != nil {
		if err := s.authorize(r.Context(), "get", *q.Group, q.Resource, *q.Namespace, q.Name); err != nil {
			return err
		}
	}
	return s.listChanges(w, r, q)
}

func (s *Server) historyByName(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	group, ns := v.Get("group"), v.Get("namespace")
	q := store.ChangeQuery{Cluster: chi.URLParam(r, "cluster"), Group: &group, Namespace: &ns,
		Resource: v.Get("resource"), Name: v.Get("name"), Ascending: true}
	if q.Resource == "" || q.Name == "" {
		return fmt.Errorf("%w: resource and name must not be empty", ErrInvalid)
	}
	if err := s.authorize(r.Context(), "get", group, q.Resource, ns, q.Name); err != nil {
		return err
	}
	return s.listChanges(w, r, q)
}

func (s *Server) historyByUID(w http.ResponseWriter, r *http.Request) error {
	cluster, uid := chi.URLParam(r, "cluster"), chi.URLParam(r, "uid")
	// The object's resource and namespace come from its newest version.
	newest, err := s.reader.Changes(r.Context(), store.ChangeQuery{Cluster: cluster, UID: uid, Limit: 1})
	if err != nil {
		return err
	}
	if len(newest) == 0 {
		return fmt.Errorf("%w: no version of an object with uid %q in cluster %q", ErrNotFound, uid, cluster)
	}
	o := newest[0]
	if err := s.authorize(r.Context(), "get", o.APIGroup, o.Resource, o.Namespace, o.Name); err != nil {
		return err
	}
	return s.listChanges(w, r, store.ChangeQuery{Cluster: cluster, UID: uid, Ascending: true})
}

func (s *Server) listChanges(w http.ResponseWriter, r *http.Request, q store.ChangeQuery) error {
	limit, err := s.pageParams(r, &q.Limit, &q.After, &q.Since, &q.Until)
	if err != nil {
		return err
	}
	rows, err := s.reader.Changes(r.Context(), q)
	if err != nil {
		return err
	}
	page, err := pageOf(rows, limit, s.readFilter(r.Context()), versionGR, versionConv, versionCursor)
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, page)
}

// version loads the version of the path and checks that the caller may
// read it.
func (s *Server) version(r *http.Request) (*store.VersionRecord, error) {
	key, err := versionKeyParam(r)
	if err != nil {
		return nil, err
	}
	return s.versionByID(r.Context(), chi.URLParam(r, "cluster"), chi.URLParam(r, "uid"), key)
}

func (s *Server) versionByID(ctx context.Context, cluster, uid string, key []byte) (*store.VersionRecord, error) {
	v, err := s.reader.Version(ctx, cluster, uid, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no version %s/%x in cluster %q", ErrNotFound, uid, key, cluster)
	}
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, "get", v.APIGroup, v.Resource, v.Namespace, v.Name); err != nil {
		return nil, err
	}
	return v, nil
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) error {
	v, err := s.version(r)
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, versionOf(v))
}

func (s *Server) diffVersion(w http.ResponseWriter, r *http.Request) error {
	includeStatus, err := boolParam(r, "includeStatus")
	if err != nil {
		return err
	}
	to, err := s.version(r)
	if err != nil {
		return err
	}
	var from *store.VersionRecord
	if against := r.URL.Query().Get("against"); against != "" {
		uid, key, err := parseVersionID("against", against)
		if err != nil {
			return err
		}
		if from, err = s.versionByID(r.Context(), to.Cluster, uid, key); err != nil {
			return err
		}
	} else {
		from, err = s.reader.StateBefore(r.Context(), to)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: the record holds no state before version %s/%x (prior unknown); pass against=<uid>/<versionKey>", ErrNotFound, to.UID, to.Key)
		}
		if err != nil {
			return err
		}
	}
	res, err := diffVersions(from, to, DiffOptions{IncludeStatus: includeStatus})
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, res)
}

// diffVersions diffs two stored states. A nil from is the absence before a
// create; a delete's "to" state is the absence after it.
func diffVersions(from, to *store.VersionRecord, o DiffOptions) (*DiffResult, error) {
	res := &DiffResult{IncludeStatus: o.IncludeStatus, Ignored: DiffIgnored(o), Changes: []DiffChange{}}
	var a, b map[string]any
	var err error
	if from != nil {
		fv := versionOf(from)
		fv.Object = nil
		res.From = &fv
		if !from.HasState() {
			return nil, fmt.Errorf("%w: version %s holds no full state to compare", ErrUnprocessable, fv.ID)
		}
		if a, err = decodeObject(from.Object); err != nil {
			return nil, err
		}
	}
	tv := versionOf(to)
	tv.Object = nil
	res.To = &tv
	switch {
	case to.Deleted && from != nil && sameVersion(from, to):
		// The delete's own last state: the object is gone after it.
	case to.Deleted:
	case !to.HasState():
		return nil, fmt.Errorf("%w: version %s holds no full state (a subresource write such as /scale)", ErrUnprocessable, tv.ID)
	default:
		if b, err = decodeObject(to.Object); err != nil {
			return nil, err
		}
	}
	if c := Diff(a, b, o); c != nil {
		res.Changes = c
	}
	return res, nil
}

func sameVersion(a, b *store.VersionRecord) bool {
	return a.Cluster == b.Cluster && a.UID == b.UID && string(a.Key) == string(b.Key)
}

func (s *Server) getManifest(w http.ResponseWriter, r *http.Request) error {
	v, err := s.version(r)
	if err != nil {
		return err
	}
	if err := restorable(v); err != nil {
		return s.withPriorHint(r.Context(), v, err)
	}
	obj, err := decodeObject(v.Object)
	if err != nil {
		return err
	}
	res := ManifestResult{Version: versionOf(v)}
	res.Version.Object = nil
	var check OwnerCheck
	if s.kube != nil {
		c, err := s.kube.as(caller(r.Context()))
		if err != nil {
			return err
		}
		check, res.OwnersChecked = s.kube.ownerCheck(r.Context(), c, v.Namespace, nil), "cluster"
	} else {
		check, res.OwnersChecked = s.recordOwnerCheck(r.Context(), v.Cluster), "record"
	}
	m, err := CleanManifest(obj, check)
	if err != nil {
		return err
	}
	res.Manifest, res.Removed, res.DroppedOwners = m.Object, m.Removed, m.DroppedOwners
	if res.Removed == nil {
		res.Removed = []string{}
	}
	if !wantsYAML(r) {
		return respond(w, r, http.StatusOK, res)
	}
	// YAML: the bare manifest for kubectl apply -f -, the report in comments.
	body, err := toYAML(m.Object)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(manifestHeader(v, res.Version.ID, m.DroppedOwners))
	_, _ = w.Write(body)
	return nil
}

// manifestHeader is the report of a YAML manifest, as comment lines. Every
// recorded value in it was written by some cluster user (an ownerReference
// name may hold a newline followed by a whole ClusterRoleBinding), and the
// manifest is made to be piped into kubectl apply: each value is quoted
// with every control and non-ASCII character escaped, so that no value can
// end its comment line, whatever YAML version reads it (YAML 1.1 also
// breaks lines at U+0085, U+2028 and U+2029).
func manifestHeader(v *store.VersionRecord, id string, dropped []DroppedOwner) []byte {
	q := strconv.QuoteToASCII
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "# %s %s/%s, version %s (%s by %s at %s)\n", q(v.Kind), q(v.Namespace), q(v.Name), q(id), q(v.Verb),
		q(orNone(v.Username)), v.ChangedAt.UTC().Format("2006-01-02T15:04:05Z"))
	for _, d := range dropped {
		fmt.Fprintf(&hdr, "# ownerReference %s %s (uid %s) dropped: %s\n", q(d.Kind), q(d.Name), q(d.UID), q(d.Reason))
	}
	return []byte(hdr.String())
}

func orNone(s string) string {
	if s == "" {
		return "(baseline)"
	}
	return s
}

// recordOwnerCheck decides owner existence from the record (standalone
// mode: no cluster to ask): the owner's newest version is not a delete.
func (s *Server) recordOwnerCheck(ctx context.Context, cluster string) OwnerCheck {
	return func(ref OwnerReference) (string, bool, string) {
		rows, err := s.reader.Changes(ctx, store.ChangeQuery{Cluster: cluster, UID: ref.UID, Limit: 1})
		switch {
		case err != nil:
			return "", false, "could not be checked: " + err.Error()
		case len(rows) == 0:
			return "", false, "owner unknown to the record"
		case rows[0].Deleted:
			return "", false, "owner deleted (according to the record)"
		}
		return ref.UID, true, ""
	}
}

func (s *Server) listDeletions(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	q := store.DeletionQuery{Cluster: chi.URLParam(r, "cluster"), Group: optional(r, "group"), Namespace: optional(r, "namespace"),
		Resource: v.Get("resource"), Name: v.Get("name"), User: v.Get("user")}
	limit, err := s.pageParams(r, &q.Limit, &q.After, &q.Since, &q.Until)
	if err != nil {
		return err
	}
	rows, err := s.reader.Deletions(r.Context(), q)
	if err != nil {
		return err
	}
	page, err := pageOf(rows, limit, s.readFilter(r.Context()),
		func(d *store.Deletion) (string, string, string) { return versionGR(&d.VersionRecord) },
		func(d *store.Deletion) Deletion {
			out := Deletion{Version: versionOf(&d.VersionRecord), InitiatedBy: d.InitiatedBy, InitiatedVia: d.InitiatedVia, InitiatedAt: d.InitiatedAt}
			if d.StateKey != nil {
				l := linksFor(d.Cluster, d.UID, d.StateKey)
				out.RestoreFrom = &l
			}
			return out
		},
		func(d *store.Deletion) store.Cursor { return versionCursor(&d.VersionRecord) })
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, page)
}

func (s *Server) failedMutations(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	return s.listEvents(w, r, s.reader.FailedMutations, store.EventQuery{Group: optional(r, "group"), Namespace: optional(r, "namespace"),
		Resource: v.Get("resource"), Name: v.Get("name"), User: v.Get("user")})
}

func (s *Server) userActivity(w http.ResponseWriter, r *http.Request) error {
	user := r.URL.Query().Get("user")
	if user == "" {
		return fmt.Errorf("%w: user must not be empty", ErrInvalid)
	}
	return s.listEvents(w, r, s.reader.Activity, store.EventQuery{User: user})
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, read func(context.Context, store.EventQuery) ([]store.EventRecord, error), q store.EventQuery) error {
	q.Cluster = chi.URLParam(r, "cluster")
	limit, err := s.pageParams(r, &q.Limit, &q.After, &q.Since, &q.Until)
	if err != nil {
		return err
	}
	rows, err := read(r.Context(), q)
	if err != nil {
		return err
	}
	page, err := pageOf(rows, limit, s.readFilter(r.Context()),
		func(e *store.EventRecord) (string, string, string) {
			return e.APIGroup, e.Resource, authzNamespace(e.APIGroup, e.Resource, e.Namespace, e.Name)
		},
		eventOf,
		func(e *store.EventRecord) store.Cursor { return store.Cursor{At: e.At, Key: e.Key} })
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, page)
}
