package reads

import (
	"context"
	"fmt"
	"time"
)

// Reading a version and its event in one query joins object_versions to
// events, which is partitioned by day: PostgreSQL plans the join against
// every partition (it cannot prune by e.stage_at = v.changed_at before it
// runs) and opens each one when it starts. Measured on a record of a month
// (33 partitions), that planning and start-up cost 3-60 ms a query, against
// a fraction of a millisecond for object_versions alone; a plan that loads
// 5,000 states one by one spent most of its 11 s there.
//
// So the lookups read versions from object_versions alone and attach the
// who in a second query that names the events' partition key with
// constants (stage_at = ANY(...)): PostgreSQL prunes to the days the page
// covers while it plans, and reads each event by its primary key.

// versionOnlyColumns are the columns of a VersionRecord read from
// object_versions v alone: the event's columns are left empty for
// attachActors, and the event key is added for it. %s is the object column
// and the stale expression.
const versionOnlyColumns = `
SELECT v.cluster, v.uid, v.version_key, v.resource_version, v.origin, v.verb, v.changed_at,
       v.api_group, v.api_version, v.kind, v.resource, v.subresource, v.namespace, v.name,
       v.created, v.deleted, v.complete, v.secret_digested, (v.object IS NOT NULL) AS has_object,
       %s AS object, %s AS stale,
       '' AS audit_id, '' AS username, NULL::text[] AS user_groups, '' AS impersonated_user,
       NULL::text[] AS impersonated_groups, NULL::text[] AS source_ips, '' AS user_agent,
       0::integer AS response_code, v.event_key`

var (
	versionOnlySelectNoObject   = fmt.Sprintf(versionOnlyColumns, "NULL::json", "false")
	versionOnlySelectWithObject = fmt.Sprintf(versionOnlyColumns, stateColumn, "false")
)

// versionWithEvent is a VersionRecord with the key of its event (nil for a
// baseline), which attachActors needs.
type versionWithEvent struct {
	VersionRecord
	EventKey []byte `db:"event_key"`
}

// eventActorSQL reads the who of events named by their primary key. The
// arrays are constants of the plan (parameters of a custom plan), so the
// partitions outside those days are pruned before it runs. Pairs of the
// ANY(...) prunes the partitions; the join to the pairs makes each a
// primary-key lookup (two ANY arrays in one index scan probe their cross
// product: with a page of 100, PostgreSQL preferred a sequential scan).
const eventActorSQL = `
SELECT e.stage_at, e.event_key, e.audit_id, e.username, e.user_groups,
       coalesce(e.impersonated_user, '') AS impersonated_user, e.impersonated_groups, e.source_ips,
       coalesce(e.user_agent, '') AS user_agent, e.response_code,
       EXISTS (SELECT 1 FROM cascade_actors ca WHERE ca.username = e.username) AS cascade
FROM unnest($2::timestamptz[], $3::bytea[]) AS k(stage_at, event_key)
JOIN events e ON e.cluster = $1 AND e.stage_at = k.stage_at AND e.event_key = k.event_key
WHERE e.stage_at = ANY($2::timestamptz[])`

type eventActor struct {
	StageAt            time.Time `db:"stage_at"`
	EventKey           []byte    `db:"event_key"`
	AuditID            string    `db:"audit_id"`
	Username           string    `db:"username"`
	UserGroups         []string  `db:"user_groups"`
	ImpersonatedUser   string    `db:"impersonated_user"`
	ImpersonatedGroups []string  `db:"impersonated_groups"`
	SourceIPs          []string  `db:"source_ips"`
	UserAgent          string    `db:"user_agent"`
	ResponseCode       int32     `db:"response_code"`
	Cascade            bool      `db:"cascade"`
}

type eventID struct {
	at  int64 // microseconds: the precision of timestamptz
	key string
}

// attachActors fills the event columns of n versions (at(i) gives the
// i-th and its event key) from their events, and says which were made by a
// cascade actor (the namespace controller, the garbage collector). A
// version whose event is gone (its day dropped by retention while the
// version stays as the state at the cutoff) keeps empty event columns, and
// is in the second map.
func (r *Reader) attachActors(ctx context.Context, cluster string, n int, at func(i int) (*VersionRecord, []byte)) (cascades, missing map[int]bool, err error) {
	var times []time.Time
	var keys [][]byte
	for i := range n {
		if v, key := at(i); key != nil {
			times = append(times, v.ChangedAt)
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, nil, nil
	}
	actors, err := queryAll[eventActor](ctx, r.db, "authors of versions", eventActorSQL, cluster, times, keys)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[eventID]*eventActor, len(actors))
	for i := range actors {
		byID[eventID{actors[i].StageAt.UnixMicro(), string(actors[i].EventKey)}] = &actors[i]
	}
	cascades, missing = map[int]bool{}, map[int]bool{}
	for i := range n {
		v, key := at(i)
		if key == nil {
			continue
		}
		a := byID[eventID{v.ChangedAt.UnixMicro(), string(key)}]
		if a == nil {
			missing[i] = true
			continue
		}
		v.AuditID, v.Username, v.UserGroups = a.AuditID, a.Username, a.UserGroups
		v.ImpersonatedUser, v.ImpersonatedGroups = a.ImpersonatedUser, a.ImpersonatedGroups
		v.SourceIPs, v.UserAgent, v.ResponseCode = a.SourceIPs, a.UserAgent, a.ResponseCode
		if a.Cascade {
			cascades[i] = true
		}
	}
	return cascades, missing, nil
}

// versions reads rows of versionWithEvent with sql and attaches their actors.
func (r *Reader) versions(ctx context.Context, what, cluster, sql string, args ...any) ([]VersionRecord, error) {
	rows, err := queryAll[versionWithEvent](ctx, r.db, what, sql, args...)
	if err != nil {
		return nil, err
	}
	at := func(i int) (*VersionRecord, []byte) { return &rows[i].VersionRecord, rows[i].EventKey }
	cascades, _, err := r.attachActors(ctx, cluster, len(rows), at)
	if err != nil {
		return nil, err
	}
	if _, err := r.attachCascades(ctx, cluster, cascades, at); err != nil {
		return nil, err
	}
	out := make([]VersionRecord, len(rows))
	for i := range rows {
		out[i] = rows[i].VersionRecord
	}
	return out, nil
}

// objectsSQL reads the stored objects of versions named by (uid, key).
const objectsSQL = `
SELECT v.uid, v.version_key, ` + stateColumn + `
FROM object_versions v
WHERE v.cluster = $1 AND (v.uid, v.version_key) IN (SELECT * FROM unnest($2::text[], $3::bytea[]))
  AND v.object IS NOT NULL`

// ObjectID names a version's object in the answer of Objects.
func ObjectID(uid string, key []byte) string { return uid + "\x00" + string(key) }

// Objects returns the stored objects of the versions (uids[i], keys[i]) of
// a cluster, by ObjectID; a version without an object is absent. A plan
// loads its steps' states this way, a batch at a time, instead of one
// query a step.
func (r *Reader) Objects(ctx context.Context, cluster string, uids []string, keys [][]byte) (map[string][]byte, error) {
	if len(uids) != len(keys) {
		return nil, fmt.Errorf("store: objects: %d uids and %d keys", len(uids), len(keys))
	}
	out := make(map[string][]byte, len(uids))
	if len(uids) == 0 {
		return out, nil
	}
	rows, err := r.db.Query(ctx, objectsSQL, cluster, uids, keys)
	if err != nil {
		return nil, fmt.Errorf("store: objects: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var uid string
		var key, obj []byte
		if err := rows.Scan(&uid, &key, &obj); err != nil {
			return nil, fmt.Errorf("store: objects: %w", err)
		}
		out[ObjectID(uid, key)] = obj
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: objects: %w", err)
	}
	return out, nil
}

// attachCascades fills InitiatedBy and InitiatedVia of the deletes among
// the versions picked (those of a cascade actor, from attachActors) from the
// deletions view, which alone holds the rule, and returns when each
// cascade started.
func (r *Reader) attachCascades(ctx context.Context, cluster string, picked map[int]bool, at func(i int) (*VersionRecord, []byte)) (map[int]*time.Time, error) {
	var uids []string
	var keys [][]byte
	for i := range picked {
		if v, key := at(i); key != nil && (v.Verb == "delete" || v.Verb == "deletecollection") {
			uids, keys = append(uids, v.UID), append(keys, key)
		}
	}
	if len(uids) == 0 {
		return nil, nil
	}
	started, err := queryAll[cascadeRow](ctx, r.db, "cascades of deletions", cascadeSQL, cluster, uids, keys)
	if err != nil {
		return nil, err
	}
	out := map[int]*time.Time{}
	for i := range picked {
		v, key := at(i)
		for _, c := range started {
			if c.UID == v.UID && string(c.EventKey) == string(key) && c.InitiatedBy != "" {
				v.InitiatedBy, v.InitiatedVia, out[i] = c.InitiatedBy, c.InitiatedVia, c.InitiatedAt
				v.Initiator = &ObjectRef{Group: c.Group, Resource: c.Resource, Namespace: c.Namespace, Name: c.Name}
			}
		}
	}
	return out, nil
}
