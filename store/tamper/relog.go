package tamper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// A row older than the newest retention cutoff already logged can still
// commit after that cutoff's pass (an import of old records, a retention
// shortened since, a journal replay): its leaf is then logged after the
// cutoff, and verify accepts a row gone from the record only when a
// cutoff logged after its leaf covers it. Retention deletes such a row
// (it is older than the cutoff it logged), so verify would report it
// removed by someone until the next retention pass logs a newer cutoff.
// So a pass that logs a row the newest cutoff logged covers logs that
// cutoff again, after the row (relogCutoff).

// newestCutoffSQL reads the newest retention cutoff logged in the leaves
// from $2 on: the latest of the newest segment that holds one. The
// segments are read newest first, by the primary key, until one holds a
// cutoff: retention logs one an hour, so few are read even the first time.
const newestCutoffSQL = `
SELECT (SELECT max(l.at) FROM unnest(s.kinds, s.ats) AS l(kind, at) WHERE l.kind = 3 AND isfinite(l.at))
FROM log_segments s
WHERE s.cluster = $1 AND s.first_index >= $2 AND 3::smallint = ANY(s.kinds)
ORDER BY s.first_index DESC LIMIT 1`

// relogState is what an Integrator knows of each cluster's newest logged
// cutoff (under mu), and how many times it read the log for it.
type relogState struct {
	mu       sync.Mutex
	newest   map[string]loggedCutoff
	lookups  atomic.Int64
	failures atomic.Int64 // lookups that failed (relogCutoff)
}

// loggedCutoff is the newest cutoff (zero: none) in a log's first size
// leaves.
type loggedCutoff struct {
	size int64
	at   time.Time
}

// cutoffLookups is how many times the integrator read the log for a
// cluster's newest cutoff.
func (in *Integrator) cutoffLookups() int64 { return in.relog.lookups.Load() }

// relogCutoff returns the leaves of a pass, in their order, with the newest
// cutoff logged in the log of size leaves added after them when it covers
// one of their rows (is later than its time, as verify compares) and the
// pass logs no cutoff as late. It is never one later than latest, the
// latest cutoff the integrator logs now: one an integrator logged before
// that check, or with its retention set wrong, is not logged again.
//
// A cutoff is never later than now less MinRetention when it is logged
// (cutoffLimit), so a pass whose rows are all newer than probeBefore
// (which leaves half of that for replicas' clocks) reads nothing; one with
// an older row reads the segments appended since the integrator last
// looked (other replicas log cutoffs too).
func (in *Integrator) relogCutoff(ctx context.Context, tx pgx.Tx, cluster string, size int64, leaves []leaf, latest time.Time) ([]leaf, error) {
	var oldest, passCutoff time.Time
	for _, l := range leaves {
		switch {
		case l.ref.Kind == KindCutoff:
			passCutoff = maxTime(passCutoff, l.ref.At)
		case oldest.IsZero() || l.ref.At.Before(oldest):
			oldest = l.ref.At
		}
	}
	if oldest.IsZero() || !oldest.Before(in.probeBefore()) {
		return leaves, nil
	}
	// Best effort: a lookup that fails (a segment edited by whoever writes
	// the database, so that its cutoff cannot be read) logs the pass
	// without the cutoff again, rather than stop every pass of the
	// cluster; its late rows, if retention deletes them, are reported by
	// verify until the next cutoff, and the edited segment by any full
	// verify. The lookup runs in a savepoint, so that its failure leaves
	// the pass's transaction usable.
	var c time.Time
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		var err error
		c, err = in.newestCutoff(ctx, sp, cluster, size)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		in.relog.failures.Add(1)
		in.failures.Add(1) // a sign of an edited segment: alert on it too
		in.o.Logger.Error("tamper log: the newest logged retention cutoff could not be read; this pass does not log it again after its late rows (verify may report them if retention deletes them before the next cutoff)",
			"cluster", cluster, "err", err)
		return leaves, nil
	}
	if c.IsZero() || c.After(latest) || !oldest.Before(c) || !passCutoff.Before(c) {
		return leaves, nil
	}
	ref := Ref{Kind: KindCutoff, Cluster: cluster, At: c}
	// After every row older than c (leaves sort by time first).
	i, _ := slices.BinarySearchFunc(leaves, ref, func(l leaf, r Ref) int { return compareRefs(l.ref, r) })
	return slices.Insert(leaves, i, leaf{ref, cutoffDigest(ref)}), nil
}

// newestCutoff returns the newest cutoff logged in a cluster's log of size
// leaves (zero: none), reading only the segments after those it read last.
func (in *Integrator) newestCutoff(ctx context.Context, tx pgx.Tx, cluster string, size int64) (time.Time, error) {
	r := &in.relog
	r.mu.Lock()
	known := r.newest[cluster]
	r.mu.Unlock()
	if known.size > size { // the log was rolled back: read it again
		known = loggedCutoff{}
	}
	r.lookups.Add(1)
	var found pgtype.Timestamptz
	err := tx.QueryRow(ctx, newestCutoffSQL, cluster, known.size).Scan(&found)
	at := found.Time
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		at = known.at
	case err != nil:
		return time.Time{}, fmt.Errorf("newest retention cutoff: %w", err)
	case !found.Valid || found.InfinityModifier != pgtype.Finite:
		// Every cutoff of the newest segment holding one is NULL or not
		// a time (isfinite): edited, as the integrator writes none such.
		return time.Time{}, fmt.Errorf("newest retention cutoff: the segment holding it has no readable time")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.newest == nil {
		r.newest = map[string]loggedCutoff{}
	}
	r.newest[cluster] = loggedCutoff{size: size, at: at}
	return at, nil
}
