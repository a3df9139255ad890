package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// listPartitionsSQL lists the daily partitions of events.
const listPartitionsSQL = `
SELECT c.relname
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
WHERE p.relname = 'events' AND c.relname ~ '^events_p[0-9]{8}$'
ORDER BY c.relname`

// expireVersionsSQL deletes the versions older than the cutoff except the
// newest one of each object that still exists, which later changes need as
// their prior state. Bounded per call so it never holds long locks.
const expireVersionsSQL = `
DELETE FROM object_versions v
USING (
    SELECT o.cluster, o.uid, o.version_key
    FROM object_versions o
    WHERE o.changed_at < $1
      AND (o.deleted OR EXISTS (
          SELECT 1 FROM object_versions n
          WHERE n.cluster = o.cluster AND n.uid = o.uid
            AND ((n.complete AND n.resource_version > o.resource_version) OR n.deleted)))
    LIMIT $2
) x
WHERE v.cluster = x.cluster AND v.uid = x.uid AND v.version_key = x.version_key`

// RetentionResult says what ApplyRetention removed.
type RetentionResult struct {
	DroppedPartitions []string
	DeletedVersions   int64
}

// MinRetention is the shortest maxAge ApplyRetention accepts: a shorter one
// (zero, from a caller that knows no rule) would delete the whole record.
const MinRetention = time.Hour

// ApplyRetention drops the event partitions that end before now-maxAge and
// deletes object versions older than that, keeping each live object's newest
// version. maxAge is the longest retention of any rule, at least MinRetention.
func (s *Store) ApplyRetention(ctx context.Context, now time.Time, maxAge time.Duration) (RetentionResult, error) {
	var res RetentionResult
	if maxAge < MinRetention {
		return res, fmt.Errorf("store: retention %s is shorter than %s: nothing deleted", maxAge, MinRetention)
	}
	cutoff := now.Add(-maxAge)
	rows, err := s.pool.Query(ctx, listPartitionsSQL)
	if err != nil {
		return res, fmt.Errorf("store: list partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return res, fmt.Errorf("store: list partitions: %w", err)
	}
	for _, name := range names {
		d, err := time.Parse("20060102", name[len("events_p"):])
		if err != nil || !d.AddDate(0, 0, 1).Before(cutoff) {
			continue
		}
		if _, err := s.pool.Exec(ctx, "DROP TABLE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return res, fmt.Errorf("store: drop partition %s: %w", name, err)
		}
		s.parts.mu.Lock()
		delete(s.parts.known, name)
		s.parts.mu.Unlock()
		res.DroppedPartitions = append(res.DroppedPartitions, name)
	}
	for {
		tag, err := s.pool.Exec(ctx, expireVersionsSQL, cutoff, 5000)
		if err != nil {
			return res, fmt.Errorf("store: expire versions: %w", err)
		}
		res.DeletedVersions += tag.RowsAffected()
		if tag.RowsAffected() < 5000 {
			return res, nil
		}
	}
}
