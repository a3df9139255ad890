package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/wait"
)

// RulesChannel is the PostgreSQL notification channel on which a sink
// replica announces rule objects it shared (the payload is the cluster).
const RulesChannel = "options_record_rules"

// RuleObject is an OptionsRecordController as a replica observed it: its
// JSON and resourceVersion, or a deletion.
type RuleObject struct {
	Cluster         string `db:"cluster"`
	UID             string `db:"uid"`
	ResourceVersion int64  `db:"resource_version"`
	Deleted         bool   `db:"deleted"`
	Object          []byte `db:"object"` // nil when Deleted
}

// shareRuleObjectsSQL keeps the newest copy of each object: a row is
// replaced by a newer resourceVersion or by its deletion, never after it.
const shareRuleObjectsSQL = `
INSERT INTO rule_objects AS r (cluster, uid, resource_version, deleted, object)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::boolean[], $5::jsonb[])
ON CONFLICT (cluster, uid) DO UPDATE
SET resource_version = EXCLUDED.resource_version, deleted = EXCLUDED.deleted,
    object = EXCLUDED.object, observed_at = now()
WHERE NOT r.deleted AND (EXCLUDED.deleted OR EXCLUDED.resource_version > r.resource_version)`

// ShareRuleObjects stores objs (newer copies win, deletions are final) and
// notifies the other replicas on RulesChannel when the transaction commits.
func (s *Store) ShareRuleObjects(ctx context.Context, objs []RuleObject) error {
	if len(objs) == 0 {
		return nil
	}
	var clusters, uids []string
	var rvs []int64
	var deleted []bool
	var objects [][]byte
	notify := map[string]bool{}
	for _, o := range objs {
		if o.Deleted {
			o.Object = nil
		}
		clusters, uids, rvs = append(clusters, o.Cluster), append(uids, o.UID), append(rvs, o.ResourceVersion)
		deleted, objects = append(deleted, o.Deleted), append(objects, o.Object)
		notify[o.Cluster] = true
	}
	err := s.Transact(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, shareRuleObjectsSQL, clusters, uids, rvs, deleted, objects); err != nil {
			return err
		}
		for c := range notify {
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", RulesChannel, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: share rule objects: %w", err)
	}
	return nil
}

// RuleObjects returns every shared rule object, deletions included.
func (s *Store) RuleObjects(ctx context.Context) ([]RuleObject, error) {
	rows, err := s.pool.Query(ctx, `SELECT cluster, uid, resource_version, deleted, object FROM rule_objects ORDER BY cluster, uid`)
	if err != nil {
		return nil, fmt.Errorf("store: rule objects: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[RuleObject])
	if err != nil {
		return nil, fmt.Errorf("store: rule objects: %w", err)
	}
	return out, nil
}

// ListenRuleObjects calls fn once listening on RulesChannel, then on every
// notification, until ctx is cancelled. A lost connection is re-established
// (fn is called again then: notifications may have been missed meanwhile).
func (s *Store) ListenRuleObjects(ctx context.Context, fn func()) error {
	bo := listenBackoff
	for {
		start := time.Now()
		err := s.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > time.Minute {
			bo = listenBackoff // it worked for a while: a new failure
		}
		backoff := bo.Step()
		s.log.Warn("listening for shared rule changes; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

// listenBackoff spaces ListenRuleObjects' reconnections: 1 s doubling to
// 30 s, each up to half again longer at random, so that replicas that
// lost the database together do not reconnect together.
var listenBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 30 * time.Second}

func (s *Store) listenOnce(ctx context.Context, fn func()) error {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries a LISTEN: it is not given back to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+RulesChannel); err != nil {
		return err
	}
	fn()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if n.Channel == RulesChannel {
			fn()
		}
	}
}
