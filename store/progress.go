package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SourceProgress is how far an audit source (webhook, firehose, pubsub,
// eventhubs) has delivered for a cluster: the stageTimestamp of the newest
// event stored from it, and when a delivery of it was last stored.
type SourceProgress struct {
	Source        string    `db:"source"`
	NewestEventAt time.Time `db:"newest_event_at"`
	DeliveredAt   time.Time `db:"delivered_at"`
}

// recordProgressSQL never moves a time back: a replica that stored an
// older delivery and writes late cannot undo a newer one. Nor does it put
// an event later than its delivery: an event stamped in the future (a
// skewed clock, a forged delivery) would otherwise make the source look
// current for ever. A row an older release wrote that way is taken as its
// delivery time (least of the row's own), and so heals at the next write.
const recordProgressSQL = `
INSERT INTO source_progress AS p (cluster, source, newest_event_at, delivered_at)
VALUES ($1, $2, least($3::timestamptz, $4::timestamptz), $4)
ON CONFLICT (cluster, source) DO UPDATE
SET newest_event_at = greatest(least(p.newest_event_at, p.delivered_at), excluded.newest_event_at),
    delivered_at = greatest(p.delivered_at, excluded.delivered_at)`

// RecordProgress records that events of source for cluster, the newest
// stamped newest, were stored at delivered. Call it after they are durable.
// A newest later than delivered is taken as delivered.
func (s *Store) RecordProgress(ctx context.Context, cluster, source string, newest, delivered time.Time) error {
	if _, err := s.pool.Exec(ctx, recordProgressSQL, cluster, source, newest.UTC(), delivered.UTC()); err != nil {
		return fmt.Errorf("store: record progress of %s: %w", source, err)
	}
	return nil
}

// Progress is how far each source has delivered for cluster, by source
// name, never an event later than its delivery (see recordProgressSQL); none: nothing was recorded (a record older than migration 00023,
// or a cluster no source delivered).
func (s *Store) Progress(ctx context.Context, cluster string) ([]SourceProgress, error) {
	rows, err := s.pool.Query(ctx, `SELECT source, least(newest_event_at, delivered_at) AS newest_event_at, delivered_at FROM source_progress
		WHERE cluster = $1 ORDER BY source`, cluster)
	if err != nil {
		return nil, fmt.Errorf("store: progress: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SourceProgress])
	if err != nil {
		return nil, fmt.Errorf("store: progress: %w", err)
	}
	return out, nil
}
