package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store/model"
)

// RuleStat counts the events one rule selected.
type RuleStat struct {
	Events int64
	Last   time.Time
}

const addRuleStatsSQL = `
INSERT INTO rule_stats AS s (cluster, rule, recorded_events, last_recorded_at)
SELECT $1, r, n, t FROM unnest($2::text[], $3::bigint[], $4::timestamptz[]) AS x(r, n, t)
ON CONFLICT (cluster, rule) DO UPDATE
SET recorded_events = s.recorded_events + excluded.recorded_events,
    last_recorded_at = greatest(s.last_recorded_at, excluded.last_recorded_at)`

// AddRuleStats adds counts to the per-rule statistics of a cluster.
func (s *Store) AddRuleStats(ctx context.Context, cluster string, stats map[string]RuleStat) error {
	if len(stats) == 0 {
		return nil
	}
	var rules []string
	var counts []int64
	var lasts []time.Time
	for r, st := range stats {
		rules, counts, lasts = append(rules, r), append(counts, st.Events), append(lasts, st.Last)
	}
	if _, err := s.pool.Exec(ctx, addRuleStatsSQL, cluster, rules, counts, lasts); err != nil {
		return fmt.Errorf("store: add rule stats: %w", err)
	}
	return nil
}

// RuleStats returns the per-rule statistics of a cluster.
func (s *Store) RuleStats(ctx context.Context, cluster string) (map[string]RuleStat, error) {
	rows, err := s.pool.Query(ctx, `SELECT rule, recorded_events, coalesce(last_recorded_at, 'epoch') FROM rule_stats WHERE cluster = $1`, cluster)
	if err != nil {
		return nil, fmt.Errorf("store: rule stats: %w", err)
	}
	out := map[string]RuleStat{}
	var r string
	var st RuleStat
	_, err = pgx.ForEachRow(rows, []any{&r, &st.Events, &st.Last}, func() error {
		out[r] = st
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: rule stats: %w", err)
	}
	return out, nil
}

const insertBaselineSQL = `
INSERT INTO object_versions (cluster, uid, version_key, resource_version, origin, verb, changed_at,
    api_group, api_version, kind, resource, namespace, name, complete, object, secret_digested, rules, object_exact)
VALUES ($1, $2, $3, $4, 'baseline', 'baseline', $5, $6, $7, $8, $9, $10, $11, true, $12, $13, $14, $15)
ON CONFLICT DO NOTHING
RETURNING true`

const versionExistsSQL = `
SELECT EXISTS (SELECT 1 FROM object_versions WHERE cluster = $1 AND uid = $2 AND resource_version = $3)`

// WriteBaseline stores baseline observations (objects as a LIST returned
// them), skipping objects whose state at that resourceVersion is already
// stored. It returns how many were new.
func (s *Store) WriteBaseline(ctx context.Context, vs []model.Version) (int, error) {
	if len(vs) == 0 {
		return 0, nil
	}
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for i := range vs {
			v := &vs[i]
			b.Queue(versionExistsSQL, v.Cluster, v.UID, v.ResourceVersion)
		}
		res := tx.SendBatch(ctx, b)
		fresh := make([]*model.Version, 0, len(vs))
		for i := range vs {
			var exists bool
			if err := res.QueryRow().Scan(&exists); err != nil {
				res.Close()
				return err
			}
			if !exists {
				fresh = append(fresh, &vs[i])
			}
		}
		if err := res.Close(); err != nil {
			return err
		}
		ins := &pgx.Batch{}
		for _, v := range fresh {
			ins.Queue(insertBaselineSQL, v.Cluster, v.UID, v.Key, v.ResourceVersion, v.ChangedAt, v.APIGroup,
				v.APIVersion, v.Kind, v.Resource, v.Namespace, v.Name, nullJSON(v.Object), v.SecretDigested, nonNil(v.Rules), nullJSON(v.ObjectExact))
		}
		res = tx.SendBatch(ctx, ins)
		stored := make([]*model.Version, 0, len(fresh))
		for _, v := range fresh {
			var inserted bool
			err := res.QueryRow().Scan(&inserted)
			switch {
			case err == nil:
				stored = append(stored, v)
			case !errors.Is(err, pgx.ErrNoRows): // ON CONFLICT: stored already
				res.Close()
				return err
			}
		}
		if err := res.Close(); err != nil {
			return err
		}
		n = len(stored)
		if !s.tamperLog {
			return nil
		}
		// The tamper-evident log's pending rows of the baselines stored,
		// without digests: the integrator reads them back (the insert
		// leaves columns to their defaults, which versionDigest does not
		// know).
		return copyPending(ctx, tx, nil, stored, time.Time{}, rowDigests{})
	})
	if err != nil {
		return 0, fmt.Errorf("store: write baseline: %w", err)
	}
	return n, nil
}
