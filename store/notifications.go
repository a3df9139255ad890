package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
)

// insertOutboxSQL adds one change to the notification outbox, with the
// incident it belongs to (group_key: groupKeySQL).
// ON CONFLICT: a key already queued (a batch written event by event after a
// failed whole write) adds nothing.
var insertOutboxSQL = `
INSERT INTO notification_outbox (cluster, uid, version_key, destination, rule, group_key, changed_at,
    verb, api_group, api_version, kind, resource, subresource, namespace, name, deleted,
    audit_id, username, impersonated_user, source_ips, user_agent, refused, response_code)
SELECT $1, $2, $3, $4, $5,
    ` + groupKeySQL("$22", "$9", "$11", "$12", "$8", "$14", "$13", "$17", "$6::bytea") + `,
    $7, $8, $9, $10, $18, $11, $12, $13, $14, $15, $16, $17, $19, $20, $21, $22, $23
ON CONFLICT DO NOTHING`

// groupKeySQL is the SQL expression of the incident (group_key; see
// migrations/00019) of a change by an event of these columns (or
// parameters): a namespace's deletion and the namespace controller's
// deletecollections in it are one incident, one deletecollection is one,
// a user's refused attempts are one, and anything else is its user's.
// Every outbox row is grouped by it, whichever path queued the row
// (queueNotifications, or confirmation: confirmOutboxSQL).
func groupKeySQL(refused, apiGroup, resource, subresource, verb, name, namespace, username, eventKey string) string {
	return `CASE
        WHEN ` + refused + ` THEN 'refused:' || ` + username + `
        WHEN ` + apiGroup + ` = '' AND ` + resource + ` = 'namespaces' AND ` + subresource + ` = '' AND ` + verb + ` = 'delete' THEN 'namespace:' || ` + name + `
        WHEN ` + verb + ` = 'deletecollection' AND ` + namespace + ` <> ''
             AND EXISTS (SELECT 1 FROM cascade_actors ca WHERE ca.username = ` + username + ` AND ca.controller IN ('namespace', 'both'))
            THEN 'namespace:' || ` + namespace + `
        WHEN ` + verb + ` = 'deletecollection' THEN 'collection:' || encode(` + eventKey + `, 'hex')
        ELSE 'user:' || ` + username + `
    END`
}

// queueNotifications adds to the outbox, in the batch's transaction, one
// row per stored version and route of its event. It returns the rows
// added.
func queueNotifications(ctx context.Context, tx pgx.Tx, events []*model.Event, versions []*model.Version) (int, error) {
	var routed map[string]*model.Event
	for _, e := range events {
		if len(e.Notify) > 0 {
			if routed == nil {
				routed = map[string]*model.Event{}
			}
			routed[e.Cluster+"\x00"+string(e.Key)] = e
		}
	}
	if routed == nil {
		return 0, nil
	}
	b := &pgx.Batch{}
	// A refused attempt stores no version: its event is the row, keyed
	// by the event's key.
	for _, e := range events {
		if len(e.Notify) == 0 || e.ResponseCode < 300 {
			continue
		}
		for _, r := range e.Notify {
			b.Queue(insertOutboxSQL, e.Cluster, e.ObjectUID, e.Key, r.Destination, r.Rule, e.Key, e.StageAt,
				e.Verb, e.APIGroup, e.APIVersion, e.Resource, e.Subresource, e.Namespace, e.Name, false,
				e.AuditID, e.Username, "", nullString(e.ImpersonatedUser), nonNil(e.SourceIPs), nullString(e.UserAgent),
				true, e.ResponseCode)
		}
	}
	for _, v := range versions {
		if v.Origin != model.OriginChange || v.EventKey == nil {
			continue
		}
		e := routed[v.Cluster+"\x00"+string(v.EventKey)]
		if e == nil {
			continue
		}
		for _, r := range e.Notify {
			b.Queue(insertOutboxSQL, v.Cluster, v.UID, v.Key, r.Destination, r.Rule, e.Key, v.ChangedAt,
				v.Verb, v.APIGroup, v.APIVersion, v.Resource, v.Subresource, v.Namespace, v.Name, v.Deleted,
				e.AuditID, e.Username, v.Kind, nullString(e.ImpersonatedUser), nonNil(e.SourceIPs), nullString(e.UserAgent),
				false, e.ResponseCode)
		}
	}
	if b.Len() == 0 {
		return 0, nil
	}
	br := tx.SendBatch(ctx, b)
	n := 0
	for range b.Len() {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return n, fmt.Errorf("queue notifications: %w", err)
		}
		n += int(tag.RowsAffected())
	}
	if err := br.Close(); err != nil {
		return n, fmt.Errorf("queue notifications: %w", err)
	}
	return n, nil
}

// routeClaimPrefix starts the observation_id of a route claim: an
// observation_claims row that keeps, until the event's claims expire, one
// notification route (model.Route) of a deletion event whose observations
// may be confirmed after its batch (a deletecollection logged at Metadata
// names no object; confirmation records its deletions: deletedSQL). No
// observation's id (32 hex digits: model.IsObservationID) has this form,
// and matchSQL never joins one.
const routeClaimPrefix = "notify:"

// routeClaimID is the observation_id of the route claim of r: the prefix,
// then the JSON array [destination, rule] (confirmOutboxSQL reads it).
func routeClaimID(r model.Route) string {
	b, _ := json.Marshal([]string{r.Destination, r.Rule}) // strings only: cannot fail
	return routeClaimPrefix + string(b)
}

// confirmOutboxSQL queues, for each deletion a confirmation stored (the
// CTE "stored": deletedSQL's rows), one outbox row per route claim of its
// event, grouped as queueNotifications groups the event's own versions
// (groupKeySQL): a deletecollection's deletions are one incident however
// many confirmations store them. Keyed by the version (ON CONFLICT): a
// deletion stored once is queued once.
var confirmOutboxSQL = `
INSERT INTO notification_outbox (cluster, uid, version_key, destination, rule, group_key, changed_at,
    verb, api_group, api_version, kind, resource, subresource, namespace, name, deleted,
    audit_id, username, impersonated_user, source_ips, user_agent, refused, response_code)
SELECT s.cluster, s.uid, s.version_key, r.route->>0, r.route->>1,
    ` + groupKeySQL("false", "e.api_group", "e.resource", "e.subresource", "e.verb", "e.name", "e.namespace", "e.username", "e.event_key") + `,
    s.changed_at, s.verb, s.api_group, s.api_version, s.kind, s.resource, e.subresource, s.namespace, s.name, s.deleted,
    e.audit_id, e.username, e.impersonated_user, e.source_ips, e.user_agent, false, e.response_code
FROM stored s
JOIN events e ON e.cluster = s.cluster AND e.event_key = s.event_key AND e.stage_at = s.changed_at
CROSS JOIN LATERAL (
    SELECT substr(c.observation_id, ` + strconv.Itoa(len(routeClaimPrefix)+1) + `)::jsonb AS route
    FROM observation_claims c
    WHERE c.cluster = s.cluster AND c.event_key = s.event_key AND c.observation_id LIKE '` + routeClaimPrefix + `%'
) r
ON CONFLICT DO NOTHING`

// NotificationItem is one change of a notification message: an outbox row.
type NotificationItem struct {
	Cluster          string    `db:"cluster"`
	UID              string    `db:"uid"`
	VersionKey       []byte    `db:"version_key"`
	Rule             string    `db:"rule"`
	ChangedAt        time.Time `db:"changed_at"`
	Verb             string    `db:"verb"`
	APIGroup         string    `db:"api_group"`
	APIVersion       string    `db:"api_version"`
	Kind             string    `db:"kind"`
	Resource         string    `db:"resource"`
	Subresource      string    `db:"subresource"`
	Namespace        string    `db:"namespace"`
	Name             string    `db:"name"`
	Deleted          bool      `db:"deleted"`
	AuditID          string    `db:"audit_id"`
	Username         string    `db:"username"`
	ImpersonatedUser *string   `db:"impersonated_user"`
	SourceIPs        []string  `db:"source_ips"`
	UserAgent        *string   `db:"user_agent"`
	Refused          bool      `db:"refused"`
	ResponseCode     int32     `db:"response_code"`
}

// NotificationMessage is one message of the outbox: an incident's changes
// for one destination, with the key receivers deduplicate on (ID).
type NotificationMessage struct {
	ID          string
	Destination string
	Cluster     string
	GroupKey    string
	Attempts    int // claims so far, this one included
	CreatedAt   time.Time
	Items       []NotificationItem
	// Initiator is, for a namespace's incident whose own deletion is not
	// among Items (it came in an earlier message, or no rule routes it),
	// the recorded deletion of the namespace; nil otherwise or if none is
	// recorded.
	Initiator *NotificationItem
}

// pickGroupSQL locks the oldest outbox row not yet in a message that has
// waited its grouping window.
const pickGroupSQL = `
SELECT destination, cluster, group_key, uid, version_key FROM notification_outbox
WHERE message_id IS NULL AND created_at <= now() - make_interval(secs => $1)
ORDER BY created_at
LIMIT 1
FOR UPDATE SKIP LOCKED`

// assignGroupSQL puts every waiting row of that incident (up to a bound)
// in the message.
const assignGroupSQL = `
WITH picked AS (
    SELECT cluster, uid, version_key, destination FROM notification_outbox
    WHERE message_id IS NULL AND destination = $1 AND cluster = $2 AND group_key = $3
    ORDER BY created_at, uid
    LIMIT 5000
    FOR UPDATE SKIP LOCKED)
UPDATE notification_outbox o SET message_id = $4
FROM picked p
WHERE o.cluster = p.cluster AND o.uid = p.uid AND o.version_key = p.version_key AND o.destination = p.destination`

const insertMessageSQL = `
INSERT INTO notification_messages (id, destination, cluster, group_key) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO NOTHING`

// GroupNotifications makes messages of the outbox rows that waited at
// least window: each message takes every waiting row of the oldest row's
// incident (destination, cluster, group), so a burst that fits in window
// is one message. Several replicas may run it at once (the rows are
// locked, SKIP LOCKED). It returns the messages made.
func (s *Store) GroupNotifications(ctx context.Context, window time.Duration) (int, error) {
	made := 0
	for {
		done := false
		err := s.Transact(ctx, func(tx pgx.Tx) error {
			var dest, cluster, group, uid string
			var key []byte
			err := tx.QueryRow(ctx, pickGroupSQL, window.Seconds()).Scan(&dest, &cluster, &group, &uid, &key)
			if errors.Is(err, pgx.ErrNoRows) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			id := messageID(dest, cluster, uid, key)
			if _, err := tx.Exec(ctx, insertMessageSQL, id, dest, cluster, group); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, assignGroupSQL, dest, cluster, group, id)
			return err
		})
		if err != nil {
			return made, fmt.Errorf("store: group notifications: %w", err)
		}
		if done {
			return made, nil
		}
		made++
	}
}

// messageID is the key of the message whose first change is (cluster,
// uid, key) for dest: the same every time the message is sent, so a
// receiver can drop a second delivery.
func messageID(dest, cluster, uid string, key []byte) string {
	h := sha256.New()
	for _, s := range []string{"options-record notification v1", dest, cluster, uid} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// claimSQL leases the next due message of a destination: no other sender
// takes it until lease_until, and if this one dies the lease runs out and
// another sends it.
const claimSQL = `
UPDATE notification_messages m SET lease_until = now() + make_interval(secs => $2), attempts = m.attempts + 1
WHERE m.id = (
    SELECT id FROM notification_messages
    WHERE destination = $1 AND sent_at IS NULL AND dropped_at IS NULL AND next_attempt_at <= now()
      AND (lease_until IS NULL OR lease_until <= now())
    ORDER BY next_attempt_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
RETURNING m.id, m.destination, m.cluster, m.group_key, m.attempts, m.created_at`

const messageItemsSQL = `
SELECT cluster, uid, version_key, rule, changed_at, verb, api_group, api_version, kind, resource, subresource,
       namespace, name, deleted, audit_id, username, impersonated_user, source_ips, user_agent, refused, response_code
FROM notification_outbox WHERE message_id = $1
ORDER BY changed_at, namespace, resource, name`

// namespaceDeletionSQL finds the user's deletion of a namespace that the
// namespace controller's cascade follows, as the deletions view does.
const namespaceDeletionSQL = `
SELECT e.cluster, coalesce(e.object_uid, '') AS uid, e.event_key AS version_key, '' AS rule,
       e.stage_at AS changed_at, e.verb, e.api_group, e.api_version, 'Namespace' AS kind, e.resource,
       e.subresource, e.namespace, e.name, true AS deleted, e.audit_id, e.username,
       e.impersonated_user, e.source_ips, e.user_agent, false AS refused, e.response_code
FROM events e
WHERE e.cluster = $1 AND e.api_group = '' AND e.resource = 'namespaces' AND e.name = $2
  AND e.verb = 'delete' AND e.response_code < 300
  AND e.stage_at <= $3 AND e.stage_at >= $3 - interval '1 day'
  AND e.username NOT IN (SELECT username FROM cascade_actors)
ORDER BY e.stage_at DESC
LIMIT 1`

// ClaimNotification leases the next due message of destination for lease,
// with its changes; nil when none is due.
func (s *Store) ClaimNotification(ctx context.Context, destination string, lease time.Duration) (*NotificationMessage, error) {
	m := &NotificationMessage{}
	err := s.pool.raw.QueryRow(ctx, claimSQL, destination, lease.Seconds()).
		Scan(&m.ID, &m.Destination, &m.Cluster, &m.GroupKey, &m.Attempts, &m.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: claim notification: %w", err)
	}
	rows, err := s.pool.raw.Query(ctx, messageItemsSQL, m.ID)
	if err != nil {
		return nil, fmt.Errorf("store: notification %s: %w", m.ID, err)
	}
	if m.Items, err = pgx.CollectRows(rows, pgx.RowToStructByName[NotificationItem]); err != nil {
		return nil, fmt.Errorf("store: notification %s: %w", m.ID, err)
	}
	if ns, ok := strings.CutPrefix(m.GroupKey, "namespace:"); ok && len(m.Items) > 0 && !hasNamespaceDeletion(m.Items, ns) {
		rows, err := s.pool.raw.Query(ctx, namespaceDeletionSQL, m.Cluster, ns, m.Items[0].ChangedAt)
		if err != nil {
			return nil, fmt.Errorf("store: notification %s: initiator: %w", m.ID, err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowToStructByName[NotificationItem])
		if err != nil {
			return nil, fmt.Errorf("store: notification %s: initiator: %w", m.ID, err)
		}
		if len(found) > 0 {
			m.Initiator = &found[0]
		}
	}
	return m, nil
}

func hasNamespaceDeletion(items []NotificationItem, ns string) bool {
	for _, it := range items {
		if it.APIGroup == "" && it.Resource == "namespaces" && it.Name == ns && it.Verb == "delete" {
			return true
		}
	}
	return false
}

// ErrLeaseLost is the error of an outcome (NotificationSent, Retry,
// Dropped) of a claim that is no longer the message's: its lease ran out
// and another replica claimed the message since (or the outcome is
// already recorded). Nothing is changed.
var ErrLeaseLost = errors.New("the notification's lease was lost to a newer claim")

// outcome runs an update of message id fenced to the claim that made
// attempt (NotificationMessage.Attempts): each claim adds one to
// attempts, so a stale claim's update matches no row.
func (s *Store) outcome(ctx context.Context, what, id string, attempt int, set string, args ...any) error {
	tag, err := s.pool.raw.Exec(ctx, `UPDATE notification_messages SET `+set+`, lease_until = NULL
WHERE id = $1 AND attempts = $2 AND sent_at IS NULL AND dropped_at IS NULL`, append([]any{id, attempt}, args...)...)
	if err != nil {
		return fmt.Errorf("store: notification %s %s: %w", id, what, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: notification %s %s (attempt %d): %w", id, what, attempt, ErrLeaseLost)
	}
	return nil
}

// NotificationSent records that message id was delivered by the claim
// that made attempt; ErrLeaseLost if that claim is no longer the
// message's.
func (s *Store) NotificationSent(ctx context.Context, id string, attempt int) error {
	return s.outcome(ctx, "sent", id, attempt, `sent_at = now(), last_error = NULL`)
}

// NotificationRetry records a failed delivery of message id by the claim
// that made attempt, to be tried again after wait; ErrLeaseLost if that
// claim is no longer the message's.
func (s *Store) NotificationRetry(ctx context.Context, id string, attempt int, wait time.Duration, failure string) error {
	return s.outcome(ctx, "retry", id, attempt, `next_attempt_at = now() + make_interval(secs => $3), last_error = $4`,
		wait.Seconds(), failure)
}

// NotificationDropped records that message id will not be sent, and why
// ("rate_limited", "rejected", "expired"), by the claim that made attempt;
// ErrLeaseLost if that claim is no longer the message's.
func (s *Store) NotificationDropped(ctx context.Context, id string, attempt int, reason, failure string) error {
	return s.outcome(ctx, "dropped", id, attempt, `dropped_at = now(), dropped_reason = $3, last_error = nullif($4, '')`,
		reason, failure)
}

// PurgeNotifications deletes the messages sent or dropped before cutoff,
// and their outbox rows.
func (s *Store) PurgeNotifications(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.Transact(ctx, func(tx pgx.Tx) error {
		const done = `SELECT id FROM notification_messages WHERE (sent_at < $1 OR dropped_at < $1)`
		if _, err := tx.Exec(ctx, `DELETE FROM notification_outbox WHERE message_id IN (`+done+`)`, cutoff); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM notification_messages WHERE id IN (`+done+`)`, cutoff)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: purge notifications: %w", err)
	}
	return n, nil
}
