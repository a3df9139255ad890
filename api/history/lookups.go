package history

// The reads of the record: lists of changes, deletions and events, one
// object's history, a version, a diff and a clean manifest. Each is
// authorized per object for the caller of the context.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/restoreapi/paths"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/store"
)

func AuthzTarget(v *store.VersionRecord) (string, string, string) {
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
func versionConv(v *store.VersionRecord) Version { return VersionAsRead(v) }

// Page sizes.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// PageOptions choose a page of a list.
type PageOptions struct {
	// Limit is the most items of the page (0: DefaultLimit; at most
	// MaxLimit).
	Limit int
	// Continue is the Next of the previous page ("": the first page).
	Continue string
	// Since and Until bound the time of the items (zero: unbounded).
	Since, Until time.Time
}

// page checks the options and opens the cursor.
func (s *Service) page(p PageOptions) (limit int, after *store.Cursor, err error) {
	if limit = p.Limit; limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return 0, nil, fmt.Errorf("%w: limit=%d: must be a whole number from 1 to %d", errs.ErrInvalid, p.Limit, MaxLimit)
	}
	if !p.Since.IsZero() && !p.Until.IsZero() && !p.Since.Before(p.Until) {
		return 0, nil, fmt.Errorf("%w: since (%s) must be before until (%s)", errs.ErrInvalid, p.Since.Format(time.RFC3339), p.Until.Format(time.RFC3339))
	}
	after, err = s.openCursor(p.Continue)
	return limit, after, err
}

// ObjectName names an object of the record by its resource.
type ObjectName struct {
	Group, Resource, Namespace, Name string
}

// ParseTime parses the time a filter names: an RFC 3339 time, or a
// negative duration before now ("-24h"); name is the filter's, for the
// error.
func ParseTime(name, s string, now time.Time) (time.Time, error) {
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s)
		if err == nil {
			return now.Add(d), nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s=%q: want an RFC 3339 time (2026-11-21T10:00:00Z) or a negative duration (-24h)", errs.ErrInvalid, name, s)
	}
	return t, nil
}

// ParseVersionKey parses the hex key of a version (shortname.ParseKey:
// 64 hex digits of either case).
func ParseVersionKey(s string) ([]byte, error) {
	key, ok := shortname.ParseKey(s)
	if !ok {
		return nil, fmt.Errorf("%w: version key %q: want the 64 hex digits of a version's versionKey", errs.ErrInvalid, s)
	}
	return key, nil
}

// ParseVersionID parses the id of a version, "<uid>/<versionKey>"; name
// is what the id is, for the error.
func ParseVersionID(name, s string) (uid string, key []byte, err error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", nil, fmt.Errorf("%w: %s=%q: want a version id <uid>/<versionKey>", errs.ErrInvalid, name, s)
	}
	if key, err = ParseVersionKey(s[i+1:]); err != nil {
		return "", nil, fmt.Errorf("%s: %w", name, err)
	}
	return s[:i], key, nil
}

// VersionID names one version: the object's uid and the version key.
type VersionID struct {
	Cluster string
	UID     string
	Key     []byte
}

// ChangeFilter narrows a list of changes. A nil Group or Namespace matches
// any; a given empty one is the core group, or the cluster scope.
type ChangeFilter struct {
	Cluster                         string
	Group, Namespace                *string
	Resource, Name, UID, User, Verb string
	// NamespacedOnly, with no Namespace, leaves out cluster-scoped objects
	// (a namespaced list across all namespaces).
	NamespacedOnly bool
	// AsOf, when set, lists instead the version of each object of the
	// namespace (Namespace is required; "" is the cluster scope) that held
	// its state at that time, for the objects that existed then: the
	// namespace as it was, one version per object, by uid. Group,
	// Resource and Name narrow it; User, Verb, UID and a time window do
	// not apply.
	AsOf *time.Time
}

// Changes lists recorded changes, newest first, that the caller may read.
func (s *Service) Changes(ctx context.Context, f ChangeFilter, p PageOptions) (Page[Version], error) {
	if err := s.refuseUnreadable(ctx, f.Group, f.Resource, f.Namespace, f.Name); err != nil {
		return Page[Version]{}, err
	}
	if f.AsOf != nil {
		return s.asOf(ctx, f, p)
	}
	return s.listChanges(ctx, store.ChangeQuery{Cluster: f.Cluster, Group: f.Group, Namespace: f.Namespace, NamespacedOnly: f.NamespacedOnly,
		Resource: f.Resource, Name: f.Name, UID: f.UID, User: f.User, Verb: f.Verb}, p)
}

// refuseUnreadable refuses a list whose filters name objects the caller may
// not get (group, resource and namespace given): the answer depends on the
// caller's rights only, never on what the record holds. Lists with fewer
// filters are protected by the paging rule (pageScan.run): a page tells
// nothing of the rows it leaves out.
func (s *Service) refuseUnreadable(ctx context.Context, group *string, resource string, namespace *string, name string) error {
	if group == nil || resource == "" || namespace == nil {
		return nil
	}
	return s.authorize(ctx, "get", *group, resource, *namespace, name)
}

// History lists the versions of the objects of one name, oldest first
// (an object deleted and created again under its name has several uids).
func (s *Service) History(ctx context.Context, cluster string, o ObjectName, p PageOptions) (Page[Version], error) {
	if o.Resource == "" || o.Name == "" {
		return Page[Version]{}, fmt.Errorf("%w: resource and name must not be empty", errs.ErrInvalid)
	}
	if err := s.authorize(ctx, "get", o.Group, o.Resource, o.Namespace, o.Name); err != nil {
		return Page[Version]{}, err
	}
	group, ns := o.Group, o.Namespace
	return s.listObjectChanges(ctx, store.ChangeQuery{Cluster: cluster, Group: &group, Namespace: &ns,
		Resource: o.Resource, Name: o.Name, Ascending: true}, p)
}

// HistoryByUID lists the versions of one object, oldest first.
func (s *Service) HistoryByUID(ctx context.Context, cluster, uid string, p PageOptions) (Page[Version], error) {
	// The object's resource and namespace come from its newest version.
	newest, err := s.reader.Changes(ctx, store.ChangeQuery{Cluster: cluster, UID: uid, Limit: 1})
	if err != nil {
		return Page[Version]{}, err
	}
	// An object the caller may not read is answered as one that does not
	// exist (see versionByID).
	missing := fmt.Errorf("%w: no object with uid %q in cluster %q that you may read", errs.ErrNotFound, uid, cluster)
	if len(newest) == 0 {
		return Page[Version]{}, missing
	}
	o := newest[0]
	if err := s.authorize(ctx, "get", o.APIGroup, o.Resource, o.Namespace, o.Name); err != nil {
		if errors.Is(err, errs.ErrForbidden) {
			return Page[Version]{}, missing
		}
		return Page[Version]{}, err
	}
	return s.listObjectChanges(ctx, store.ChangeQuery{Cluster: cluster, UID: uid, Ascending: true}, p)
}

// asOf lists the versions that held the objects' states at f.AsOf, one
// per object that existed then and that the caller may read, by uid.
func (s *Service) asOf(ctx context.Context, f ChangeFilter, p PageOptions) (Page[Version], error) {
	if f.Namespace == nil {
		return Page[Version]{}, fmt.Errorf("%w: as of a time lists one namespace (or the cluster scope): name it", errs.ErrInvalid)
	}
	if f.User != "" || f.Verb != "" || f.UID != "" || !p.Since.IsZero() || !p.Until.IsZero() {
		return Page[Version]{}, fmt.Errorf("%w: as of a time takes the group, resource and name only (no user, verb, uid, since or until)", errs.ErrInvalid)
	}
	limit, after, err := s.page(p)
	if err != nil {
		return Page[Version]{}, err
	}
	q := store.AsOfQuery{Cluster: f.Cluster, Namespace: *f.Namespace, At: *f.AsOf, ByUID: true}
	if f.Resource != "" {
		g := ""
		if f.Group != nil {
			g = *f.Group
		}
		q.Resources = []store.GroupResource{{Group: g, Resource: f.Resource}}
	}
	if f.Name != "" {
		q.Names = []string{f.Name}
	}
	return pageScan[store.VersionRecord, Version]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.VersionRecord, error) {
			q.AfterUID, q.Limit = "", n
			if after != nil {
				q.AfterUID = after.UID
			}
			return s.reader.ObjectsAsOf(ctx, q)
		},
		// The scan goes by uid alone; the version's time and key make the
		// cursor one the API opens again (it refuses one without them).
		gr: AuthzTarget, conv: versionConv, cur: func(v *store.VersionRecord) store.Cursor {
			return store.Cursor{At: v.ChangedAt, UID: v.UID, Key: v.Key}
		},
		redact: func(v *store.VersionRecord, f *ReadFilter) error { return f.redactInitiator(v) },
	}.run(after, s.ReadFilter(ctx))
}

func (s *Service) listChanges(ctx context.Context, q store.ChangeQuery, p PageOptions) (Page[Version], error) {
	return s.changesScan(ctx, q, p, nil)
}

// listObjectChanges lists the versions of one object (one name or one
// uid) to a caller authorized to get it by name: rows are also checked by
// name, so a Role's resourceNames show the object's history.
func (s *Service) listObjectChanges(ctx context.Context, q store.ChangeQuery, p PageOptions) (Page[Version], error) {
	return s.changesScan(ctx, q, p, func(v *store.VersionRecord) string { return v.Name })
}

func (s *Service) changesScan(ctx context.Context, q store.ChangeQuery, p PageOptions, name func(*store.VersionRecord) string) (Page[Version], error) {
	limit, after, err := s.page(p)
	if err != nil {
		return Page[Version]{}, err
	}
	q.Since, q.Until = p.Since, p.Until
	return pageScan[store.VersionRecord, Version]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.VersionRecord, error) {
			q.After, q.Limit = after, n
			return s.reader.Changes(ctx, q)
		},
		gr: AuthzTarget, name: name, conv: versionConv, cur: versionCursor,
		redact: func(v *store.VersionRecord, f *ReadFilter) error { return f.redactInitiator(v) },
	}.run(after, s.ReadFilter(ctx))
}

// VersionRecord loads a version the caller may read; one they may not
// read is answered as one that does not exist.
func (s *Service) VersionRecord(ctx context.Context, id VersionID) (*store.VersionRecord, error) {
	// A version the caller may not read is answered as one that does not
	// exist: a refusal would name its resource and namespace to whoever
	// knows a uid (ownerReferences show them).
	missing := fmt.Errorf("%w: no version %s/%x in cluster %q that you may read", errs.ErrNotFound, id.UID, id.Key, id.Cluster)
	v, err := s.reader.Version(ctx, id.Cluster, id.UID, id.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, "get", v.APIGroup, v.Resource, v.Namespace, v.Name); err != nil {
		if errors.Is(err, errs.ErrForbidden) {
			return nil, missing
		}
		return nil, err
	}
	if err := s.ReadFilter(ctx).redactInitiator(v); err != nil {
		return nil, err
	}
	return v, nil
}

// Version is one version, with its state.
func (s *Service) Version(ctx context.Context, id VersionID) (*Version, error) {
	v, err := s.VersionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	out := VersionAsRead(v)
	return &out, nil
}

// Diff compares a version with the state before it, or with against.
func (s *Service) Diff(ctx context.Context, id VersionID, against *VersionID, o DiffOptions) (*DiffResult, error) {
	to, err := s.VersionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	var from *store.VersionRecord
	if against != nil {
		a := *against
		a.Cluster = to.Cluster
		if from, err = s.VersionRecord(ctx, a); err != nil {
			return nil, err
		}
	} else {
		from, err = s.reader.StateBefore(ctx, to)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: the record holds no state before version %s/%x (prior unknown); pass against=<uid>/<versionKey>", errs.ErrNotFound, to.UID, to.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	return diffVersions(from, to, o)
}

// ChangeDetail is a version with what a get of one change shows besides
// it: the state before the change, and the diff between the two.
type ChangeDetail struct {
	// Version is the change's version, with its state.
	Version *store.VersionRecord
	// Prior holds the state before the change (history.Diff's "from"): the
	// delete itself for a delete whose answer held the last state; nil for a
	// create, or when the record holds no earlier state.
	Prior *store.VersionRecord
	// Diff is Diff of the change against Prior (DiffOptions' defaults);
	// nil when it cannot be computed, and DiffErr says why: the state
	// before is unknown, or one of the two is not a full state.
	Diff    *DiffResult
	DiffErr error
}

// ChangeDetail loads a version the caller may read, with the state before
// it and the diff. Only a failure to read the record fails it: a diff that
// cannot be computed is left out, with the reason.
func (s *Service) ChangeDetail(ctx context.Context, id VersionID) (*ChangeDetail, error) {
	v, err := s.VersionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &ChangeDetail{Version: v}
	// The state before is the same object's (its uid): reading it needs
	// nothing more than reading v.
	prior, err := s.reader.StateBefore(ctx, v)
	switch {
	case errors.Is(err, store.ErrNotFound):
		out.DiffErr = fmt.Errorf("%w: the record holds no state before version %s/%x (prior unknown)", errs.ErrNotFound, v.UID, v.Key)
		return out, nil
	case err != nil:
		return nil, err
	}
	out.Prior = prior
	out.Diff, out.DiffErr = diffVersions(prior, v, DiffOptions{})
	return out, nil
}

// diffVersions diffs two stored states. A nil from is the absence before a
// create; a delete's "to" state is the absence after it.
func diffVersions(from, to *store.VersionRecord, o DiffOptions) (*DiffResult, error) {
	res := &DiffResult{IncludeStatus: o.IncludeStatus, Ignored: DiffIgnored(o), Changes: []DiffChange{}}
	var a, b map[string]any
	var err error
	if from != nil {
		fv := VersionOf(from)
		fv.Object = nil
		res.From = &fv
		if !from.HasState() {
			return nil, fmt.Errorf("%w: version %s holds no full state to compare", errs.ErrUnprocessable, fv.ID)
		}
		if a, err = DecodeObject(from.Object); err != nil {
			return nil, err
		}
	}
	tv := VersionOf(to)
	tv.Object = nil
	res.To = &tv
	switch {
	case to.Deleted && from != nil && sameVersion(from, to):
		// The delete's own last state: the object is gone after it.
	case to.Deleted:
	case !to.HasState():
		return nil, fmt.Errorf("%w: version %s holds no full state (a subresource write such as /scale)", errs.ErrUnprocessable, tv.ID)
	default:
		if b, err = DecodeObject(to.Object); err != nil {
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

// Deletion is one deletion, named by the version of the delete. When the
// record holds the object's last state, the returned Deletion carries it
// (in Version.Object).
func (s *Service) Deletion(ctx context.Context, id VersionID) (*Deletion, error) {
	v, err := s.VersionRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	missing := fmt.Errorf("%w: no deletion %s/%x in cluster %q that you may read", errs.ErrNotFound, id.UID, id.Key, id.Cluster)
	if !v.Deleted {
		return nil, missing
	}
	// The deletions view adds who started a cascade and where the last
	// state is: find this delete among those of its object at its time.
	g, ns := v.APIGroup, v.Namespace
	rows, err := s.reader.Deletions(ctx, store.DeletionQuery{Cluster: id.Cluster, Group: &g, Resource: v.Resource, Namespace: &ns,
		Name: v.Name, Since: v.ChangedAt, Until: v.ChangedAt.Add(time.Microsecond), Limit: 100})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		d := &rows[i]
		if d.UID != v.UID || !bytes.Equal(d.Key, v.Key) {
			continue
		}
		if err := s.ReadFilter(ctx).redactInitiator(&d.VersionRecord); err != nil {
			return nil, err
		}
		out := deletionOf(d)
		if d.StateKey != nil {
			state, err := s.reader.Version(ctx, d.Cluster, d.UID, d.StateKey)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			if state != nil && len(state.Object) > 0 {
				out.Object = json.RawMessage(state.Object)
			}
		}
		return &out, nil
	}
	return nil, missing
}

func deletionOf(d *store.Deletion) Deletion {
	out := Deletion{Version: VersionAsRead(&d.VersionRecord)}
	if d.InitiatedBy != "" {
		out.InitiatedAt = d.InitiatedAt
	}
	out.Object = nil
	if d.StateKey != nil {
		l := paths.LinksFor(d.Cluster, d.UID, d.StateKey)
		out.RestoreFrom = &l
		out.StateKey = hex.EncodeToString(d.StateKey)
	}
	out.StateUnknown = d.StateKey == nil
	return out
}

// ObjectFilter narrows a list of deletions or failed mutations to objects
// and a user. A nil Group or Namespace matches any; a given empty one is
// the core group, or the cluster scope.
type ObjectFilter struct {
	Cluster              string
	Group, Namespace     *string
	Resource, Name, User string
	// NamespacedOnly, with no Namespace, leaves out cluster-scoped objects
	// (a namespaced list across all namespaces).
	NamespacedOnly bool
	// UID narrows to one object (deletions only).
	UID string
}

// Deletions lists successful deletions, newest first, that the caller may
// read, with the user action that started a cascade.
func (s *Service) Deletions(ctx context.Context, f ObjectFilter, p PageOptions) (Page[Deletion], error) {
	if err := s.refuseUnreadable(ctx, f.Group, f.Resource, f.Namespace, f.Name); err != nil {
		return Page[Deletion]{}, err
	}
	limit, after, err := s.page(p)
	if err != nil {
		return Page[Deletion]{}, err
	}
	q := store.DeletionQuery{Cluster: f.Cluster, Group: f.Group, Namespace: f.Namespace, NamespacedOnly: f.NamespacedOnly,
		Resource: f.Resource, Name: f.Name, UID: f.UID, User: f.User, Since: p.Since, Until: p.Until}
	return pageScan[store.Deletion, Deletion]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.Deletion, error) {
			q.After, q.Limit = after, n
			return s.reader.Deletions(ctx, q)
		},
		gr:     func(d *store.Deletion) (string, string, string) { return AuthzTarget(&d.VersionRecord) },
		conv:   deletionOf,
		redact: func(d *store.Deletion, f *ReadFilter) error { return f.redactInitiator(&d.VersionRecord) },
		cur:    func(d *store.Deletion) store.Cursor { return versionCursor(&d.VersionRecord) },
	}.run(after, s.ReadFilter(ctx))
}

// MaxPageBodyBytes bounds the request bodies one page of failed mutations
// carries: a page ends early, with a next cursor, where the next body would
// take it over (its first item is always given whole).
const MaxPageBodyBytes = 8 << 20

// FailedMutations lists refused or failed writes, newest first, that the
// caller may read, without their request bodies (FailedMutation gives one
// with its body).
func (s *Service) FailedMutations(ctx context.Context, f ObjectFilter, p PageOptions) (Page[Event], error) {
	if err := s.refuseUnreadable(ctx, f.Group, f.Resource, f.Namespace, f.Name); err != nil {
		return Page[Event]{}, err
	}
	return s.listEvents(ctx, s.reader.FailedMutations, store.EventQuery{Cluster: f.Cluster, Group: f.Group, Namespace: f.Namespace, NamespacedOnly: f.NamespacedOnly,
		Resource: f.Resource, Name: f.Name, User: f.User}, p)
}

// FailedMutationsWithBodies is FailedMutations with each item's request
// body, the page cut short (with a next cursor) where the bodies would pass
// MaxPageBodyBytes: a page of bodies is bounded in bytes, not only in items.
func (s *Service) FailedMutationsWithBodies(ctx context.Context, f ObjectFilter, p PageOptions) (Page[Event], error) {
	page, err := s.FailedMutations(ctx, f, p)
	if err != nil || len(page.Items) == 0 {
		return page, err
	}
	keys := make([]store.EventKey, len(page.Items))
	for i, e := range page.Items {
		keys[i] = store.EventKey{At: e.At, Key: e.Key}
	}
	bodies, err := s.reader.RequestObjects(ctx, f.Cluster, keys, MaxPageBodyBytes)
	if err != nil {
		return page, err
	}
	for i, b := range bodies {
		if len(b) > 0 {
			page.Items[i].RequestObject = json.RawMessage(b)
		}
	}
	if len(bodies) < len(page.Items) {
		// Cut at a readable item: the page's last, as the paging rule wants.
		page.Items = page.Items[:len(bodies)]
		last := page.Items[len(page.Items)-1]
		page.Next = s.encodeCursor(store.Cursor{At: last.At, Key: last.Key})
	}
	return page, nil
}

// EventID names one kept event: the primary key of the events table.
type EventID struct {
	Cluster string
	// At is the event's stageTimestamp (microseconds).
	At  time.Time
	Key []byte
}

// FailedMutation is one refused or failed write, with its request body.
// It is authorized as the lists authorize it: the caller must be allowed to
// get the object's resource in its namespace. An event the caller may not
// read is answered as one that does not exist, as a successful one is.
func (s *Service) FailedMutation(ctx context.Context, id EventID) (*Event, error) {
	// Like a version (VersionRecord), never a refusal: it would tell
	// whoever guesses an event's name that it exists.
	missing := fmt.Errorf("%w: no failed mutation %d.%x in cluster %q that you may read", errs.ErrNotFound, id.At.UnixMicro(), id.Key, id.Cluster)
	e, err := s.reader.FailedMutation(ctx, id.Cluster, id.At, id.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	ok, err := s.ReadFilter(ctx).Allowed(eventAuthzTarget(e))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, missing
	}
	out := eventOf(e)
	return &out, nil
}

// eventAuthzTarget is what reading an event needs "get" on: its object's
// resource in the namespace the apiserver authorizes the object in.
func eventAuthzTarget(e *store.EventRecord) (string, string, string) {
	return e.APIGroup, e.Resource, authzNamespace(e.APIGroup, e.Resource, e.Namespace, e.Name)
}

// Activity lists what one user did, newest first, where the caller may
// read it.
func (s *Service) Activity(ctx context.Context, cluster, user string, p PageOptions) (Page[Event], error) {
	if user == "" {
		return Page[Event]{}, fmt.Errorf("%w: user must not be empty", errs.ErrInvalid)
	}
	return s.listEvents(ctx, s.reader.Activity, store.EventQuery{Cluster: cluster, User: user}, p)
}

func (s *Service) listEvents(ctx context.Context, read func(context.Context, store.EventQuery) ([]store.EventRecord, error), q store.EventQuery, p PageOptions) (Page[Event], error) {
	limit, after, err := s.page(p)
	if err != nil {
		return Page[Event]{}, err
	}
	q.Since, q.Until = p.Since, p.Until
	return pageScan[store.EventRecord, Event]{limit: limit,
		fetch: func(after *store.Cursor, n int) ([]store.EventRecord, error) {
			q.After, q.Limit = after, n
			return read(ctx, q)
		},
		gr:   eventAuthzTarget,
		conv: eventOf,
		cur:  func(e *store.EventRecord) store.Cursor { return store.Cursor{At: e.At, Key: e.Key} },
	}.run(after, s.ReadFilter(ctx))
}
