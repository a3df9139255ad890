package partitions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
)

// LockID serialises partition DDL across sink replicas (an advisory lock
// key, distinct from the store's others).
const LockID = 0x6f70747265630003

// Manager remembers which daily partitions of events exist, so the write
// path only runs DDL for a day it has not seen (backfills, clock skew).
type Manager struct {
	ahead int
	log   *slog.Logger
	// failures counts the days whose partition could not be made, at each
	// attempt.
	failures prometheus.Counter
	mu       sync.Mutex
	known    map[string]bool
}

// New returns a Manager that keeps ahead days of partitions after today,
// logs to log and counts each day it fails to make in failures.
func New(ahead int, log *slog.Logger, failures prometheus.Counter) *Manager {
	return &Manager{ahead: ahead, log: log, failures: failures, known: map[string]bool{}}
}

// Day is the UTC day of t: the range of one partition.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func partitionName(d time.Time) string { return "events_p" + d.Format("20060102") }

// Around are the days from yesterday to ahead days after now.
func (p *Manager) Around(now time.Time) []time.Time {
	var days []time.Time
	for i := -1; i <= p.ahead; i++ {
		days = append(days, now.AddDate(0, 0, i))
	}
	return days
}

// Forget drops the days of times from what the store knows exists.
func (p *Manager) Forget(times []time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range times {
		delete(p.known, partitionName(Day(t)))
	}
}

// Dropped forgets the partition named name (events_pYYYYMMDD), which
// retention dropped.
func (p *Manager) Dropped(name string) {
	p.mu.Lock()
	delete(p.known, name)
	p.mu.Unlock()
}

// checkPartitionSQL says whether the relation $1 is a partition of
// public.events, and who owns it.
const checkPartitionSQL = `
SELECT c.relispartition AND EXISTS (SELECT 1 FROM pg_inherits i
                                    WHERE i.inhrelid = c.oid AND i.inhparent = 'public.events'::regclass),
       pg_get_userbyid(c.relowner)
FROM pg_class c WHERE c.oid = $1::regclass`

// ErrTaken is the name of a day's partition of events taken by a
// relation that is not one (made by another role that may create in the
// schema public). The day's events cannot be stored until an administrator
// drops it; it is the database's state, not the events' fault: retryable,
// never a reason to drop them.
var ErrTaken = errors.New("store: a partition's name is taken (drop that relation)")

// IsMissing reports whether err is PostgreSQL finding no partition of
// events for a row (23514, "no partition of relation").
func IsMissing(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.Contains(pe.Message, "no partition of relation")
}

// Beginner starts a transaction: the store's gated pool, or its raw one
// while Prepare runs.
type Beginner interface {
	Begin(context.Context) (pgx.Tx, error)
}

// Ensure creates the missing partitions of times through db (the
// gated pool, or the raw one while Prepare runs), each day in a
// transaction of its own: a day that cannot be made (a squatted name)
// never rolls back or blocks another. Each day that fails is logged, with
// the owner of the relation that took its name, and counted; it stays
// unknown, so the next call tries it again. It returns the failures of
// the days up to failUpTo (the zero time: of every day), joined.
func (p *Manager) Ensure(ctx context.Context, db Beginner, times []time.Time, failUpTo time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var missing []time.Time
	seen := map[time.Time]bool{}
	for _, t := range times {
		d := Day(t)
		if !p.known[partitionName(d)] && !seen[d] {
			missing = append(missing, d)
			seen[d] = true
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].Before(missing[j]) })
	var errs []error
	for _, d := range missing {
		name := partitionName(d)
		owner, err := makePartition(ctx, db, d)
		if err == nil {
			p.known[name] = true
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("store: ensure event partitions: %w", err)
		}
		p.failures.Inc()
		attrs := []any{"partition", "public." + name, "err", err}
		if owner != "" {
			attrs = append(attrs, "owner", owner)
		}
		p.log.Error("a day's partition of events cannot be made: its events are refused (retryable) until it is; tried again at the next upkeep or batch of that day", attrs...)
		if failUpTo.IsZero() || !d.After(failUpTo) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("store: ensure event partitions: %w", errors.Join(errs...))
	}
	return nil
}

// makePartition creates day d's partition of events in a transaction of its
// own, serialised with other replicas'. When its name is taken by a
// relation that is not a partition of public.events, it returns that
// relation's owner and an error wrapping ErrTaken.
func makePartition(ctx context.Context, db Beginner, d time.Time) (owner string, err error) {
	name := partitionName(d)
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(LockID)); err != nil {
			return err
		}
		// Schema-qualified, whatever the session's search_path.
		ident := "public." + pgx.Identifier{name}.Sanitize()
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", "public."+name).Scan(&exists); err != nil {
			return fmt.Errorf("look up partition %s: %w", name, err)
		}
		if !exists {
			// Made as a table of its own, then attached: ATTACH PARTITION
			// takes SHARE UPDATE EXCLUSIVE on events, which neither the
			// batches' inserts nor a long read (a full verify's cursor)
			// conflict with, where CREATE TABLE ... PARTITION OF takes
			// ACCESS EXCLUSIVE: it queued behind such a read, and every
			// batch queued behind it. The attach adds the partitioned
			// indexes to the empty table.
			create := fmt.Sprintf("CREATE TABLE %s (LIKE public.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)", ident)
			attach := fmt.Sprintf("ALTER TABLE public.events ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')",
				ident, d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339))
			for _, sql := range []string{create, attach} {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return fmt.Errorf("create partition %s: %w", name, err)
				}
			}
		}
		// A relation of that name another role made (a squat) would take
		// none of the day's events.
		var partition bool
		if err := tx.QueryRow(ctx, checkPartitionSQL, "public."+name).Scan(&partition, &owner); err != nil {
			return fmt.Errorf("check partition %s: %w", name, err)
		}
		if !partition {
			return fmt.Errorf("public.%s, owned by %q, is not a partition of public.events: %w", name, owner, ErrTaken)
		}
		owner = ""
		return nil
	})
	return owner, err
}
