package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// listPartitionsSQL lists the daily event tables of the schema: attached
// partitions, partitions whose concurrent detach was interrupted (pending),
// and tables a previous run detached but did not get to drop.
const listPartitionsSQL = `
SELECT c.relname, i.inhrelid IS NOT NULL AS attached, coalesce(i.inhdetachpending, false) AS pending
FROM pg_class c
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
    AND i.inhparent = to_regclass('events')
WHERE c.relnamespace = to_regnamespace(current_schema())
  AND c.relkind = 'r' AND c.relname ~ '^events_p[0-9]{8}$'
ORDER BY c.relname`

type eventTable struct {
	Name     string `db:"relname"`
	Attached bool   `db:"attached"`
	Pending  bool   `db:"pending"`
}

// expireVersionsSQL deletes the versions that were superseded before the
// cutoff ($1): a version older than the cutoff stays as long as it was the
// object's state at the cutoff, because a change inside the retention window
// (an edit, or a delete answered without the object) needs it as its prior
// state. Deletions older than the cutoff go, with the states before them.
// Bounded per call ($2) so it never holds long locks.
const expireVersionsSQL = `
DELETE FROM object_versions v
USING (
    SELECT o.cluster, o.uid, o.version_key
    FROM object_versions o
    WHERE o.changed_at < $1
      AND (o.deleted OR EXISTS (
          SELECT 1 FROM object_versions n
          WHERE n.cluster = o.cluster AND n.uid = o.uid AND n.changed_at < $1
            AND ((n.complete AND n.resource_version > o.resource_version) OR n.deleted)))
    LIMIT $2
) x
WHERE v.cluster = x.cluster AND v.uid = x.uid AND v.version_key = x.version_key`

// expireRestoresSQL deletes the restores and plans made before the
// cutoff ($1), those still running excepted: they are the record of what
// was put back, and are kept as long as the record itself. Bounded per call
// ($2). It runs as the owner of the API's schema and names nothing else.
const expireRestoresSQL = `
DELETE FROM options_record_api.restores r
USING (SELECT cluster, id FROM options_record_api.restores
       WHERE created_at < $1 AND state <> 'running' LIMIT $2) x
WHERE r.cluster = x.cluster AND r.id = x.id`

// recordRetentionSQL records the cutoff of a retention pass for the
// restore API, which expires its restores and plans with the record.
const recordRetentionSQL = `
INSERT INTO record_retention (cutoff) VALUES ($1)
ON CONFLICT (singleton) DO UPDATE SET cutoff = EXCLUDED.cutoff, applied_at = now()`

// RetentionCutoff returns the cutoff of the record's last retention pass
// (record_retention, which the ingest role writes), and false before the
// first pass or on a record whose ingest has not migrated yet.
func (s *Store) RetentionCutoff(ctx context.Context) (time.Time, bool, error) {
	rows, err := s.pool.Query(ctx, "SELECT cutoff FROM record_retention")
	if err == nil {
		var got []pgtype.Timestamptz
		got, err = pgx.CollectRows(rows, pgx.RowTo[pgtype.Timestamptz])
		if err == nil {
			switch {
			case len(got) == 0 || !got[0].Valid || got[0].InfinityModifier == pgtype.NegativeInfinity:
				return time.Time{}, false, nil
			case got[0].InfinityModifier == pgtype.Infinity:
				return time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), true, nil
			}
			return got[0].Time, true, nil
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // ingest has not migrated yet
		return time.Time{}, false, nil
	}
	return time.Time{}, false, fmt.Errorf("store: retention cutoff: %w", err)
}

// ExpireRestores deletes the restores and plans made before the cutoff of
// the record's last retention pass, read through record (none before the
// first pass), and never any made after latest: the cutoff is what the
// ingest role wrote, and a cutoff in the future (or infinity) must not
// erase the restore log. The restore API runs it, with latest its own
// retention setting's (now − --max-retention): its role owns those rows,
// which the ingest role may not write. The cutoff reaches the API's pool
// as a parameter only.
func (a *APIStore) ExpireRestores(ctx context.Context, record *Store, latest time.Time) (int64, error) {
	cutoff, ok, err := record.RetentionCutoff(ctx)
	if err != nil || !ok {
		return 0, err
	}
	if cutoff.After(latest) {
		cutoff = latest
	}
	var n int64
	for {
		tag, err := a.pool.Exec(ctx, expireRestoresSQL, cutoff, 5000)
		if err != nil {
			return n, fmt.Errorf("store: expire restores: %w", err)
		}
		n += tag.RowsAffected()
		if tag.RowsAffected() < 5000 {
			return n, nil
		}
	}
}

// RetentionResult says what ApplyRetention removed.
type RetentionResult struct {
	DroppedPartitions []string
	DeletedVersions   int64
}

// retentionLock is the advisory lock key of ApplyRetention.
const retentionLock int64 = 0x6f72_7265_7465_6e74 // "oretent"

// MinRetention is the shortest maxAge ApplyRetention accepts: a shorter one
// (zero, from a caller that knows no rule) would delete the whole record.
const MinRetention = time.Hour

// ApplyRetention drops the event partitions that end before now-maxAge and
// deletes the object versions superseded before then, keeping the state
// each object had at that time unless it was deleted before it. It records
// the cutoff in record_retention, from which the restore API expires the
// restores and plans made before then (ExpireRestores). maxAge is the
// longest retention of any rule, at least MinRetention.
func (s *Store) ApplyRetention(ctx context.Context, now time.Time, maxAge time.Duration) (RetentionResult, error) {
	var res RetentionResult
	if maxAge < MinRetention {
		return res, fmt.Errorf("store: retention %s is shorter than %s: nothing deleted", maxAge, MinRetention)
	}
	// One replica at a time: two concurrent detaches of one partition fail
	// each other. The lock is held by a session, so a crashed replica's
	// lock goes with its connection.
	lockConn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("store: retention: %w", err)
	}
	defer lockConn.Release()
	var locked bool
	if err := lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", retentionLock).Scan(&locked); err != nil {
		return res, fmt.Errorf("store: retention lock: %w", err)
	}
	if !locked {
		return res, nil // another replica is applying it
	}
	defer func() {
		_, _ = lockConn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", retentionLock)
	}()
	cutoff := now.Add(-maxAge)
	if s.tamperLog {
		if err := s.logCutoff(ctx, cutoff); err != nil {
			return res, err
		}
	}
	rows, err := s.pool.Query(ctx, listPartitionsSQL)
	if err != nil {
		return res, fmt.Errorf("store: list partitions: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByName[eventTable])
	if err != nil {
		return res, fmt.Errorf("store: list partitions: %w", err)
	}
	var errs []error
	for _, tbl := range tables {
		name := tbl.Name
		d, err := time.Parse("20060102", name[len("events_p"):])
		if err != nil || !d.AddDate(0, 0, 1).Before(cutoff) {
			continue
		}
		// Detach first, concurrently: that takes no lock that blocks
		// writes or reads of events. A plain DROP needs an exclusive lock
		// on events, so it would queue behind any long query of the record
		// and every batch would queue behind it.
		ident := pgx.Identifier{name}.Sanitize()
		switch {
		case tbl.Pending: // a detach interrupted by a restart
			_, err = s.pool.Exec(ctx, "ALTER TABLE events DETACH PARTITION "+ident+" FINALIZE")
		case tbl.Attached:
			_, err = s.pool.Exec(ctx, "ALTER TABLE events DETACH PARTITION "+ident+" CONCURRENTLY")
		}
		if err == nil {
			_, err = s.pool.Exec(ctx, "DROP TABLE IF EXISTS "+ident)
		}
		if err != nil {
			// The next hour's run tries it again; the versions expire now.
			errs = append(errs, fmt.Errorf("store: drop partition %s: %w", name, err))
			continue
		}
		s.parts.Dropped(name)
		res.DroppedPartitions = append(res.DroppedPartitions, name)
	}
	for {
		tag, err := s.pool.Exec(ctx, expireVersionsSQL, cutoff, 5000)
		if err != nil {
			return res, errors.Join(append(errs, fmt.Errorf("store: expire versions: %w", err))...)
		}
		res.DeletedVersions += tag.RowsAffected()
		if tag.RowsAffected() < 5000 {
			break
		}
	}
	if _, err := s.pool.Exec(ctx, recordRetentionSQL, cutoff); err != nil {
		errs = append(errs, fmt.Errorf("store: record the retention cutoff: %w", err))
	}
	return res, errors.Join(errs...)
}

// logCutoffSQL asks the tamper-evident log's integrator to log a retention
// cutoff in the log of each cluster that has one (or rows to log).
const logCutoffSQL = `
INSERT INTO log_pending (cluster, kind, at)
SELECT c.cluster, $1, $2 FROM (SELECT cluster FROM log_segments UNION SELECT cluster FROM log_pending
    UNION SELECT cluster FROM log_pending_batches) c`

// LogCutoffWait is how long retention waits for the integrator to log its
// cutoff before it gives up this pass, deleting nothing.
var LogCutoffWait = time.Minute

// logCutoff logs a retention cutoff before retention deletes: it writes
// the pending cutoffs and waits until an integrator (this replica's or
// another's) has appended them, so that verify tells rows removed by
// retention from rows removed by someone. It fails, and retention deletes
// nothing, when no integrator logs them within LogCutoffWait.
func (s *Store) logCutoff(ctx context.Context, cutoff time.Time) error {
	if _, err := s.pool.Exec(ctx, logCutoffSQL, pendingCutoff, cutoff); err != nil {
		return fmt.Errorf("store: log the retention cutoff: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, LogCutoffWait)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		var left int
		rows, err := s.pool.Query(wait, "SELECT count(*) FROM log_pending WHERE kind = $1 AND at = $2", pendingCutoff, cutoff)
		if err == nil {
			left, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
		}
		if err == nil && left == 0 {
			return nil
		}
		if err == nil {
			select {
			case <-wait.Done():
				err = wait.Err()
			case <-t.C:
				continue
			}
		}
		return fmt.Errorf("store: the tamper-evident log did not log the retention cutoff %s (is an integrator running?): nothing deleted: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
}
