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
// the caller may get, so a list asks each question once. It asks at most
// maxChecks distinct questions: past that, check answers errTooManyChecks.
type readFilter struct {
	s     *Server
	ctx   context.Context
	cache map[string]error
}

// maxChecks bounds the distinct authorization questions (SubjectAccessReviews
// when not cached) of one request.
const maxChecks = 200

// errTooManyChecks ends a scan that would ask more than maxChecks questions.
var errTooManyChecks = fmt.Errorf("%w: the request spans more than %d (resource, namespace) pairs: narrow it (namespace, resource, since/until)", ErrInvalid, maxChecks)

func (s *Server) readFilter(ctx context.Context) *readFilter {
	return &readFilter{s: s, ctx: ctx, cache: map[string]error{}}
}

// check asks once per request whether the caller may get the resource in
// namespace: nil, an ErrForbidden, or the authorizer's failure.
func (f *readFilter) check(group, resource, namespace string) error {
	return f.checkVerb("get", group, resource, namespace)
}

func (f *readFilter) checkVerb(verb, group, resource, namespace string) error {
	k := verb + "\x00" + group + "\x00" + resource + "\x00" + namespace
	err, ok := f.cache[k]
	if !ok {
		if len(f.cache) >= maxChecks {
			return errTooManyChecks
		}
		err = f.s.authorize(f.ctx, verb, group, resource, namespace, "")
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

// allowedVerbs reports whether the caller may do every verb on the
// resource in namespace; errors other than a denial are returned.
func (f *readFilter) allowedVerbs(group, resource, namespace string, verbs ...string) (bool, error) {
	for _, verb := range verbs {
		err := f.checkVerb(verb, group, resource, namespace)
		if errors.Is(err, ErrForbidden) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// maxScanRows bounds the rows one page request reads from the record.
const maxScanRows = 5000

// pageScan reads a list page by page from the record, in chunks.
type pageScan[R any, T any] struct {
	limit int // items of the page
	// fetch reads up to n rows after the cursor (nil: from the start).
	fetch func(after *store.Cursor, n int) ([]R, error)
	gr    func(*R) (string, string, string)
	conv  func(*R) T
	cur   func(*R) store.Cursor
}

// run fills a page with the rows the caller may read. The paging rule,
// chosen so that a page tells nothing of the rows the caller may not read:
//
//   - the record is scanned from the cursor in chunks, at most maxScanRows
//     rows and maxChecks authorization questions per request;
//   - a page holds up to limit items the caller may read;
//   - next is given only when the scan found, within those bounds, one
//     more item the caller may read after the page, and it points at the
//     page's last item (a row the caller has seen), never at a hidden row.
//
// So an empty page never has a next cursor, and the presence of next and
// the cursor's position depend only on the rows the caller may read. A scan
// that reaches its bounds ends the list as the end of the record would:
// items beyond that many hidden rows are found by narrowing the request
// (namespace, resource, since/until), not by paging.
func (p pageScan[R, T]) run(after *store.Cursor, f *readFilter) (Page[T], error) {
	page := Page[T]{Items: []T{}}
	chunk := max(p.limit+1, 100)
	var last store.Cursor
	for scanned := 0; scanned < maxScanRows; {
		n := min(chunk, maxScanRows-scanned)
		rows, err := p.fetch(after, n)
		if err != nil {
			return page, err
		}
		scanned += len(rows)
		for i := range rows {
			g, res, ns := p.gr(&rows[i])
			ok, err := f.allowed(g, res, ns)
			if errors.Is(err, errTooManyChecks) {
				return page, nil // the scan's bound: the list ends here
			}
			if err != nil {
				return page, err
			}
			if !ok {
				continue
			}
			if len(page.Items) == p.limit {
				page.Next = f.s.encodeCursor(last)
				return page, nil
			}
			page.Items = append(page.Items, p.conv(&rows[i]))
			last = p.cur(&rows[i])
		}
		if len(rows) < n {
			return page, nil // the end of the record
		}
		c := p.cur(&rows[len(rows)-1])
		after = &c
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
	if err := s.refuseUnreadable(r.Context(), q.Group, q.Resource, q.Namespace, q.Name); err != nil {
		return err
	}
	return s.listChanges(w, r, q)
}

// refuseUnreadable refuses a list whose filters name objects the caller may
// not get (group, resource and namespace given): the answer depends on the
// caller's rights only, never on what the record holds. Lists with fewer
// filters are protected by the paging rule (pageScan.run): a page tells
// nothing of the rows it leaves out.
func (s *Server) refuseUnreadable(ctx context.Context, group *string, resource string, namespace *string, name string) error {
	if group == nil || resource == "" || namespace == nil {
		return nil
	}
	return s.authorize(ctx, "get", *group, resource, *namespace, name)
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
	// An object the caller may not read is answered as one that does not
	// exist (see versionByID).
	missing := fmt.Errorf("%w: no object with uid %q in cluster %q that you may read", ErrNotFound, uid, cluster)
	if len(newest) == 0 {
		return missing
	}
	o := newest[0]
	if err := s.authorize(r.Context(), "get", o.APIGroup, o.Resource, o.Namespace, o.Name); err != nil {
		if errors.Is(err, ErrForbidden) {
			return missing
		}
		return err
	}
	return s.listChanges(w, r, store.ChangeQuery{Cluster: cluster, UID: uid, Ascending: true})
}

func (s *Server) listChanges(w http.ResponseWriter, r *http.Request, q store.ChangeQuery) error {
	limit, err := s.pageParams(r, &q.After, &q.Since, &q.Until)
	if err != nil {
		return err
	}
	page, err := pageScan[store.VersionRecord, Version]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.VersionRecord, error) {
			q.After, q.Limit = after, n
			return s.reader.Changes(r.Context(), q)
		},
		gr: versionGR, conv: versionConv, cur: versionCursor,
	}.run(q.After, s.readFilter(r.Context()))
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
	// A version the caller may not read is answered as one that does not
	// exist: a refusal would name its resource and namespace to whoever
	// knows a uid (ownerReferences show them).
	missing := fmt.Errorf("%w: no version %s/%x in cluster %q that you may read", ErrNotFound, uid, key, cluster)
	v, err := s.reader.Version(ctx, cluster, uid, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, "get", v.APIGroup, v.Resource, v.Namespace, v.Name); err != nil {
		if errors.Is(err, ErrForbidden) {
			return nil, missing
		}
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
	if err := s.refuseUnreadable(r.Context(), q.Group, q.Resource, q.Namespace, q.Name); err != nil {
		return err
	}
	limit, err := s.pageParams(r, &q.After, &q.Since, &q.Until)
	if err != nil {
		return err
	}
	page, err := pageScan[store.Deletion, Deletion]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.Deletion, error) {
			q.After, q.Limit = after, n
			return s.reader.Deletions(r.Context(), q)
		},
		gr: func(d *store.Deletion) (string, string, string) { return versionGR(&d.VersionRecord) },
		conv: func(d *store.Deletion) Deletion {
			out := Deletion{Version: versionOf(&d.VersionRecord), InitiatedBy: d.InitiatedBy, InitiatedVia: d.InitiatedVia, InitiatedAt: d.InitiatedAt}
			if d.StateKey != nil {
				l := linksFor(d.Cluster, d.UID, d.StateKey)
				out.RestoreFrom = &l
			}
			return out
		},
		cur: func(d *store.Deletion) store.Cursor { return versionCursor(&d.VersionRecord) },
	}.run(q.After, s.readFilter(r.Context()))
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, page)
}

func (s *Server) failedMutations(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	q := store.EventQuery{Group: optional(r, "group"), Namespace: optional(r, "namespace"),
		Resource: v.Get("resource"), Name: v.Get("name"), User: v.Get("user")}
	if err := s.refuseUnreadable(r.Context(), q.Group, q.Resource, q.Namespace, q.Name); err != nil {
		return err
	}
	return s.listEvents(w, r, s.reader.FailedMutations, q)
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
	limit, err := s.pageParams(r, &q.After, &q.Since, &q.Until)
	if err != nil {
		return err
	}
	page, err := pageScan[store.EventRecord, Event]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.EventRecord, error) {
			q.After, q.Limit = after, n
			return read(r.Context(), q)
		},
		gr: func(e *store.EventRecord) (string, string, string) {
			return e.APIGroup, e.Resource, authzNamespace(e.APIGroup, e.Resource, e.Namespace, e.Name)
		},
		conv: eventOf,
		cur:  func(e *store.EventRecord) store.Cursor { return store.Cursor{At: e.At, Key: e.Key} },
	}.run(q.After, s.readFilter(r.Context()))
	if err != nil {
		return err
	}
	return respond(w, r, http.StatusOK, page)
}
