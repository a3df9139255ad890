package reads

// Reads of object versions: an object's history, one version and the
// state before it, the changes a query selects.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// notSuperseded holds for a version of alias unless it is a change recorded
// under an unknown- uid (a write logged at Metadata: model.UnknownUIDPrefix)
// that a confirmed admission observation has named since: the record is
// append-only, so confirmation stored the same event's change again under
// the object's uid, beside it, and the listings show that one alone (as the
// object_history view does). A version read by its key is still read, and
// so is one named by a short name (VersionsByKeyRange): a name handed out
// before the confirmation still names the row it named.
func notSuperseded(alias string) string {
	return strings.ReplaceAll(`(a.uid NOT LIKE 'unknown-%' OR NOT EXISTS (SELECT 1 FROM object_versions r
    WHERE r.cluster = a.cluster AND r.event_key = a.event_key AND r.changed_at = a.changed_at
      AND r.origin = 'change' AND r.uid NOT LIKE 'unknown-%'))`, "a.", alias+".")
}

// Cursor is the position after the last row of a page, in the page's order.
// Version lists use (At, UID, Key); event lists use (At, Key) with the event
// key.
type Cursor struct {
	At  time.Time
	UID string
	Key []byte
}

// VersionRecord is a stored version with the event that made it. Object is
// set only by the reads that say so.
type VersionRecord struct {
	Cluster         string    `db:"cluster"`
	UID             string    `db:"uid"`
	Key             []byte    `db:"version_key"`
	ResourceVersion *int64    `db:"resource_version"`
	Origin          string    `db:"origin"`
	Verb            string    `db:"verb"`
	ChangedAt       time.Time `db:"changed_at"`
	APIGroup        string    `db:"api_group"`
	APIVersion      string    `db:"api_version"`
	Kind            string    `db:"kind"`
	Resource        string    `db:"resource"`
	Subresource     string    `db:"subresource"`
	Namespace       string    `db:"namespace"`
	Name            string    `db:"name"`
	Created         bool      `db:"created"`
	Deleted         bool      `db:"deleted"`
	Complete        bool      `db:"complete"`
	SecretDigested  bool      `db:"secret_digested"`
	HasObject       bool      `db:"has_object"`
	Object          []byte    `db:"object"`
	// Stale: a subresource write changed the object after this state
	// without recording the full new state (AsOf only).
	Stale bool `db:"stale"`

	// From the audit event; empty for a baseline observation.
	AuditID            string   `db:"audit_id"`
	Username           string   `db:"username"`
	UserGroups         []string `db:"user_groups"`
	ImpersonatedUser   string   `db:"impersonated_user"`
	ImpersonatedGroups []string `db:"impersonated_groups"`
	SourceIPs          []string `db:"source_ips"`
	UserAgent          string   `db:"user_agent"`
	ResponseCode       int32    `db:"response_code"`

	// For a delete by a cascade actor (the namespace controller, the
	// garbage collector): the user whose namespace or owner deletion
	// started the cascade, and namespace-deletion or owner-deletion, as
	// the deletions view says. Attached by the lookups, not a column.
	InitiatedBy  string `db:"-"`
	InitiatedVia string `db:"-"`
	// Initiator is the object whose deletion started the cascade: who
	// started it is for the readers of that object.
	Initiator *ObjectRef `db:"-"`
}

// ObjectRef names an object of the record.
type ObjectRef struct {
	Group, Resource, Namespace, Name string
}

// HasState reports whether the version holds a full state of the object:
// a complete version, or a delete whose answer held the last state.
func (v *VersionRecord) HasState() bool {
	return v.HasObject && (v.Complete || v.Deleted)
}

// stateColumn is a version's state as the apiserver sent it: object_exact
// when object had to differ from it (see migration 00013).
const stateColumn = "coalesce(v.object_exact, v.object)"

// versionSelect lists the columns of a VersionRecord; %s is the object
// column (stateColumn or "NULL::json") and the stale expression.
const versionSelect = `
SELECT v.cluster, v.uid, v.version_key, v.resource_version, v.origin, v.verb, v.changed_at,
       v.api_group, v.api_version, v.kind, v.resource, v.subresource, v.namespace, v.name,
       v.created, v.deleted, v.complete, v.secret_digested, (v.object IS NOT NULL) AS has_object,
       %s AS object, %s AS stale,
       coalesce(e.audit_id, '') AS audit_id, coalesce(e.username, '') AS username, e.user_groups,
       coalesce(e.impersonated_user, '') AS impersonated_user, e.impersonated_groups, e.source_ips,
       coalesce(e.user_agent, '') AS user_agent, coalesce(e.response_code, 0) AS response_code`

var (
	versionSelectNoObject   = fmt.Sprintf(versionSelect, "NULL::json", "false")
	versionSelectWithObject = fmt.Sprintf(versionSelect, stateColumn, "false")
)

const versionFromEvents = `
FROM object_versions v
LEFT JOIN events e ON e.cluster = v.cluster AND e.event_key = v.event_key AND e.stage_at = v.changed_at`

// versionFromEventsByKey finds each version's event by its primary key, as
// a lateral lookup (LIMIT 1, at most one row by the key, keeps PostgreSQL
// from flattening it into a join): the plan cannot turn it into a scan of
// the user's events repeated for every version. A changes query filtered by user and by the
// object side (namespaces, names, a uid) uses it: planned from statistics
// that a burst has outgrown (a day's partition before autovacuum analyzes
// it), the join took both sides for one row and rescanned the user's events
// for each version, quadratic in the burst (13 s for 5,000 events).
// userEventsThenVersions drives a changes query filtered by user alone (or
// with resources) from the user's events, each version found by its event's
// key (a fenced lateral subquery: OFFSET 0 keeps it from being flattened
// into a join the planner may get wrong, as above).
const userEventsThenVersions = `
FROM events e
JOIN LATERAL (SELECT * FROM object_versions v WHERE v.cluster = e.cluster AND v.changed_at = e.stage_at
              AND v.event_key = e.event_key OFFSET 0) v ON true`

const versionFromEventsByKey = `
FROM object_versions v
LEFT JOIN LATERAL (SELECT * FROM events e WHERE e.cluster = v.cluster AND e.stage_at = v.changed_at
                   AND e.event_key = v.event_key LIMIT 1) e ON true`

// ChangeQuery selects recorded versions (changes and baselines). Unset
// fields do not filter. Group and Namespace are pointers because "" is a
// value: the core group, cluster-scoped objects.
type ChangeQuery struct {
	Cluster   string
	Group     *string
	Resource  string
	Namespace *string
	// NamespacedOnly, with no Namespace, leaves out cluster-scoped objects.
	NamespacedOnly bool
	Name           string
	UID            string
	User           string // the authenticated caller of the change
	Verb           string
	Since          time.Time // changed_at >= Since
	Until          time.Time // changed_at < Until
	After          *Cursor
	Ascending      bool // oldest first (default newest first)
	Limit          int
	// Plans' filters: any of these namespaces, resources, names (nil: no
	// filter); ChangesOnly keeps successful changes (no baselines).
	Namespaces  []string
	Resources   []GroupResource
	Names       []string
	ChangesOnly bool
}

// Changes returns the versions that match q, without their objects, in
// changed_at order (then uid, version key), at most q.Limit of them.
func (r *Reader) Changes(ctx context.Context, q ChangeQuery) ([]VersionRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: changes: cluster and limit are required")
	}
	sql, args := changesSQL(q)
	if q.User == "" {
		return r.versions(ctx, "changes", q.Cluster, sql, args...)
	}
	// Joined to the user's events already; when the user is a cascade
	// actor, its deletes name who started each cascade, as elsewhere.
	rows, err := queryAll[versionWithEvent](ctx, r.db, "changes", sql, args...)
	if err != nil {
		return nil, err
	}
	deletes := false
	for i := range rows {
		deletes = deletes || rows[i].Verb == "delete" || rows[i].Verb == "deletecollection"
	}
	cascade := false
	if deletes {
		actor, err := queryAll[struct {
			Cascade bool `db:"cascade"`
		}](ctx, r.db, "changes", `SELECT EXISTS (SELECT 1 FROM cascade_actors WHERE username = $1) AS cascade`, q.User)
		if err != nil {
			return nil, err
		}
		cascade = len(actor) == 1 && actor[0].Cascade
	}
	if cascade {
		picked := map[int]bool{}
		for i := range rows {
			picked[i] = true
		}
		if _, err := r.attachCascades(ctx, q.Cluster, picked, func(i int) (*VersionRecord, []byte) {
			return &rows[i].VersionRecord, rows[i].EventKey
		}); err != nil {
			return nil, err
		}
	}
	out := make([]VersionRecord, len(rows))
	for i := range rows {
		out[i] = rows[i].VersionRecord
	}
	return out, nil
}

func changesSQL(q ChangeQuery) (string, []any) {
	var b sqlBuilder
	b.versionsCluster = b.arg(q.Cluster)
	b.where("v.cluster = " + b.versionsCluster)
	b.object("v", q.Group, q.Resource, q.Namespace, q.Name)
	if q.NamespacedOnly && q.Namespace == nil {
		b.where("v.namespace <> ''")
	}
	if q.UID != "" {
		b.where("v.uid = " + b.arg(q.UID))
	}
	if q.Verb != "" {
		b.where("v.verb = " + b.arg(q.Verb))
	}
	if q.Namespaces != nil {
		b.where("v.namespace = ANY(" + b.arg(q.Namespaces) + "::text[])")
	}
	if q.Resources != nil {
		groups, resources := make([]string, len(q.Resources)), make([]string, len(q.Resources))
		for i, gr := range q.Resources {
			groups[i], resources[i] = gr.Group, gr.Resource
		}
		b.where("(v.api_group, v.resource) IN (SELECT * FROM unnest(" + b.arg(groups) + "::text[], " + b.arg(resources) + "::text[]))")
	}
	if q.Names != nil {
		b.where("v.name = ANY(" + b.arg(q.Names) + "::text[])")
	}
	switch {
	case q.ChangesOnly && q.User == "":
		// Only a successful write makes a version (record.Convert).
		b.where("v.origin = 'change'")
	case q.ChangesOnly:
		b.where("v.origin = 'change' AND e.response_code < 300")
	}
	if q.User != "" {
		// An inner join: baselines have no user. The same time bounds on
		// e.stage_at let PostgreSQL prune the event partitions.
		b.where("e.username = " + b.arg(q.User))
	}
	timeBounds(&b, "v.changed_at", q.Since, q.Until)
	if q.User != "" {
		timeBounds(&b, "e.stage_at", q.Since, q.Until)
	}
	// A baseline LIST racing the batch of a change can observe the state the
	// change recorded: the same object at the same resourceVersion, twice.
	// The change says who made it; the baseline adds nothing.
	b.where(`(v.origin = 'change' OR NOT EXISTS (SELECT 1 FROM object_versions c
    WHERE c.cluster = v.cluster AND c.uid = v.uid AND c.resource_version = v.resource_version AND c.origin = 'change'))`)
	b.where(notSuperseded("v"))
	// A no-op write stored before the change it repeats (their batches came
	// from different apiservers) is not a change: the earliest report of a
	// state is (as in object_history).
	b.where(`(v.origin <> 'change' OR v.deleted OR v.resource_version IS NULL OR NOT EXISTS (SELECT 1 FROM object_versions d
    WHERE d.cluster = v.cluster AND d.uid = v.uid AND d.resource_version = v.resource_version AND d.origin = 'change'
      AND NOT d.deleted AND (d.changed_at, d.version_key) < (v.changed_at, v.version_key)))`)
	// The time a page is ordered by: the user's events drive the query
	// below, so their index order (e.stage_at, equal to v.changed_at) is
	// what lets PostgreSQL stop at the page's end instead of sorting the
	// user's whole window (5,000 events a day took 190 ms).
	at := "v.changed_at"
	if q.User != "" && !(q.Namespaces != nil || q.Namespace != nil || q.Names != nil || q.Name != "" || q.UID != "") {
		at = "e.stage_at"
	}
	keyset(&b, q.After, q.Ascending, at, "v.uid", "v.version_key")
	sel, from := versionSelectNoObject+", v.event_key", versionFromEvents
	switch {
	case q.User == "":
		// Read from object_versions alone; Changes attaches the authors.
		sel, from = versionOnlySelectNoObject, "\nFROM object_versions v"
	case q.Namespaces != nil || q.Namespace != nil || q.Names != nil || q.Name != "" || q.UID != "":
		from = versionFromEventsByKey // the object side is the narrower
	default:
		from = userEventsThenVersions
		b.where("e.cluster = " + b.arg(q.Cluster))
	}
	return sel + from + b.whereSQL() +
		orderBy(q.Ascending, at, "v.uid", "v.version_key") + " LIMIT " + strconv.Itoa(q.Limit), b.args
}

var versionByKeySQL = versionOnlySelectWithObject + `
FROM object_versions v
WHERE v.cluster = $1 AND v.uid = $2 AND v.version_key = $3`

// Version returns one version with its object, or ErrNotFound.
func (r *Reader) Version(ctx context.Context, cluster, uid string, key []byte) (*VersionRecord, error) {
	return r.oneVersion(ctx, "version", cluster, versionByKeySQL, cluster, uid, key)
}

// stateBeforeSQL is the prior-state rule of the object_history view: the
// newest complete, not deleted version of the same object older than the
// change ($4 its resourceVersion, $5 whether it is a delete: then a version
// at the same resourceVersion counts as older).
var stateBeforeSQL = versionOnlySelectWithObject + `
FROM object_versions v
WHERE v.cluster = $1 AND v.uid = $2 AND v.version_key <> $3
  AND v.complete AND NOT v.deleted
  AND ($4::bigint IS NULL OR v.resource_version < $4 OR ($5 AND v.resource_version = $4))
ORDER BY v.resource_version DESC NULLS LAST, v.changed_at DESC
LIMIT 1`

// StateBefore returns the version that holds the object's state before the
// change v: v itself for a delete whose answer held the last state, the
// newest older full state otherwise. It returns ErrNotFound when the record
// holds no earlier state, and (nil, nil) for a create: there was none.
func (r *Reader) StateBefore(ctx context.Context, v *VersionRecord) (*VersionRecord, error) {
	switch {
	case v.Created:
		return nil, nil
	case v.Deleted && v.HasObject:
		return v, nil
	}
	return r.oneVersion(ctx, "state before", v.Cluster, stateBeforeSQL, v.Cluster, v.UID, v.Key, v.ResourceVersion, v.Deleted)
}

// newestByNameSQL orders an object's versions by resourceVersion, not by
// the apiservers' clocks: the object is the name's latest (by time, which
// the name's index serves: incarnations are apart by a delete and a
// create, far more than clocks are), and its newest version the one of
// its highest resourceVersion (object_versions_uid_rv), a delete without
// one (answered by a Status) last of all.
var newestByNameSQL = versionOnlySelectWithObject + `
FROM object_versions v
WHERE v.cluster = $1
  AND v.uid = (SELECT o.uid FROM object_versions o
               WHERE o.cluster = $1 AND o.api_group = $2 AND o.resource = $3 AND o.namespace = $4 AND o.name = $5
                 AND ` + notSuperseded("o") + `
               ORDER BY o.changed_at DESC
               LIMIT 1)
ORDER BY v.resource_version DESC NULLS FIRST, v.deleted DESC, v.changed_at DESC
LIMIT 1`

// Newest returns the newest version recorded for an object by name (any
// incarnation), with its object, or ErrNotFound.
func (r *Reader) Newest(ctx context.Context, cluster, group, resource, namespace, name string) (*VersionRecord, error) {
	return r.oneVersion(ctx, "newest version", cluster, newestByNameSQL, cluster, group, resource, namespace, name)
}

func (r *Reader) oneVersion(ctx context.Context, what, cluster, sql string, args ...any) (*VersionRecord, error) {
	vs, err := r.versions(ctx, what, cluster, sql, args...)
	if err != nil {
		return nil, err
	}
	switch len(vs) {
	case 0:
		return nil, fmt.Errorf("%s: %w", what, ErrNotFound)
	case 1:
		return &vs[0], nil
	}
	return nil, fmt.Errorf("store: %s: %d rows, expected one", what, len(vs))
}

// asOfSQL is objects_as_of with the identity of each version: the newest
// recorded version of each object of a namespace that existed at $3.
var asOfSQL = fmt.Sprintf(versionSelect, stateColumn, `EXISTS (SELECT 1 FROM object_versions x
           WHERE x.cluster = v.cluster AND x.uid = v.uid AND NOT x.complete AND NOT x.deleted
             AND x.resource_version > v.resource_version AND x.changed_at <= $3)`) + `
FROM (
    SELECT DISTINCT ON (o.uid) o.*
    FROM object_versions o
    WHERE o.cluster = $1 AND o.namespace = $2 AND o.changed_at <= $3 AND (o.complete OR o.deleted)
    ORDER BY o.uid, o.resource_version DESC NULLS FIRST, o.deleted DESC, o.changed_at DESC
) v
LEFT JOIN events e ON e.cluster = v.cluster AND e.event_key = v.event_key AND e.stage_at = v.changed_at
WHERE NOT v.deleted AND NOT ` + fmt.Sprintf(succeeded, "$3") + `
ORDER BY v.api_group, v.resource, v.name`

// succeeded (%s: the as-of time) holds when another object of v's name
// has a version after v's newest one by then: one name is one object at a
// time, and resourceVersions are ordered across objects, so v's object
// was gone by then although its end was not recorded (a delete a rule
// left out, a lost batch).
const succeeded = `EXISTS (SELECT 1 FROM object_versions n
           WHERE n.cluster = v.cluster AND n.namespace = v.namespace AND n.api_group = v.api_group
             AND n.resource = v.resource AND n.name = v.name AND n.uid <> v.uid
             AND n.changed_at <= %s AND n.resource_version > v.resource_version)`

// KeyRangeQuery selects the candidates of a short name: the versions of a
// cluster whose key lies in [Lo, Hi] (bytewise, both included), of the
// scope the name is resolved in.
type KeyRangeQuery struct {
	Cluster string
	Lo, Hi  []byte
	// Readable, when set, keeps the versions of objects whose name begins
	// a short name as Readable (shortname.Readable, computed by
	// readableNameSQL).
	Readable string
	// Namespace, when set, keeps the versions of that namespace ("" the
	// cluster scope).
	Namespace *string
	// Deleted keeps deletes only.
	Deleted bool
	Limit   int
}

// readableNameSQL is shortname.Readable of v.name in SQL: lower case (Go's
// strings.ToLower turns only A-Z, U+0130 and U+212A KELVIN SIGN into a-z),
// every run of other characters than a-z and 0-9 one dash, none at either
// end, cut to 20 characters and no dash at the end, "x" when nothing is
// left. The lower-casing is translate's, not lower()'s, whose answer for
// other letters depends on the database's locale. TestReadableNameSQL
// checks it against shortname.Readable on hostile names.
const readableNameSQL = `COALESCE(NULLIF(rtrim(left(btrim(regexp_replace(
    translate(v.name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ` + "\u0130\u212a" + `', 'abcdefghijklmnopqrstuvwxyzik'),
    '[^0-9a-z]+', '-', 'g'), '-'), 20), '-'), ''), 'x')`

// readableEventNameSQL is readableNameSQL of an event's e.name.
var readableEventNameSQL = strings.Replace(readableNameSQL, "v.name", "e.name", 1)

// versionsByKeyRangeSQL reads the versions of a cluster whose key lies in
// [$2, $3] (object_versions_key), of the namespace $4 (any when NULL),
// deletes only if $5, of objects whose name reads as $6 in a short name
// (any when empty), without their states.
var versionsByKeyRangeSQL = versionOnlySelectNoObject + `
FROM object_versions v
WHERE v.cluster = $1 AND v.version_key BETWEEN $2 AND $3
  AND ($4::text IS NULL OR v.namespace = $4::text)
  AND (NOT $5::boolean OR v.deleted)
  AND ($6::text = '' OR ` + readableNameSQL + ` = $6::text)
ORDER BY v.version_key, v.uid
LIMIT $7`

// VersionsByKeyRange returns the versions q selects, without their
// states, in key order, at most q.Limit: the candidates of a short name,
// whose suffix is the first digits of a version key.
func (r *Reader) VersionsByKeyRange(ctx context.Context, q KeyRangeQuery) ([]VersionRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: versions by key: cluster and limit are required")
	}
	return r.versions(ctx, "versions by key", q.Cluster, versionsByKeyRangeSQL,
		q.Cluster, q.Lo, q.Hi, q.Namespace, q.Deleted, q.Readable, q.Limit)
}
