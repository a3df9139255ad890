package reads

// Reads of kept audit events: failed and denied writes, a user's activity.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

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
	// NamespacedOnly, with no Namespace, leaves out cluster-scoped objects
	// (and requests for Namespace objects).
	NamespacedOnly bool
	Name           string
	Since          time.Time
	Until          time.Time
	After          *Cursor
	Limit          int
}

// namespaceObject says an event is a request for a Namespace object. The
// apiserver authorizes and audits such a request (delete, update, patch,
// the finalize and status subresources) in the namespace itself, so the
// event's namespace is the object's name; but a Namespace is cluster-scoped,
// as its versions say (their namespace comes from the object). The reads of
// events answer it so too.
const namespaceObject = `(e.api_group = '' AND e.resource = 'namespaces')`

// eventColumns are the columns of an event but its versions (%s: the
// request body's expression).
const eventColumns = `
SELECT e.cluster, e.event_key, e.stage_at, e.audit_id, e.verb, e.request_uri, e.username, e.user_groups,
       coalesce(e.impersonated_user, '') AS impersonated_user, e.impersonated_groups, e.source_ips,
       coalesce(e.user_agent, '') AS user_agent, e.api_group, e.api_version, e.resource, e.subresource,
       CASE WHEN ` + namespaceObject + ` THEN '' ELSE e.namespace END AS namespace,
       e.name, coalesce(e.object_uid, '') AS object_uid, e.response_code,
       coalesce(e.response_reason, '') AS response_reason, coalesce(e.response_message, '') AS response_message,
       %s AS request_object`

var eventSelect = eventColumns + `,
       ARRAY(SELECT v.uid || '/' || encode(v.version_key, 'hex') FROM object_versions v
             WHERE v.cluster = e.cluster AND v.changed_at = e.stage_at AND v.event_key = e.event_key
               AND ` + strings.ReplaceAll(notSuperseded("v"), "%", "%%") + `
             ORDER BY v.uid) AS versions
FROM events e`

// FailedMutations returns mutations answered with a code >= 300 (the
// failed_mutations view), newest first, with their request bodies.
//
// The request bodies are not read here: a page of them could be hundreds
// of megabytes. RequestObjects reads those of a page, within a budget.
func (r *Reader) FailedMutations(ctx context.Context, q EventQuery) ([]EventRecord, error) {
	return r.events(ctx, "failed mutations", q, true)
}

// EventKey names an event: its partition key and key.
type EventKey struct {
	At  time.Time
	Key []byte
}

const requestObjectsSQL = `
SELECT e.request_object
FROM unnest($2::timestamptz[], $3::bytea[]) WITH ORDINALITY AS k(at, key, ord)
JOIN events e ON e.cluster = $1 AND e.stage_at = k.at AND e.event_key = k.key
ORDER BY k.ord`

// RequestObjects returns the request bodies of the events keys names, in
// that order, as long as their bytes stay within budget: the first always,
// then each while the sum of those read does not exceed it. A body is read
// only once the ones before it fit, so the memory held is the budget (and
// one body) whatever the page. An event without a body counts nothing.
func (r *Reader) RequestObjects(ctx context.Context, cluster string, keys []EventKey, budget int) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	ats, ks := make([]time.Time, len(keys)), make([][]byte, len(keys))
	for i, k := range keys {
		ats[i], ks[i] = k.At, k.Key
	}
	rows, err := r.db.Query(ctx, requestObjectsSQL, cluster, ats, ks)
	if err != nil {
		return nil, fmt.Errorf("store: request bodies: %w", err)
	}
	defer rows.Close()
	var out [][]byte
	total := 0
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("store: request bodies: %w", err)
		}
		if len(out) > 0 && total+len(b) > budget {
			break
		}
		total += len(b)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: request bodies: %w", err)
	}
	return out, nil
}

// failedMutationSQL finds one failed mutation by the events' primary key.
var failedMutationSQL = fmt.Sprintf(eventSelect, "e.request_object") + `
WHERE e.cluster = $1 AND e.stage_at = $2 AND e.event_key = $3 AND e.response_code >= 300`

// FailedMutation returns one mutation answered with a code >= 300, named
// by its event (stage time and key), with its request body; ErrNotFound
// when there is none (a successful event is none).
func (r *Reader) FailedMutation(ctx context.Context, cluster string, at time.Time, key []byte) (*EventRecord, error) {
	rows, err := r.db.Query(ctx, failedMutationSQL, cluster, at, key)
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
func (r *Reader) Activity(ctx context.Context, q EventQuery) ([]EventRecord, error) {
	if q.User == "" {
		return nil, errors.New("store: activity: user is required")
	}
	return r.events(ctx, "activity", q, false)
}

func (r *Reader) events(ctx context.Context, what string, q EventQuery, failed bool) ([]EventRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, fmt.Errorf("store: %s: cluster and limit are required", what)
	}
	sql, args := eventsSQL(q, failed)
	return queryAll[EventRecord](ctx, r.db, what, sql, args...)
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
	case q.Namespace == nil && q.NamespacedOnly:
		b.where("e.namespace <> '' AND NOT " + namespaceObject)
	case q.Namespace == nil:
	case *q.Namespace == "": // the cluster scope, Namespace objects included
		b.where("(e.namespace = '' OR " + namespaceObject + ")")
	default:
		b.where("e.namespace = " + b.arg(*q.Namespace) + " AND NOT " + namespaceObject)
	}
	timeBounds(&b, "e.stage_at", q.Since, q.Until)
	keyset(&b, q.After, false, "e.stage_at", "", "e.event_key")
	return fmt.Sprintf(eventSelect, "NULL::json") + b.whereSQL() + orderBy(false, "e.stage_at", "", "e.event_key") +
		" LIMIT " + strconv.Itoa(q.Limit), b.args
}

// EventKeyRangeQuery selects the candidates of an attempt's short name:
// the failed events (a code >= 300) of a cluster whose key lies in [Lo,
// Hi] (bytewise, both included), of the scope the name is resolved in.
type EventKeyRangeQuery struct {
	Cluster string
	Lo, Hi  []byte
	// Readable, when set, keeps the events on objects whose name begins a
	// short name as Readable (shortname.Readable).
	Readable string
	// Namespace, when set, keeps the events of that namespace ("" the
	// cluster scope, Namespace objects included: as EventQuery's).
	Namespace *string
	Limit     int
}

// failedByKeyRangeSQL reads the failed events of a cluster whose key lies
// in [$2, $3] (events_failed_key), of the namespace $4 (any when NULL), on
// objects whose name reads as $5 in a short name (any when empty), without
// their request bodies.
// A failed mutation made no version.
var failedByKeyRangeSQL = fmt.Sprintf(eventColumns, "NULL::json") + `, '{}'::text[] AS versions
FROM events e
WHERE e.cluster = $1 AND e.event_key BETWEEN $2 AND $3 AND e.response_code >= 300
  AND ($4::text IS NULL OR (CASE WHEN ` + namespaceObject + ` THEN '' ELSE e.namespace END) = $4::text)
  AND ($5::text = '' OR ` + readableEventNameSQL + ` = $5::text)
ORDER BY e.event_key, e.stage_at
LIMIT $6`

// FailedByKeyRange returns the failed mutations q selects, without their
// request bodies, in key order, at most q.Limit: the candidates of an
// attempt's short name, whose suffix is the first digits of an event key.
func (r *Reader) FailedByKeyRange(ctx context.Context, q EventKeyRangeQuery) ([]EventRecord, error) {
	if q.Cluster == "" || q.Limit <= 0 {
		return nil, errors.New("store: failed mutations by key: cluster and limit are required")
	}
	return queryAll[EventRecord](ctx, r.db, "failed mutations by key", failedByKeyRangeSQL,
		q.Cluster, q.Lo, q.Hi, q.Namespace, q.Readable, q.Limit)
}
