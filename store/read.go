package store

// Reads of the restore API. Every query is a constant, or is assembled from
// constant fragments chosen by which filters are set (so each shape can use
// its index); values always travel as parameters, never in the SQL text.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotFound is returned by reads that find no row.
var ErrNotFound = errors.New("store: not found")

// ErrExists is returned for a restore whose object name is already taken.
var ErrExists = errors.New("store: already exists")

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

// versionSelect lists the columns of a VersionRecord; %s is the object
// column ("v.object" or "NULL::json") and the stale expression.
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
	versionSelectWithObject = fmt.Sprintf(versionSelect, "v.object", "false")
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
	Name      string
	UID       string
	User      string // the authenticated caller of the change
	Verb      string
	Since     time.Time // changed_at >= Since
	Until     time.Time // changed_at < Until
	After     *Cursor
	Ascending bool // oldest first (default newest first)
	Limit     int
	// Plans' filters: any of these namespaces, resources, names (nil: no
	// filter); ChangesOnly keeps successful changes (no baselines).
	Namespaces  []string
	Resources   []GroupResource
	Names       []string
	ChangesOnly bool
}

// Changes returns the versions that match q, without their objects, in
// changed_at order (then uid, version key), at most q.Limit of them.
func (s *Store) Changes(ctx context.Context, q ChangeQuery) ([]VersionRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: changes: cluster and limit are required")
	}
	sql, args := changesSQL(q)
	if q.User == "" {
		return s.versions(ctx, "changes", q.Cluster, sql, args...)
	}
	// Joined to the user's events already; when the user is a cascade
	// actor, its deletes name who started each cascade, as elsewhere.
	rows, err := queryAll[versionWithEvent](ctx, s.pool, "changes", sql, args...)
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
		}](ctx, s.pool, "changes", `SELECT EXISTS (SELECT 1 FROM cascade_actors WHERE username = $1) AS cascade`, q.User)
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
		if _, err := s.attachCascades(ctx, q.Cluster, picked, func(i int) (*VersionRecord, []byte) {
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
func (s *Store) Version(ctx context.Context, cluster, uid string, key []byte) (*VersionRecord, error) {
	return s.oneVersion(ctx, "version", cluster, versionByKeySQL, cluster, uid, key)
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
func (s *Store) StateBefore(ctx context.Context, v *VersionRecord) (*VersionRecord, error) {
	switch {
	case v.Created:
		return nil, nil
	case v.Deleted && v.HasObject:
		return v, nil
	}
	return s.oneVersion(ctx, "state before", v.Cluster, stateBeforeSQL, v.Cluster, v.UID, v.Key, v.ResourceVersion, v.Deleted)
}

var newestByNameSQL = versionOnlySelectWithObject + `
FROM object_versions v
WHERE v.cluster = $1 AND v.api_group = $2 AND v.resource = $3 AND v.namespace = $4 AND v.name = $5
ORDER BY v.changed_at DESC, v.deleted DESC, v.resource_version DESC NULLS FIRST
LIMIT 1`

// Newest returns the newest version recorded for an object by name (any
// incarnation), with its object, or ErrNotFound.
func (s *Store) Newest(ctx context.Context, cluster, group, resource, namespace, name string) (*VersionRecord, error) {
	return s.oneVersion(ctx, "newest version", cluster, newestByNameSQL, cluster, group, resource, namespace, name)
}

func (s *Store) oneVersion(ctx context.Context, what, cluster, sql string, args ...any) (*VersionRecord, error) {
	vs, err := s.versions(ctx, what, cluster, sql, args...)
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
var asOfSQL = fmt.Sprintf(versionSelect, "v.object", `EXISTS (SELECT 1 FROM object_versions x
           WHERE x.cluster = v.cluster AND x.uid = v.uid AND NOT x.complete AND NOT x.deleted
             AND x.resource_version > v.resource_version AND x.changed_at <= $3)`) + `
FROM (
    SELECT DISTINCT ON (o.uid) o.*
    FROM object_versions o
    WHERE o.cluster = $1 AND o.namespace = $2 AND o.changed_at <= $3 AND (o.complete OR o.deleted)
    ORDER BY o.uid, o.resource_version DESC NULLS FIRST, o.deleted DESC, o.changed_at DESC
) v
LEFT JOIN events e ON e.cluster = v.cluster AND e.event_key = v.event_key AND e.stage_at = v.changed_at
WHERE NOT v.deleted
ORDER BY v.api_group, v.resource, v.name`

// AsOf returns the objects of a namespace ("" for cluster-scoped objects)
// as they were at a time: the newest recorded full state of each object
// that existed then, with its object.
func (s *Store) AsOf(ctx context.Context, cluster, namespace string, at time.Time) ([]VersionRecord, error) {
	rows, err := s.pool.Query(ctx, asOfSQL, cluster, namespace, at)
	if err != nil {
		return nil, fmt.Errorf("store: objects of %q as of %s: %w", namespace, at.Format(time.RFC3339), err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[VersionRecord])
	if err != nil {
		return nil, fmt.Errorf("store: objects of %q as of %s: %w", namespace, at.Format(time.RFC3339), err)
	}
	return out, nil
}

// GroupResource names a resource of an API group ("" is the core group).
type GroupResource struct {
	Group, Resource string
}

// AsOfQuery selects the objects of one namespace as they were at a time.
// Nil Resources and Names do not filter.
type AsOfQuery struct {
	Cluster   string
	Namespace string // "" for cluster-scoped objects
	At        time.Time
	Resources []GroupResource
	Names     []string
	Limit     int
}

// asOfMetaSelect is versionSelect over the metadata of the inner query:
// has_object is computed there, so the bodies never leave the index scan.
var asOfMetaSelect = strings.Replace(versionSelect, "(v.object IS NOT NULL) AS has_object", "v.has_object", 1)

func asOfMetaSQL(q AsOfQuery) (string, []any) {
	var b sqlBuilder
	b.where("o.cluster = " + b.arg(q.Cluster))
	b.where("o.namespace = " + b.arg(q.Namespace))
	at := b.arg(q.At)
	b.where("o.changed_at <= " + at)
	b.where("(o.complete OR o.deleted)")
	if q.Resources != nil {
		groups, resources := make([]string, len(q.Resources)), make([]string, len(q.Resources))
		for i, gr := range q.Resources {
			groups[i], resources[i] = gr.Group, gr.Resource
		}
		b.where("(o.api_group, o.resource) IN (SELECT * FROM unnest(" + b.arg(groups) + "::text[], " + b.arg(resources) + "::text[]))")
	}
	if q.Names != nil {
		b.where("o.name = ANY(" + b.arg(q.Names) + "::text[])")
	}
	stale := `EXISTS (SELECT 1 FROM object_versions x
           WHERE x.cluster = v.cluster AND x.uid = v.uid AND NOT x.complete AND NOT x.deleted
             AND x.resource_version > v.resource_version AND x.changed_at <= ` + at + `)`
	return fmt.Sprintf(asOfMetaSelect, "NULL::json", stale) + `
FROM (
    SELECT DISTINCT ON (o.uid) o.cluster, o.uid, o.version_key, o.resource_version, o.origin, o.verb, o.changed_at,
           o.event_key, o.api_group, o.api_version, o.kind, o.resource, o.subresource, o.namespace, o.name,
           o.created, o.deleted, o.complete, o.secret_digested, (o.object IS NOT NULL) AS has_object
    FROM object_versions o` + b.whereSQL() + `
    ORDER BY o.uid, o.resource_version DESC NULLS FIRST, o.deleted DESC, o.changed_at DESC
) v
LEFT JOIN events e ON e.cluster = v.cluster AND e.event_key = v.event_key AND e.stage_at = v.changed_at
WHERE NOT v.deleted
ORDER BY v.api_group, v.resource, v.name
LIMIT ` + strconv.Itoa(q.Limit), b.args
}

// ObjectsAsOf is AsOf without the objects' bodies (load those one by one
// with Version), filtered by resources and names in the database and
// bounded by q.Limit: what a plan reads before it knows what it keeps.
func (s *Store) ObjectsAsOf(ctx context.Context, q AsOfQuery) ([]VersionRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: objects as of: cluster and limit are required")
	}
	sql, args := asOfMetaSQL(q)
	return queryAll[VersionRecord](ctx, s.pool, "objects as of", sql, args...)
}

const resourcesInSQL = `
SELECT DISTINCT o.api_group AS group, o.resource AS resource
FROM object_versions o
WHERE o.cluster = $1 AND o.namespace = $2 AND o.changed_at <= $3
ORDER BY 1, 2
LIMIT $4`

// ResourcesIn returns the resources of which the record holds versions in
// a namespace up to a time, at most limit of them.
func (s *Store) ResourcesIn(ctx context.Context, cluster, namespace string, at time.Time, limit int) ([]GroupResource, error) {
	rows, err := s.pool.Query(ctx, resourcesInSQL, cluster, namespace, at, limit)
	if err != nil {
		return nil, fmt.Errorf("store: resources of %q: %w", namespace, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[GroupResource])
	if err != nil {
		return nil, fmt.Errorf("store: resources of %q: %w", namespace, err)
	}
	return out, nil
}

// Deletion is a row of the deletions view with its version's identity.
type Deletion struct {
	VersionRecord
	// StateKey is the version holding the last state of the object (the
	// delete itself when its answer held the object); nil when unknown.
	StateKey []byte `db:"state_key"`
	// InitiatedAt is when the action that started its cascade happened.
	InitiatedAt *time.Time `db:"initiated_at"`
}

// DeletionQuery selects deletions; unset fields do not filter.
type DeletionQuery struct {
	Cluster   string
	Group     *string
	Resource  string
	Namespace *string
	Name      string
	UID       string // the deleted object's
	User      string // who deleted (the authenticated caller)
	Since     time.Time
	Until     time.Time
	After     *Cursor
	Limit     int
}

// deletionsSelect is a page of the deletions view read from
// object_versions alone (see actors.go): the same rows in the same order,
// with the view's prior-state rule (object_history) for state_key and
// stale. Deletions then attaches who deleted (the events) and, for the
// deletes of a cascade actor, who started the cascade (the view itself, for
// those rows only).
const deletionsSelect = `
SELECT v.cluster, v.uid, v.version_key, v.resource_version, v.origin, v.verb, v.changed_at,
       v.api_group, v.api_version, v.kind, v.resource, v.subresource, v.namespace, v.name,
       v.created, v.deleted, v.complete, v.secret_digested, (v.object IS NOT NULL) AS has_object,
       NULL::json AS object,
       EXISTS (SELECT 1 FROM object_versions s
               WHERE s.cluster = v.cluster AND s.uid = v.uid AND NOT s.complete AND NOT s.deleted
                 AND s.resource_version > p.resource_version
                 AND (v.resource_version IS NULL OR s.resource_version < v.resource_version)) AS stale,
       '' AS audit_id, '' AS username, NULL::text[] AS user_groups, '' AS impersonated_user,
       NULL::text[] AS impersonated_groups, NULL::text[] AS source_ips, '' AS user_agent,
       0::integer AS response_code, v.event_key,
       CASE WHEN v.object IS NOT NULL THEN v.version_key
            WHEN p.resource_version IS NOT NULL THEN p.version_key END AS state_key,
       NULL::timestamptz AS initiated_at
FROM object_versions v%s
LEFT JOIN LATERAL (
    SELECT pv.version_key, pv.resource_version
    FROM object_versions pv
    WHERE pv.cluster = v.cluster AND pv.uid = v.uid AND pv.complete AND NOT pv.deleted
      AND pv.version_key <> v.version_key AND NOT v.created
      AND (v.resource_version IS NULL OR pv.resource_version < v.resource_version
           OR (v.deleted AND pv.resource_version = v.resource_version))
    ORDER BY pv.resource_version DESC NULLS LAST, pv.changed_at DESC
    LIMIT 1
) p ON true`

// deletionRow is a Deletion with the key of its event.
type deletionRow struct {
	Deletion
	EventKey []byte `db:"event_key"`
}

// cascadeSQL is who started the cascades behind deletes of a cascade actor,
// from the deletions view (the rule lives there alone), for the rows of a
// page.
const cascadeSQL = `
SELECT d.uid, d.event_key, coalesce(d.initiated_by, '') AS initiated_by,
       coalesce(d.initiated_via, '') AS initiated_via, d.initiated_at,
       coalesce(d.initiated_api_group, '') AS initiated_api_group, coalesce(d.initiated_resource, '') AS initiated_resource,
       coalesce(d.initiated_namespace, '') AS initiated_namespace, coalesce(d.initiated_name, '') AS initiated_name
FROM deletions d
WHERE d.cluster = $1 AND d.uid = ANY($2::text[]) AND d.event_key = ANY($3::bytea[])`

type cascadeRow struct {
	UID          string     `db:"uid"`
	EventKey     []byte     `db:"event_key"`
	InitiatedBy  string     `db:"initiated_by"`
	InitiatedVia string     `db:"initiated_via"`
	InitiatedAt  *time.Time `db:"initiated_at"`
	Group        string     `db:"initiated_api_group"`
	Resource     string     `db:"initiated_resource"`
	Namespace    string     `db:"initiated_namespace"`
	Name         string     `db:"initiated_name"`
}

// Deletions returns successful deletes, newest first.
func (s *Store) Deletions(ctx context.Context, q DeletionQuery) ([]Deletion, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: deletions: cluster and limit are required")
	}
	// The view joins each version to its event: a delete whose event is
	// gone (its day dropped by retention before the version went) is not
	// one of its rows. Such rows are left out here too, and the page is
	// filled from after them, reading at most maxDeletionRefills pages: a
	// longer run of such rows ends the page (a short page ends the list,
	// as a scan's bound does in history).
	var out []Deletion
	for reads := 0; len(out) < q.Limit && reads < maxDeletionRefills; reads++ {
		page, fetched, err := s.deletionsPage(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(fetched) < q.Limit || len(page) == len(fetched) {
			break
		}
		last := fetched[len(fetched)-1]
		q.After, q.Limit = &Cursor{At: last.ChangedAt, UID: last.UID, Key: last.Key}, q.Limit-len(page)
	}
	return out, nil
}

// maxDeletionRefills bounds the pages Deletions reads to fill one.
const maxDeletionRefills = 10

// deletionsPage reads a page of q and returns the deletions of it with
// their events (who deleted, and who started a cascade), and every row it
// read.
func (s *Store) deletionsPage(ctx context.Context, q DeletionQuery) ([]Deletion, []deletionRow, error) {
	sql, args := deletionsSQL(q)
	rows, err := queryAll[deletionRow](ctx, s.pool, "deletions", sql, args...)
	if err != nil {
		return nil, nil, err
	}
	cascades, missing, err := s.attachActors(ctx, q.Cluster, len(rows), func(i int) (*VersionRecord, []byte) {
		return &rows[i].VersionRecord, rows[i].EventKey
	})
	if err != nil {
		return nil, nil, err
	}
	started, err := s.attachCascades(ctx, q.Cluster, cascades, func(i int) (*VersionRecord, []byte) {
		return &rows[i].VersionRecord, rows[i].EventKey
	})
	if err != nil {
		return nil, nil, err
	}
	for i, at := range started {
		rows[i].InitiatedAt = at
	}
	out := make([]Deletion, 0, len(rows))
	for i := range rows {
		if !missing[i] && rows[i].EventKey != nil {
			out = append(out, rows[i].Deletion)
		}
	}
	return out, rows, nil
}

func deletionsSQL(q DeletionQuery) (string, []any) {
	var b sqlBuilder
	b.versionsCluster = b.arg(q.Cluster)
	b.where("v.cluster = " + b.versionsCluster)
	// The rows of the deletions view: successful deletes (only a
	// successful write makes a version), not the no-op repeat of a change.
	b.where("v.verb IN ('delete', 'deletecollection') AND v.origin = 'change'")
	b.where(`(v.deleted OR v.resource_version IS NULL OR NOT EXISTS (SELECT 1 FROM object_versions d
    WHERE d.cluster = v.cluster AND d.uid = v.uid AND d.resource_version = v.resource_version AND d.origin = 'change'
      AND NOT d.deleted AND (d.changed_at, d.version_key) < (v.changed_at, v.version_key)))`)
	b.object("v", q.Group, q.Resource, q.Namespace, q.Name)
	if q.UID != "" {
		b.where("v.uid = " + b.arg(q.UID))
	}
	join := ""
	if q.User != "" {
		// Who deleted is in the event; the same time bounds on its
		// partition key let PostgreSQL prune the days outside them.
		join = "\nJOIN events e ON e.cluster = v.cluster AND e.stage_at = v.changed_at AND e.event_key = v.event_key"
		b.where("e.username = " + b.arg(q.User))
		timeBounds(&b, "e.stage_at", q.Since, q.Until)
	}
	timeBounds(&b, "v.changed_at", q.Since, q.Until)
	keyset(&b, q.After, false, "v.changed_at", "v.uid", "v.version_key")
	return fmt.Sprintf(deletionsSelect, join) + b.whereSQL() + orderBy(false, "v.changed_at", "v.uid", "v.version_key") +
		" LIMIT " + strconv.Itoa(q.Limit), b.args
}

// EventRecord is a kept audit event: a failed mutation, or one action of a
// user. Versions lists the versions the event made, as "uid/hex key".
type EventRecord struct {
	Cluster            string    `db:"cluster"`
	Key                []byte    `db:"event_key"`
	At                 time.Time `db:"stage_at"`
	AuditID            string    `db:"audit_id"`
	Verb               string    `db:"verb"`
	RequestURI         string    `db:"request_uri"`
	Username           string    `db:"username"`
	UserGroups         []string  `db:"user_groups"`
	ImpersonatedUser   string    `db:"impersonated_user"`
	ImpersonatedGroups []string  `db:"impersonated_groups"`
	SourceIPs          []string  `db:"source_ips"`
	UserAgent          string    `db:"user_agent"`
	APIGroup           string    `db:"api_group"`
	APIVersion         string    `db:"api_version"`
	Resource           string    `db:"resource"`
	Subresource        string    `db:"subresource"`
	Namespace          string    `db:"namespace"`
	Name               string    `db:"name"`
	ObjectUID          string    `db:"object_uid"`
	ResponseCode       int32     `db:"response_code"`
	ResponseReason     string    `db:"response_reason"`
	ResponseMessage    string    `db:"response_message"`
	RequestObject      []byte    `db:"request_object"`
	Versions           []string  `db:"versions"`
}

// EventQuery selects events; unset fields do not filter.
type EventQuery struct {
	Cluster   string
	User      string
	Group     *string
	Resource  string
	Namespace *string
	Name      string
	Since     time.Time
	Until     time.Time
	After     *Cursor
	Limit     int
}

// namespaceObject says an event is a request for a Namespace object. The
// apiserver authorizes and audits such a request (delete, update, patch,
// the finalize and status subresources) in the namespace itself, so the
// event's namespace is the object's name; but a Namespace is cluster-scoped,
// as its versions say (their namespace comes from the object). The reads of
// events answer it so too.
const namespaceObject = `(e.api_group = '' AND e.resource = 'namespaces')`

const eventSelect = `
SELECT e.cluster, e.event_key, e.stage_at, e.audit_id, e.verb, e.request_uri, e.username, e.user_groups,
       coalesce(e.impersonated_user, '') AS impersonated_user, e.impersonated_groups, e.source_ips,
       coalesce(e.user_agent, '') AS user_agent, e.api_group, e.api_version, e.resource, e.subresource,
       CASE WHEN ` + namespaceObject + ` THEN '' ELSE e.namespace END AS namespace,
       e.name, coalesce(e.object_uid, '') AS object_uid, e.response_code,
       coalesce(e.response_reason, '') AS response_reason, coalesce(e.response_message, '') AS response_message,
       %s AS request_object,
       ARRAY(SELECT v.uid || '/' || encode(v.version_key, 'hex') FROM object_versions v
             WHERE v.cluster = e.cluster AND v.changed_at = e.stage_at AND v.event_key = e.event_key
             ORDER BY v.uid) AS versions
FROM events e`

// FailedMutations returns mutations answered with a code >= 300 (the
// failed_mutations view), newest first, with their request bodies.
func (s *Store) FailedMutations(ctx context.Context, q EventQuery) ([]EventRecord, error) {
	return s.events(ctx, "failed mutations", q, true)
}

// failedMutationSQL finds one failed mutation by the events' primary key.
var failedMutationSQL = fmt.Sprintf(eventSelect, "e.request_object") + `
WHERE e.cluster = $1 AND e.stage_at = $2 AND e.event_key = $3 AND e.response_code >= 300`

// FailedMutation returns one mutation answered with a code >= 300, named
// by its event (stage time and key), with its request body; ErrNotFound
// when there is none (a successful event is none).
func (s *Store) FailedMutation(ctx context.Context, cluster string, at time.Time, key []byte) (*EventRecord, error) {
	rows, err := s.pool.Query(ctx, failedMutationSQL, cluster, at, key)
	if err != nil {
		return nil, fmt.Errorf("store: failed mutation: %w", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[EventRecord])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("failed mutation: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: failed mutation: %w", err)
	}
	return e, nil
}

// Activity returns the kept events of one user (q.User is required),
// newest first: what they changed, and what they tried to.
func (s *Store) Activity(ctx context.Context, q EventQuery) ([]EventRecord, error) {
	if q.User == "" {
		return nil, errors.New("store: activity: user is required")
	}
	return s.events(ctx, "activity", q, false)
}

func (s *Store) events(ctx context.Context, what string, q EventQuery, failed bool) ([]EventRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, fmt.Errorf("store: %s: cluster and limit are required", what)
	}
	sql, args := eventsSQL(q, failed)
	return queryAll[EventRecord](ctx, s.pool, what, sql, args...)
}

func eventsSQL(q EventQuery, failed bool) (string, []any) {
	var b sqlBuilder
	b.where("e.cluster = " + b.arg(q.Cluster))
	if failed {
		b.where("e.response_code >= 300")
	}
	if q.User != "" {
		b.where("e.username = " + b.arg(q.User))
	}
	b.object("e", q.Group, q.Resource, nil, q.Name)
	switch {
	case q.Namespace == nil:
	case *q.Namespace == "": // the cluster scope, Namespace objects included
		b.where("(e.namespace = '' OR " + namespaceObject + ")")
	default:
		b.where("e.namespace = " + b.arg(*q.Namespace) + " AND NOT " + namespaceObject)
	}
	timeBounds(&b, "e.stage_at", q.Since, q.Until)
	keyset(&b, q.After, false, "e.stage_at", "", "e.event_key")
	reqObj := "NULL::json"
	if failed {
		reqObj = "e.request_object"
	}
	return fmt.Sprintf(eventSelect, reqObj) + b.whereSQL() + orderBy(false, "e.stage_at", "", "e.event_key") +
		" LIMIT " + strconv.Itoa(q.Limit), b.args
}

// sqlBuilder assembles a WHERE clause from constant fragments and numbered
// parameters.
type sqlBuilder struct {
	conds []string
	args  []any
	// versionsCluster is the placeholder of the cluster of a query of
	// object_versions (see object).
	versionsCluster string
}

// arg adds a parameter and returns its placeholder.
func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// groupsIn is a skip scan of the API groups of which object_versions holds
// versions in a namespace of the query's cluster.
func (b *sqlBuilder) groupsIn(namespace string) string {
	ns := b.arg(namespace)
	return `WITH RECURSIVE g(name) AS (
        SELECT min(o.api_group) FROM object_versions o WHERE o.cluster = ` + b.versionsCluster + ` AND o.namespace = ` + ns + `
        UNION ALL
        SELECT (SELECT min(o.api_group) FROM object_versions o
                WHERE o.cluster = ` + b.versionsCluster + ` AND o.namespace = ` + ns + ` AND o.api_group > g.name)
        FROM g WHERE g.name IS NOT NULL)
    SELECT name FROM g WHERE name IS NOT NULL`
}

func (b *sqlBuilder) where(cond string) { b.conds = append(b.conds, cond) }

func (b *sqlBuilder) whereSQL() string {
	if len(b.conds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(b.conds, "\n  AND ")
}

func timeBounds(b *sqlBuilder, col string, since, until time.Time) {
	if !since.IsZero() {
		b.where(col + " >= " + b.arg(since))
	}
	if !until.IsZero() {
		b.where(col + " < " + b.arg(until))
	}
}

// keyset continues after the cursor in the page's order. uidCol may be
// empty (event lists).
func keyset(b *sqlBuilder, c *Cursor, ascending bool, atCol, uidCol, keyCol string) {
	if c == nil {
		return
	}
	op := " < "
	if ascending {
		op = " > "
	}
	if uidCol == "" {
		b.where("(" + atCol + ", " + keyCol + ")" + op + "(" + b.arg(c.At) + "::timestamptz, " + b.arg(c.Key) + "::bytea)")
		return
	}
	b.where("(" + atCol + ", " + uidCol + ", " + keyCol + ")" + op +
		"(" + b.arg(c.At) + "::timestamptz, " + b.arg(c.UID) + "::text, " + b.arg(c.Key) + "::bytea)")
}

func orderBy(ascending bool, cols ...string) string {
	dir := " DESC"
	if ascending {
		dir = " ASC"
	}
	var parts []string
	for _, c := range cols {
		if c != "" {
			parts = append(parts, c+dir)
		}
	}
	return "\nORDER BY " + strings.Join(parts, ", ")
}

// The restores table is the one table the restore API writes: who restored
// what, the plan they reviewed and each step's outcome.

// Restore states.
const (
	RestorePlanned   = "planned"
	RestoreRunning   = "running"
	RestoreSucceeded = "succeeded"
	RestorePartial   = "partial"
	RestoreFailed    = "failed"
	RestoreRefused   = "refused"
)

// RestoreRecord is a row of the restores table. Request, Plan and Outcome
// are JSON documents of the restore API.
type RestoreRecord struct {
	Cluster    string     `db:"cluster"`
	ID         string     `db:"id"`
	Kind       string     `db:"kind"` // version, as-of, undo
	CreatedAt  time.Time  `db:"created_at"`
	Username   string     `db:"username"`
	UserUID    string     `db:"user_uid"`
	UserGroups []string   `db:"user_groups"`
	UserExtra  []byte     `db:"user_extra"`
	Request    []byte     `db:"request"`
	Plan       []byte     `db:"plan"`
	DryRun     bool       `db:"dry_run"`
	State      string     `db:"state"`
	ExecutedAt *time.Time `db:"executed_at"`
	FinishedAt *time.Time `db:"finished_at"`
	Outcome    []byte     `db:"outcome"`
	PlanID     *string    `db:"plan_id"`
	// ObjectNamespace and ObjectName name a restore created as an object of
	// the aggregated API; empty otherwise.
	ObjectNamespace string `db:"object_namespace"`
	ObjectName      string `db:"object_name"`
}

const restoreColumns = `cluster, id::text AS id, kind, created_at, username, coalesce(user_uid, '') AS user_uid,
       user_groups, user_extra, request, plan, dry_run, state, executed_at, finished_at, outcome, plan_id::text AS plan_id,
       coalesce(object_namespace, '') AS object_namespace, coalesce(object_name, '') AS object_name`

const insertRestoreSQL = `
INSERT INTO restores (cluster, kind, username, user_uid, user_groups, user_extra, request, plan, dry_run,
                      state, executed_at, finished_at, outcome, plan_id, object_namespace, object_name)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::uuid, $15, $16)
RETURNING ` + restoreColumns

// InsertRestore records a restore (a plan to review, or one already carried
// out) and returns the stored row with its id and creation time.
func (s *Store) InsertRestore(ctx context.Context, r *RestoreRecord) (*RestoreRecord, error) {
	// A restore named as an object has a namespace, "" for a cluster
	// restore (not NULL: the name is unique within it).
	objNS := nullString(r.ObjectNamespace)
	if r.ObjectName != "" {
		objNS = r.ObjectNamespace
	}
	rows, err := s.pool.Query(ctx, insertRestoreSQL, r.Cluster, r.Kind, r.Username, nullString(r.UserUID),
		nonNil(r.UserGroups), nullJSON(r.UserExtra), r.Request, r.Plan, r.DryRun, r.State,
		r.ExecutedAt, r.FinishedAt, nullJSON(r.Outcome), r.PlanID, objNS, nullString(r.ObjectName))
	if err != nil {
		return nil, fmt.Errorf("store: record restore: %w", err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[RestoreRecord])
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "restores_object_name" {
		return nil, fmt.Errorf("restore %s/%s: %w", r.ObjectNamespace, r.ObjectName, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("store: record restore: %w", err)
	}
	return out, nil
}

const restoreByNameSQL = `SELECT ` + restoreColumns + ` FROM restores
WHERE cluster = $1 AND username = $2 AND coalesce(user_uid, '') = $3 AND object_namespace = $4 AND object_name = $5
  AND NOT dry_run`

// RestoreNamed returns the restore the user (name and uid, "" when the
// authenticator gives none) created as the object namespace/name (not a
// dry run), or ErrNotFound. Names are each user's own.
func (s *Store) RestoreNamed(ctx context.Context, cluster, username, userUID, namespace, name string) (*RestoreRecord, error) {
	return s.oneRestore(ctx, restoreByNameSQL, cluster, username, userUID, namespace, name)
}

const namedRestoresSQL = `SELECT ` + restoreColumns + ` FROM restores
WHERE cluster = $1 AND object_name IS NOT NULL AND NOT dry_run AND username = $2
  AND ($3::text IS NULL OR object_namespace = $3)
ORDER BY created_at DESC, id
LIMIT $4`

// NamedRestores returns the restores username created as objects, in
// namespace (nil: every namespace), newest first.
func (s *Store) NamedRestores(ctx context.Context, cluster, username string, namespace *string, limit int) ([]RestoreRecord, error) {
	return queryAll[RestoreRecord](ctx, s.pool, "named restores", namedRestoresSQL, cluster, username, namespace, limit)
}

const restoreByIDSQL = `SELECT ` + restoreColumns + ` FROM restores WHERE cluster = $1 AND id = $2::uuid`

// Restore returns a recorded restore, or ErrNotFound (also for an id that
// is not a UUID).
func (s *Store) Restore(ctx context.Context, cluster, id string) (*RestoreRecord, error) {
	if !isUUID(id) {
		return nil, fmt.Errorf("restore %q: %w", id, ErrNotFound)
	}
	return s.oneRestore(ctx, restoreByIDSQL, cluster, id)
}

const claimRestoreSQL = `
UPDATE restores SET state = 'running', executed_at = now()
WHERE cluster = $1 AND id = $2::uuid AND state = 'planned' AND NOT dry_run
RETURNING ` + restoreColumns

// ClaimRestore moves a planned restore to running, so it runs once. It
// returns ErrNotFound when the plan does not exist or is no longer planned.
func (s *Store) ClaimRestore(ctx context.Context, cluster, id string) (*RestoreRecord, error) {
	if !isUUID(id) {
		return nil, fmt.Errorf("restore %q: %w", id, ErrNotFound)
	}
	return s.oneRestore(ctx, claimRestoreSQL, cluster, id)
}

const finishRestoreSQL = `
UPDATE restores SET state = $3, finished_at = now(), outcome = $4
WHERE cluster = $1 AND id = $2::uuid`

// FinishRestore stores the outcome of a restore that ran.
func (s *Store) FinishRestore(ctx context.Context, cluster, id, state string, outcome []byte) error {
	tag, err := s.pool.Exec(ctx, finishRestoreSQL, cluster, id, state, nullJSON(outcome))
	if err != nil {
		return fmt.Errorf("store: finish restore %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("finish restore %s: %w", id, ErrNotFound)
	}
	return nil
}

func (s *Store) oneRestore(ctx context.Context, sql string, args ...any) (*RestoreRecord, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("store: restore: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[RestoreRecord])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("restore: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: restore: %w", err)
	}
	return r, nil
}

// isUUID checks the textual form PostgreSQL's uuid type prints.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

// queryAll runs a read and collects its rows into T by column name.
func queryAll[T any](ctx context.Context, pool *gatedPool, what, sql string, args ...any) ([]T, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}

// object adds the filters on an object's identity of the rows aliased a:
// group and namespace when given (an empty one is meaningful), resource and
// name when not empty.
func (b *sqlBuilder) object(a string, group *string, resource string, namespace *string, name string) {
	if group != nil {
		b.where(a + ".api_group = " + b.arg(*group))
	}
	if group == nil && namespace != nil && name != "" && b.versionsCluster != "" {
		// An object by name without its group (kubectl users name the
		// resource alone): the groups recorded in the namespace, found by a
		// skip scan of object_versions_name_time (a probe a group), let
		// that index find the name in each group instead of reading every
		// version of the namespace (13 ms on a record of 5 million).
		b.where(a + ".api_group = ANY(ARRAY(" + b.groupsIn(*namespace) + "))")
	}
	if resource != "" {
		b.where(a + ".resource = " + b.arg(resource))
	}
	if namespace != nil {
		b.where(a + ".namespace = " + b.arg(*namespace))
	}
	if name != "" {
		b.where(a + ".name = " + b.arg(name))
	}
}
