package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
)

var observationColumns = []string{
	"cluster", "observation_id", "received_at", "source", "bytes", "operation", "dry_run",
	"api_group", "resource", "subresource", "namespace", "name",
	"uid", "resource_version", "version_key", "api_version", "kind", "object_namespace", "object_name",
	"complete", "object", "object_exact", "secret_digested",
}

const sourceBytesSQL = `
SELECT source, sum(bytes)::bigint FROM observations WHERE source = ANY($1) GROUP BY source`

// WriteObservations stores unconfirmed observations, no more than
// maxPerSource bytes of them per source (the rest are dropped and counted),
// and confirms those whose audit event is stored already.
func (s *Store) WriteObservations(ctx context.Context, obs []model.Observation, maxPerSource int64) (model.ObservationResult, error) {
	var res model.ObservationResult
	if len(obs) == 0 {
		return res, nil
	}
	err := s.Transact(ctx, func(tx pgx.Tx) error {
		res = model.ObservationResult{}
		sources := make([]string, 0, len(obs))
		for i := range obs {
			sources = append(sources, obs[i].Source)
		}
		held := map[string]int64{}
		rows, err := tx.Query(ctx, sourceBytesSQL, sources)
		if err != nil {
			return err
		}
		var src string
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&src, &n}, func() error { held[src] = n; return nil }); err != nil {
			return err
		}
		keep := make([]*model.Observation, 0, len(obs))
		ids := make([]string, 0, len(obs))
		for i := range obs {
			o := &obs[i]
			b := int64(o.Bytes())
			if maxPerSource > 0 && held[o.Source]+b > maxPerSource {
				res.OverBound++
				continue
			}
			held[o.Source] += b
			keep = append(keep, o)
			ids = append(ids, o.ID)
		}
		if len(keep) == 0 {
			return nil
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"observations"}, observationColumns,
			pgx.CopyFromSlice(len(keep), func(i int) ([]any, error) { return observationRow(keep[i]), nil })); err != nil {
			return fmt.Errorf("copy observations: %w", err)
		}
		res.Stored = len(keep)
		res.Confirmed, err = confirm(ctx, tx, ids, s.tamperLog)
		return err
	})
	if err != nil {
		return model.ObservationResult{}, fmt.Errorf("store: write %d observations: %w", len(obs), err)
	}
	s.confirmed.Add(float64(res.Confirmed))
	return res, nil
}

func observationRow(o *model.Observation) []any {
	v := &o.Version
	return []any{
		o.Cluster, o.ID, o.ReceivedAt, o.Source, o.Bytes(), o.Operation, o.DryRun,
		o.APIGroup, o.Resource, o.Subresource, o.Namespace, o.Name,
		v.UID, v.ResourceVersion, v.Key, v.APIVersion, v.Kind, v.Namespace, v.Name,
		v.Complete, v.Object, nullJSON(v.ObjectExact), v.SecretDigested,
	}
}

const insertClaimsSQL = `
INSERT INTO observation_claims (cluster, observation_id, event_key, stage_at, verb, api_group, resource,
    subresource, namespace, name, object_uid)
SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::timestamptz[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
ON CONFLICT DO NOTHING`

// writeClaims records the observations the stored events name (their
// annotations) and confirms those stored already. It runs in the
// transaction that stores the events, under a savepoint: a claim that
// cannot be recorded costs its state (the change stays state unknown),
// never the events, which the apiserver would otherwise send again and
// again (claimErr; err is a failure of the transaction itself).
func writeClaims(ctx context.Context, tx pgx.Tx, events []*model.Event, logged bool) (confirmed int, claimErr, err error) {
	var cols [11][]any
	var ids []string
	add := func(e *model.Event, id string) {
		for i, v := range []any{e.Cluster, id, e.Key, e.StageAt, e.Verb, e.APIGroup, e.Resource,
			e.Subresource, e.Namespace, e.Name, nullString(e.ObjectUID)} {
			cols[i] = append(cols[i], v)
		}
	}
	for _, e := range events {
		claims := model.Claims(e)
		for _, id := range claims {
			ids = append(ids, id)
			add(e, id)
		}
		// The deletions confirmation records for a routed deletion event
		// are sent by its routes (confirmOutboxSQL): they are kept beside
		// its claims, and expire with them.
		if len(claims) > 0 && (e.Verb == "delete" || e.Verb == "deletecollection") && e.ResponseCode < 300 {
			for _, r := range e.Notify {
				add(e, routeClaimID(r))
			}
		}
	}
	if len(ids) == 0 {
		return 0, nil, nil
	}
	args := make([]any, len(cols))
	for i := range cols {
		args[i] = cols[i]
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, nil, err
	}
	if _, claimErr = sp.Exec(ctx, insertClaimsSQL, args...); claimErr == nil {
		confirmed, claimErr = confirm(ctx, sp, ids, logged)
	}
	if claimErr != nil {
		if err := sp.Rollback(ctx); err != nil {
			return 0, nil, err
		}
		return 0, fmt.Errorf("record observation claims: %w", claimErr), nil
	}
	return confirmed, nil, sp.Commit(ctx)
}

// matchSQL is the exact join: a claim (an authenticated audit event's
// annotation) and the observation it names, about the same object, by a
// verb of the reviewed operation, and of the same uid where the event
// names one. $1 NULL: every pending claim.
var matchSQL = `
SELECT o.cluster, o.observation_id, c.event_key, c.stage_at, o.dry_run
FROM observation_claims c
JOIN observations o ON o.cluster = c.cluster AND o.observation_id = c.observation_id
WHERE ($1::text[] IS NULL OR c.observation_id = ANY($1))
  AND c.observation_id NOT LIKE '` + routeClaimPrefix + `%'
  AND o.api_group = c.api_group AND o.resource = c.resource AND o.subresource = c.subresource
  AND o.namespace = c.namespace
  AND (o.name = c.name OR (c.verb = 'deletecollection' AND c.name = ''))
  AND (coalesce(c.object_uid, '') = '' OR c.object_uid = o.uid)
  AND CASE o.operation WHEN 'UPDATE' THEN c.verb IN ('update', 'patch')
                       WHEN 'DELETE' THEN c.verb IN ('delete', 'deletecollection') END
ORDER BY o.cluster, o.observation_id`

// confirmVersionSQL stores the observation as the version at its own
// resourceVersion, unless a version holds that state already (a response
// body, a baseline, another observation): nothing is stored twice. It is
// dated at the request's receipt (the apiserver's clock): the object held
// that state then.
const confirmVersionSQL = `
INSERT INTO object_versions (cluster, uid, version_key, resource_version, origin, verb, changed_at,
    api_group, api_version, kind, resource, namespace, name, complete, object, secret_digested, rules, object_exact)
SELECT o.cluster, o.uid, o.version_key, o.resource_version, 'admission', 'admission',
    least(coalesce(e.received_at, e.stage_at), e.stage_at),
    o.api_group, o.api_version, o.kind, o.resource, o.object_namespace, o.object_name, o.complete,
    o.object, o.secret_digested, e.rules, o.object_exact
FROM observations o
JOIN events e ON e.cluster = o.cluster AND e.event_key = $3 AND e.stage_at = $4
WHERE o.cluster = $1 AND o.observation_id = $2
  AND NOT EXISTS (SELECT 1 FROM object_versions v
                  WHERE v.cluster = o.cluster AND v.uid = o.uid AND v.resource_version = o.resource_version)
ON CONFLICT DO NOTHING`

// supersedeUnknownSQL records the change the event recorded without a uid
// (a write logged at Metadata: see model.UnknownUIDPrefix) again, as a
// change of the observed object: its uid (and kind, where the event gave
// none), keyed as the event's own version of it would be (model's
// versionKey: sha256(event key, uid)), every other column as stored. The
// row under the unknown- uid is kept as it was stored (and logged: the
// record is append-only); the readers take this one for it (a superseded
// row: see notSuperseded in store/reads and the object_history view). The
// observation is the prior state of this change.
const supersedeUnknownSQL = `
INSERT INTO object_versions (cluster, uid, version_key, resource_version, origin, verb, changed_at, event_key,
    api_group, api_version, kind, resource, subresource, namespace, name, created, deleted, complete, object,
    secret_digested, rules, object_exact)
SELECT v.cluster, o.uid, sha256(v.event_key || convert_to(o.uid, 'UTF8')), v.resource_version, v.origin, v.verb,
    v.changed_at, v.event_key, v.api_group, v.api_version, CASE WHEN v.kind = '' THEN o.kind ELSE v.kind END,
    v.resource, v.subresource, v.namespace, v.name, v.created, v.deleted, v.complete, v.object,
    v.secret_digested, v.rules, v.object_exact
FROM observations o
JOIN object_versions v
  ON v.cluster = o.cluster AND v.event_key = $3 AND v.changed_at = $4 AND v.origin = 'change'
 AND v.uid LIKE 'unknown-%' AND v.name = o.object_name
WHERE o.cluster = $1 AND o.observation_id = $2
  AND NOT EXISTS (SELECT 1 FROM object_versions x
                  WHERE x.cluster = v.cluster AND x.uid = o.uid AND x.event_key = v.event_key)
ON CONFLICT DO NOTHING`

// deletedSQL records the deletion of the observed object by the event when
// the event recorded none for it: a deletecollection logged at Metadata
// names no object, and the admission review of each object it deleted is
// what says which went. The key is the one the event's own version of the
// object would have (model's versionKey: sha256(event key, uid)).
const deletedSQL = `
INSERT INTO object_versions (cluster, uid, version_key, resource_version, origin, verb, changed_at, event_key,
    api_group, api_version, kind, resource, namespace, name, deleted, complete, secret_digested, rules)
SELECT o.cluster, o.uid, sha256($3 || convert_to(o.uid, 'UTF8')), NULL, 'change', e.verb, e.stage_at, e.event_key,
    o.api_group, o.api_version, o.kind, o.resource, o.object_namespace, o.object_name, true, false,
    e.secret_digested, e.rules
FROM observations o
JOIN events e ON e.cluster = o.cluster AND e.event_key = $3 AND e.stage_at = $4
WHERE o.cluster = $1 AND o.observation_id = $2 AND e.verb IN ('delete', 'deletecollection')
  AND NOT EXISTS (SELECT 1 FROM object_versions v
                  WHERE v.cluster = o.cluster AND v.uid = o.uid AND v.event_key = e.event_key)
ON CONFLICT DO NOTHING`

// logPending makes an INSERT INTO object_versions above also write the
// tamper-evident log's pending row of each version it stored, in the same
// statement (as copyPending does for a batch): a version confirmation
// stores is logged like every other row, however long after the event.
func logPending(insert string) string {
	return "WITH stored AS (" + insert + "\nRETURNING cluster, uid, version_key, changed_at)\n" +
		"INSERT INTO log_pending (cluster, kind, uid, key, at)\n" +
		"SELECT cluster, " + strconv.Itoa(int(pendingVersion)) + ", uid, version_key, changed_at FROM stored"
}

// notifyDeleted makes deletedSQL (logged or not) also queue the
// notifications of each deletion it stored, in the same statement
// (confirmOutboxSQL): the deletions a Metadata-level deletecollection's
// observations record are its only changes, and are sent as its versions
// would be. The change supersedeUnknownSQL stores is not queued: its
// event's unknown- change was (queueNotifications), and is the same change.
func notifyDeleted(logged bool) string {
	const returning = "\nRETURNING cluster, uid, version_key, changed_at, event_key, verb, api_group, api_version, kind, resource, namespace, name, deleted"
	q := "WITH stored AS (" + deletedSQL + returning + ")"
	if logged {
		q += ",\npending AS (INSERT INTO log_pending (cluster, kind, uid, key, at)\n" +
			"SELECT cluster, " + strconv.Itoa(int(pendingVersion)) + ", uid, version_key, changed_at FROM stored)"
	}
	return q + confirmOutboxSQL
}

var (
	confirmVersionLoggedSQL   = logPending(confirmVersionSQL)
	supersedeUnknownLoggedSQL = logPending(supersedeUnknownSQL)
	deletedNotifySQL          = notifyDeleted(false)
	deletedLoggedSQL          = notifyDeleted(true)
)

const confirmedSQL = `
WITH o AS (DELETE FROM observations WHERE cluster = $1 AND observation_id = $2)
DELETE FROM observation_claims WHERE cluster = $1 AND observation_id = $2`

// confirm joins the pending claims and observations (of ids, or all when
// ids is nil) and turns each match into the record's versions, in tx.
// Concurrent transactions can each miss the other's row (an event and its
// observation stored at once): the maintenance pass confirms them later.
// logged (the Store's TamperLog) makes each version it stores also write
// its pending row of the tamper-evident log.
func confirm(ctx context.Context, tx pgx.Tx, ids []string, logged bool) (int, error) {
	type match struct {
		cluster, id string
		eventKey    []byte
		stageAt     time.Time
		dryRun      bool
	}
	var arg any
	if ids != nil {
		arg = ids
	}
	rows, err := tx.Query(ctx, matchSQL, arg)
	if err != nil {
		return 0, fmt.Errorf("match observations: %w", err)
	}
	var ms []match
	var m match
	if _, err := pgx.ForEachRow(rows, []any{&m.cluster, &m.id, &m.eventKey, &m.stageAt, &m.dryRun}, func() error {
		ms = append(ms, m)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("match observations: %w", err)
	}
	if len(ms) == 0 {
		return 0, nil
	}
	confirmSQL, supersedeSQL, delSQL := confirmVersionSQL, supersedeUnknownSQL, deletedNotifySQL
	if logged {
		confirmSQL, supersedeSQL, delSQL = confirmVersionLoggedSQL, supersedeUnknownLoggedSQL, deletedLoggedSQL
	}
	b := &pgx.Batch{}
	for _, m := range ms {
		b.Queue(confirmSQL, m.cluster, m.id, m.eventKey, m.stageAt)
		// A dry run is a true observation of the stored object, never a
		// change. (The filter drops dry-run events, so none names one.)
		// A deletion recorded under an unknown- uid is superseded first:
		// deletedSQL then finds the object's deletion stored.
		if !m.dryRun {
			b.Queue(supersedeSQL, m.cluster, m.id, m.eventKey, m.stageAt)
			b.Queue(delSQL, m.cluster, m.id, m.eventKey, m.stageAt)
		}
		b.Queue(confirmedSQL, m.cluster, m.id)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("confirm observations: %w", err)
	}
	return len(ms), nil
}

// ConfirmObservations joins every pending claim with its observation: the
// pass that catches an event and its observation stored at the same time.
func (s *Store) ConfirmObservations(ctx context.Context) (int, error) {
	var n int
	err := s.Transact(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = confirm(ctx, tx, nil, s.tamperLog)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	s.confirmed.Add(float64(n))
	return n, nil
}

// ExpireObservations deletes the observations received and the claims made
// before cutoff: an observation no audit event named by then never will
// (forged, dry run, or its event dropped), and a claim whose observation
// never came (dropped, the webhook down) leaves its change with state
// unknown. It returns how many observations expired.
func (s *Store) ExpireObservations(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.Transact(ctx, func(tx pgx.Tx) error {
		t, err := tx.Exec(ctx, `DELETE FROM observations WHERE received_at < $1`, cutoff)
		if err != nil {
			return err
		}
		n = t.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM observation_claims WHERE claimed_at < $1`, cutoff)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: expire observations: %w", err)
	}
	return n, nil
}
