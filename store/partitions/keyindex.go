package partitions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// KeyIndex is the partitioned index of the failed events by key
// (migrations/00021_events_failed_key.sql), which resolves the short names
// of attempts.
const KeyIndex = "events_failed_key"

// keyIndexDef is what KeyIndex indexes, for each partition's own index.
// It must stay the migration's definition: ATTACH PARTITION refuses an
// index that is not the same.
const keyIndexDef = "(cluster, event_key) WHERE response_code >= 300"

// KeyIndexLockID serialises the building of KeyIndex across sink replicas
// (a session's advisory lock, distinct from the store's others): one
// builds, the others leave it to that one.
const KeyIndexLockID = 0x6f70747265630005

// keyIndexLockTimeout bounds the waits for a lock of the short DDL of the
// build (ATTACH PARTITION, dropping an invalid index): a write batch that
// holds the partition longer makes the build stop and try again at the
// next upkeep, rather than queue writes behind it.
const keyIndexLockTimeout = "5s"

// unattachedSQL lists the partitions of events with no index attached to
// KeyIndex, oldest first.
const unattachedSQL = `
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'public.events'::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_index x JOIN pg_inherits xi ON xi.inhrelid = x.indexrelid
                  WHERE x.indrelid = c.oid AND xi.inhparent = 'public.` + KeyIndex + `'::regclass)
ORDER BY c.relname`

// indexStateSQL says whether the index $1 (in public) exists and is valid.
const indexStateSQL = `
SELECT x.indisvalid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_index x ON x.indexrelid = c.oid
WHERE n.nspname = 'public' AND c.relname = $1`

// KeyIndexStep is told of each partition's index BuildKeyIndex has built
// and attached (tests follow the build with it).
type KeyIndexStep func(partition string)

// BuildKeyIndex finishes KeyIndex the way PostgreSQL documents for a
// partitioned index on a table that takes writes: for each partition with
// no index attached, CREATE INDEX CONCURRENTLY (which lets writes go on
// while it builds), then ALTER INDEX ... ATTACH PARTITION; when the last is
// attached, PostgreSQL marks KeyIndex valid. The migration made KeyIndex on
// the parent alone, so every partition made since has its index already.
//
// conn is a session of its own (the build runs outside any transaction)
// without a statement timeout: a partition's build takes as long as its
// rows. Every step can be repeated: a build stopped anywhere (a crash, a
// cancel, a lock wait cut short) leaves partitions with their index
// attached, at most one index built but not attached (attached next time)
// and at most one left invalid by an interrupted CONCURRENTLY (dropped and
// built again next time). Only one replica builds at a time: when another
// holds KeyIndexLockID, BuildKeyIndex returns done false and no error. A
// partition dropped meanwhile (retention) is skipped. step, when set, is
// called after each partition.
func BuildKeyIndex(ctx context.Context, conn *pgx.Conn, log *slog.Logger, step KeyIndexStep) (done bool, err error) {
	var locked bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(KeyIndexLockID)).Scan(&locked); err != nil {
		return false, fmt.Errorf("store: build %s: lock: %w", KeyIndex, err)
	}
	if !locked {
		return false, nil // another replica builds it
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(KeyIndexLockID))
	}()
	rows, err := conn.Query(ctx, unattachedSQL)
	if err != nil {
		return false, fmt.Errorf("store: build %s: %w", KeyIndex, err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, fmt.Errorf("store: build %s: %w", KeyIndex, err)
	}
	for _, p := range parts {
		err := buildOne(ctx, conn, p)
		if isUndefinedTable(err) {
			log.Info("a partition of events went while its index was built (retention)", "partition", p)
			continue
		}
		if err != nil {
			return false, fmt.Errorf("store: build %s: partition %s: %w", KeyIndex, p, err)
		}
		log.Info("index of a partition of events built and attached", "index", KeyIndex, "partition", p)
		if step != nil {
			step(p)
		}
	}
	var valid bool
	if err := conn.QueryRow(ctx, indexStateSQL, KeyIndex).Scan(&valid); err != nil {
		return false, fmt.Errorf("store: build %s: state: %w", KeyIndex, err)
	}
	return valid, nil
}

// buildOne builds and attaches the index of partition p: its own index,
// named after it, dropped first when an interrupted build left it invalid.
func buildOne(ctx context.Context, conn *pgx.Conn, p string) error {
	child := p + "_failed_key"
	ci, pi := pgx.Identifier{"public", child}.Sanitize(), pgx.Identifier{"public", p}.Sanitize()
	var valid bool
	err := conn.QueryRow(ctx, indexStateSQL, child).Scan(&valid)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("state of %s: %w", child, err)
	case !valid:
		// Left by a CREATE INDEX CONCURRENTLY that did not finish: never
		// used by a query, still updated by every write. Build it again.
		if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+ci); err != nil {
			return fmt.Errorf("drop invalid %s: %w", child, err)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE INDEX CONCURRENTLY IF NOT EXISTS "+pgx.Identifier{child}.Sanitize()+" ON "+pi+" "+keyIndexDef); err != nil {
		return fmt.Errorf("create %s: %w", child, err)
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+keyIndexLockTimeout+"'"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "ALTER INDEX "+pgx.Identifier{"public", KeyIndex}.Sanitize()+" ATTACH PARTITION "+ci); err != nil {
			return fmt.Errorf("attach %s: %w", child, err)
		}
		return nil
	})
}

// isUndefinedTable reports whether err is PostgreSQL finding no such
// relation (42P01).
func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
