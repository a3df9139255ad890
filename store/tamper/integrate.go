package tamper

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/options-record/options-record/store/pgarray"
	"github.com/options-record/options-record/store/tamper/refpack"
	"gocloud.dev/blob"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// IntegratorOptions configure an Integrator.
type IntegratorOptions struct {
	// Pool is the record's pool, as the ingest role.
	Pool *pgxpool.Pool
	// Signer signs the checkpoints (an Ed25519 note key read from a file,
	// never from the database).
	Signer note.Signer
	// Checkpoints, when set, receives each signed checkpoint outside the
	// database (cluster=<name>/<size> and cluster=<name>/latest): a
	// directory or an object store's bucket.
	Checkpoints *blob.Bucket
	// Interval is how often pending rows are drained (default 1s).
	Interval time.Duration
	// MaxLeaves caps the rows of one pass (default 10000): it takes the
	// pending batches, each whole, until it has MaxLeaves rows or none is
	// left, and up to MaxLeaves rows of log_pending (cutoffs and
	// confirmed observations).
	MaxLeaves int
	// Logger receives errors; nil discards them.
	Logger *slog.Logger
	// Retention, when set, returns the retention the ingest applies (the
	// longest of the rules in force; 0 when not known). The integrator
	// logs only the retention cutoffs it allows: none later than now less
	// Retention(), and never later than now less MinRetention. A later one
	// (planted in log_pending by whoever writes the database, to pass off
	// deletes as retention) is refused: it stays pending, logged nowhere,
	// and each is reported once (Logger, RefusedCutoffs).
	Retention func() time.Duration
	// MinRetention is the shortest retention ever applied (default an
	// hour, store.MinRetention).
	MinRetention time.Duration
	// Witnesses, when set, each receive a cluster's newest signed
	// checkpoint at most every WitnessInterval (default 10s), with a
	// consistency proof from the size each last cosigned; their
	// cosignatures are kept with the checkpoint in Checkpoints. There,
	// cluster=<name>/latest is then only a checkpoint that WitnessQuorum
	// of them cosigned (0: all); cluster=<name>/<size> is each one, with
	// the cosignatures it got.
	Witnesses       []Witness
	WitnessQuorum   int
	WitnessInterval time.Duration
	// HTTPClient posts to the witnesses (default: one with a 10s timeout).
	HTTPClient *http.Client
}

// DefaultMinRetention is the default IntegratorOptions.MinRetention and
// VerifyOptions.MinRetention: store.MinRetention, the shortest retention
// the store applies.
const DefaultMinRetention = time.Hour

// Integrator appends the pending rows to each cluster's log.
type Integrator struct {
	o IntegratorOptions
	// beforeCommit, in tests, runs before an integration pass commits.
	beforeCommit func(ctx context.Context)
	// afterBatches, in tests, runs between a pass's drain of the pending
	// batches and its drain of log_pending.
	afterBatches func(ctx context.Context)
	// refused counts the cutoffs refused, each once; mu guards reported
	// (those cutoffs, and each latest checkpoint kept: reportOnce).
	refused  atomic.Int64
	mu       sync.Mutex
	reported map[string]bool
	// malformed counts the pending batches taken out unlogged (drainSkips).
	malformed atomic.Int64
	// conflicts counts the witnesses' refusals; witnessed is the size
	// each witness last cosigned, by witness URL and cluster; unwitnessed
	// is each cluster's newest signed checkpoint not yet cosigned by a
	// quorum (all under mu).
	conflicts   atomic.Int64
	witnessed   map[string]int64
	unwitnessed map[string]signedCheckpoint
	relog       relogState // relog.go
	// failures counts the passes that failed; integrated is when the last
	// run over the clusters (IntegrateAll) ended with none failing.
	failures   atomic.Int64
	integrated atomic.Int64
	// lockedOutSince is, under mu, when each cluster's pass first found
	// its lock held by another session with the log not growing since
	// (lockedOut); lockedOutFor, in tests, replaces lockedOutAfter.
	lockedOutSince map[string]lockout
	lockedOutFor   time.Duration
}

// signedCheckpoint is a cluster's signed checkpoint of size leaves.
type signedCheckpoint struct {
	size   int64
	signed []byte
}

// WitnessConflicts returns how many times a witness refused a checkpoint
// as not extending the newest it cosigned: the log was rolled back,
// truncated or forked since (or another log writes under its origin).
func (in *Integrator) WitnessConflicts() int64 { return in.conflicts.Load() }

// RefusedCutoffs returns how many retention cutoffs the integrator refused
// to log (each counted once): any is a sign that someone wrote log_pending
// around the retention pass, or of replicas whose rules or clocks disagree.
func (in *Integrator) RefusedCutoffs() int64 { return in.refused.Load() }

// MalformedBatches returns how many pending batches the integrator took
// out unlogged, their packed references malformed or their first_at or
// ref_count not their rows' (in passes that committed): any is a sign that
// someone wrote log_pending_batches around the ingest.
func (in *Integrator) MalformedBatches() int64 { return in.malformed.Load() }

// cutoffLimit returns the latest retention cutoff the integrator logs now.
func (in *Integrator) cutoffLimit() time.Time {
	r := in.o.MinRetention
	if in.o.Retention != nil {
		r = max(r, in.o.Retention())
	}
	return time.Now().Add(-r)
}

// NewIntegrator returns an integrator; Run starts it.
func NewIntegrator(o IntegratorOptions) (*Integrator, error) {
	if o.Pool == nil || o.Signer == nil {
		return nil, errors.New("tamper: an integrator needs a pool and a signer")
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.MaxLeaves <= 0 {
		o.MaxLeaves = 10000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MinRetention <= 0 {
		o.MinRetention = DefaultMinRetention
	}
	if o.WitnessInterval <= 0 {
		o.WitnessInterval = 10 * time.Second
	}
	if o.WitnessQuorum <= 0 || o.WitnessQuorum > len(o.Witnesses) {
		o.WitnessQuorum = len(o.Witnesses)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Integrator{o: o, reported: map[string]bool{}, witnessed: map[string]int64{},
		unwitnessed: map[string]signedCheckpoint{}, lockedOutSince: map[string]lockout{}}, nil
}

// Run integrates the pending rows every Interval until ctx ends.
func (in *Integrator) Run(ctx context.Context) {
	t := time.NewTicker(in.o.Interval)
	defer t.Stop()
	var cosigned time.Time
	if len(in.o.Witnesses) > 0 {
		if err := in.LoadUnwitnessed(ctx); err != nil && ctx.Err() == nil {
			in.o.Logger.Error("tamper log: newest checkpoints", "err", err)
		}
	}
	for {
		if err := in.IntegrateAll(ctx); err != nil && ctx.Err() == nil {
			in.o.Logger.Error("tamper log integration", "err", err)
		}
		if len(in.o.Witnesses) > 0 && time.Since(cosigned) >= in.o.WitnessInterval {
			in.CosignAll(ctx)
			cosigned = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// IntegrateAll drains the pending rows of every cluster.
func (in *Integrator) IntegrateAll(ctx context.Context) error {
	rows, err := in.o.Pool.Query(ctx, "SELECT cluster FROM log_pending UNION SELECT cluster FROM log_pending_batches")
	if err == nil {
		var clusters []string
		clusters, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err == nil {
			return in.integrateClusters(ctx, clusters)
		}
	}
	if ctx.Err() == nil {
		in.failures.Add(1)
	}
	return fmt.Errorf("tamper: pending clusters: %w", err)
}

// integrateClusters drains the pending rows of each cluster.
func (in *Integrator) integrateClusters(ctx context.Context, clusters []string) error {
	var errs []error
	for _, c := range clusters {
		// The passes of a backlog, one after the other, write the
		// newest checkpoint to Checkpoints after the last, and at most
		// every Interval before (a long backlog's file does not lag its
		// log by more): each write reads the latest there and syncs two
		// files.
		var newest *signedCheckpoint
		written := time.Now()
		for {
			n, cp, err := in.integrate(ctx, c)
			if cp != nil {
				newest = cp
				if time.Since(written) >= in.o.Interval {
					in.writeCheckpoint(ctx, c, newest.size, newest.signed, len(in.o.Witnesses) == 0)
					newest, written = nil, time.Now()
				}
			}
			if err != nil {
				errs = append(errs, err)
				if ctx.Err() == nil {
					in.failures.Add(1)
				}
			}
			if err != nil || n < in.o.MaxLeaves {
				break
			}
		}
		if newest != nil {
			in.writeCheckpoint(ctx, c, newest.size, newest.signed, len(in.o.Witnesses) == 0)
		}
	}
	if len(errs) == 0 {
		in.integrated.Store(time.Now().UnixNano())
	}
	return errors.Join(errs...)
}

// Failures returns how many integration passes failed (a cluster's pass
// rolled back: its pending rows stay, and the next pass tries again), and
// how many lookups of the newest logged cutoff failed (relogCutoff: the
// pass went on without logging it again; an edited segment).
func (in *Integrator) Failures() int64 { return in.failures.Load() }

// Integrated returns when the last run over every cluster with pending
// rows ended with none failing (zero: never): a log whose integration
// fails again and again leaves new rows unlogged, and only this time, not
// the log's size, shows it.
func (in *Integrator) Integrated() time.Time {
	if n := in.integrated.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// lockClass is the first key of the integrator's advisory lock (the second
// is the cluster's hashtext): "ol" + 1.
const lockClass int32 = 0x6f6c0001

// drainBatchesSQL takes a pass's pending batches out of
// log_pending_batches, each whole, in the order of their oldest row
// (first_at, migration 00029): those before which the pass has fewer than
// $2 leaves (by their ref_count, migration 00033: at least one each,
// whatever a planted row says). So they are among the first $2, which the
// index log_pending_batches_first gives without reading the others (a
// backlog of them is not read again by each pass). The pass's transaction
// appends them, or they stay. A batch is packed (refs) or, written by an
// older replica, parallel arrays. A value of more than $3 bytes, or an
// array of more than $4 elements (refpack.MaxBytes, MaxRows: more than the
// ingest writes), is taken out but not sent: the last column says so.
const drainBatchesSQL = `
DELETE FROM log_pending_batches
WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM (
        SELECT ctid, sum(greatest(ref_count, 1)) OVER (ORDER BY first_at, ctid) - greatest(ref_count, 1) AS before
        FROM (SELECT ctid, ref_count, first_at FROM log_pending_batches WHERE cluster = $1
              ORDER BY first_at, ctid LIMIT $2) b) b
    WHERE before < $2))
RETURNING CASE WHEN octet_length(refs) <= $3 THEN refs END, first_at, ref_count,
    CASE WHEN cardinality(kinds) <= $4 THEN kinds END, CASE WHEN cardinality(uids) <= $4 THEN uids END,
    CASE WHEN cardinality(keys) <= $4 THEN keys END, CASE WHEN cardinality(ats) <= $4 THEN ats END,
    CASE WHEN cardinality(digests) <= $4 THEN digests END,
    coalesce(octet_length(refs) > $3, false) OR coalesce(greatest(cardinality(kinds), cardinality(uids),
        cardinality(keys), cardinality(ats), cardinality(digests)) > $4, false)`

// drainSQL takes a pass's pending rows out of log_pending, in their order;
// the pass's transaction appends them, or they stay. A retention cutoff
// stays when it is later than the latest the integrator allows ($3)
// (refusedSQL), and when a batch left in log_pending_batches (one this
// pass did not take, or one committed since) holds a row as old as it or
// older (its first_at, the oldest of its times): a cutoff is logged after
// the leaves of the rows it is later than (verify accepts a row gone by
// retention only when a cutoff logged after its leaf covers it), and the
// pass that takes that batch, or a later one, logs it.
//
// A row whose time is not finite (infinity or -infinity: no row the ingest
// writes, and migration 00031 refuses new ones; planted, it would stop
// every pass of the cluster) is taken too, and the pass skips it.
const drainSQL = `
DELETE FROM log_pending
WHERE ctid = ANY(ARRAY(SELECT ctid FROM log_pending WHERE cluster = $1 AND (NOT isfinite(at) OR NOT (kind = 3 AND (at > $3 OR at >= coalesce(
        (SELECT min(first_at) FROM log_pending_batches WHERE cluster = $1), 'infinity'))))
    ORDER BY at, kind, uid, key LIMIT $2))
RETURNING kind, uid, key, at, digest`

// refusedSQL lists the pending retention cutoffs later than the latest
// allowed ($2): they are not logged, and the retention pass that waits for
// them (if one does) deletes nothing.
const refusedSQL = `SELECT DISTINCT at FROM log_pending WHERE cluster = $1 AND kind = 3 AND at > $2 AND isfinite(at) ORDER BY at`

// insertSegmentSQL appends a segment, with the range of its events' times
// ($12, $13; NULL: none), where the incremental verify looks for events
// logged before its checkpoint (eventsBeforeSQL; migration 00028).
const insertSegmentSQL = `
INSERT INTO log_segments (cluster, first_index, tree_size, stored_from, kinds, uids, keys, ats, digests, hashes, checkpoint, events_from, events_to)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

type leaf struct {
	ref    Ref
	digest [32]byte
}

// Integrate runs one pass over a cluster's pending rows, in one
// transaction under the cluster's advisory lock: it deletes the pending
// rows of a pass (drain, MaxLeaves), appends a leaf for each row still
// stored, in the order of their time, kind and key, and stores the tree's
// new hashes and its signed checkpoint. It returns how many pending rows it took (0 when another
// integrator holds the lock). A pass that fails or is cancelled leaves
// nothing: the pending rows stay for the next. It writes the new
// checkpoint to Checkpoints, if set.
func (in *Integrator) Integrate(ctx context.Context, cluster string) (int, error) {
	n, cp, err := in.integrate(ctx, cluster)
	if cp != nil {
		in.writeCheckpoint(ctx, cluster, cp.size, cp.signed, len(in.o.Witnesses) == 0)
	}
	return n, err
}

// integrate is Integrate but for the checkpoint's file: it returns the
// checkpoint it signed (nil: none), for the caller to write.
func (in *Integrator) integrate(ctx context.Context, cluster string) (int, *signedCheckpoint, error) {
	var n, malformed int
	var signed []byte
	var size int64
	err := pgx.BeginFunc(ctx, in.o.Pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1, hashtext($2))", lockClass, cluster).Scan(&locked); err != nil {
			return err
		}
		if !locked {
			return in.lockedOut(ctx, tx, cluster)
		}
		in.mu.Lock()
		delete(in.lockedOutSince, cluster)
		in.mu.Unlock()
		err := tx.QueryRow(ctx, "SELECT tree_size FROM log_segments WHERE cluster = $1 ORDER BY first_index DESC LIMIT 1", cluster).Scan(&size)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		limit := in.cutoffLimit()
		if err := in.reportRefused(ctx, tx, cluster, limit); err != nil {
			return err
		}
		pending, skipped, err := drain(ctx, tx, cluster, in.o.MaxLeaves, limit, in.afterBatches)
		if err != nil {
			return err
		}
		if skipped.rows > 0 {
			in.o.Logger.Error("tamper log: pending rows whose time is not finite taken out, not logged (no ingest writes one: written around it)",
				"cluster", cluster, "rows", skipped.rows)
		}
		if skipped.batches > 0 {
			in.o.Logger.Error("tamper log: malformed pending batches taken out, not logged (no ingest writes one: written around it; verify reports their rows)",
				"cluster", cluster, "batches", skipped.batches, "err", skipped.batchErr)
		}
		malformed = skipped.batches
		n = len(pending)
		leaves, err := readLeaves(ctx, tx, cluster, pending, in.probeBefore())
		if err != nil || len(leaves) == 0 {
			return err
		}
		if leaves, err = in.relogCutoff(ctx, tx, cluster, size, leaves, limit); err != nil {
			return err
		}
		signed, err = in.append(ctx, tx, cluster, size, leaves)
		size += int64(len(leaves))
		if err == nil && in.beforeCommit != nil {
			in.beforeCommit(ctx)
		}
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("tamper: integrate cluster %q: %w", cluster, err)
	}
	in.malformed.Add(int64(malformed))
	if signed == nil {
		return n, nil, nil
	}
	cp := &signedCheckpoint{size: size, signed: signed}
	if len(in.o.Witnesses) > 0 {
		// latest waits for the witnesses' quorum (CosignAll).
		in.mu.Lock()
		in.unwitnessed[cluster] = *cp
		in.mu.Unlock()
	}
	return n, cp, nil
}

// lockedOutSQL reads the database's time and the size of the cluster's
// log.
const lockedOutSQL = `SELECT now(), coalesce((SELECT tree_size FROM log_segments WHERE cluster = $1 ORDER BY first_index DESC LIMIT 1), 0)`

// lockout is what a replica saw of another session holding a cluster's
// lock: since when (the database's time), the log's size then, and when
// it last found the lock held.
type lockout struct {
	since, last time.Time
	size        int64
}

// lockedOut is a pass that found the cluster's lock held by another
// session: another replica's pass, as a rule, which appends a segment and
// lets go within a second. One that holds it for lockedOutAfter while the
// log does not grow (a session stuck idle in its transaction, or one that
// took the lock on purpose: pg_advisory_lock is anyone's) leaves the
// cluster's rows unlogged: that is an error, so that the pass is counted
// as failed (Failures, Integrated) rather than as done. Only passes that
// find it held one after the other count (each within ten intervals of
// the last, as a pass tries every interval while rows are pending): a
// replica that collides now and then with another's passes on a quiet
// cluster does not add up those collisions.
func (in *Integrator) lockedOut(ctx context.Context, tx pgx.Tx, cluster string) error {
	var now time.Time
	var size int64
	if err := tx.QueryRow(ctx, lockedOutSQL, cluster).Scan(&now, &size); err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	l, ok := in.lockedOutSince[cluster]
	if !ok || size != l.size || now.Sub(l.last) > 10*in.o.Interval {
		// The first, or the log grew since, or not one after the other.
		in.lockedOutSince[cluster] = lockout{since: now, last: now, size: size}
		return nil
	}
	l.last = now
	in.lockedOutSince[cluster] = l
	if now.Sub(l.since) < in.lockedOutAfter() {
		return nil
	}
	return fmt.Errorf("another session has held the cluster's integration lock since %s at least, and its log has not grown since: its pending rows stay unlogged (pg_locks, locktype advisory, classid %d, names the holder)",
		l.since.UTC().Format(time.RFC3339), lockClass)
}

// lockedOutAfter is how long another session may hold a cluster's lock
// with its log not growing before a pass counts it as failed: a minute,
// or 30 intervals.
func (in *Integrator) lockedOutAfter() time.Duration {
	if in.lockedOutFor > 0 {
		return in.lockedOutFor
	}
	return max(time.Minute, 30*in.o.Interval)
}

// writeCheckpoint writes a signed checkpoint to Checkpoints, if set.
func (in *Integrator) writeCheckpoint(ctx context.Context, cluster string, size int64, signed []byte, latest bool) {
	if in.o.Checkpoints == nil {
		return
	}
	latest = latest && in.advancesLatest(ctx, cluster, size)
	if err := writeCheckpointFile(ctx, in.o.Checkpoints, cluster, size, signed, latest); err != nil {
		// The next pass writes a newer one; the log is committed.
		in.o.Logger.Error("write checkpoint file", "cluster", cluster, "size", size, "err", err)
	}
}

// CosignAll submits each cluster's newest signed checkpoint that no quorum
// of witnesses cosigned yet to the witnesses, and keeps the cosignatures
// with it (the checkpoint's file, and latest when a quorum cosigned).
func (in *Integrator) CosignAll(ctx context.Context) {
	in.mu.Lock()
	pending := maps.Clone(in.unwitnessed)
	in.mu.Unlock()
	for _, cluster := range slices.Sorted(maps.Keys(pending)) {
		// cp may be a newer checkpoint of the cluster (another replica's).
		cp, cosig := in.cosign(ctx, cluster, pending[cluster])
		if len(cosig) == 0 {
			continue
		}
		merged := append(bytes.Clone(cp.signed), cosig...)
		n, err := CheckCosignatures(merged, witnessVerifiers(in.o.Witnesses))
		quorum := err == nil && n >= in.o.WitnessQuorum
		if quorum {
			in.mu.Lock()
			if u, ok := in.unwitnessed[cluster]; ok && u.size <= cp.size {
				delete(in.unwitnessed, cluster)
			}
			in.mu.Unlock()
		}
		in.writeCheckpoint(ctx, cluster, cp.size, merged, quorum)
	}
}

func witnessVerifiers(ws []Witness) []note.Verifier {
	vs := make([]note.Verifier, len(ws))
	for i, w := range ws {
		vs[i] = w.Verifier
	}
	return vs
}

// reportRefused reports, once each, the pending retention cutoffs of a
// cluster later than the latest allowed.
func (in *Integrator) reportRefused(ctx context.Context, tx pgx.Tx, cluster string, latest time.Time) error {
	rows, err := tx.Query(ctx, refusedSQL, cluster, latest)
	if err != nil {
		return fmt.Errorf("refused cutoffs: %w", err)
	}
	ats, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return fmt.Errorf("refused cutoffs: %w", err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, at := range ats {
		id := Ref{Kind: KindCutoff, Cluster: cluster, At: at}.id()
		if in.reported[id] {
			continue
		}
		if len(in.reported) >= 10000 { // a flood of them: report again rather than grow
			clear(in.reported)
		}
		in.reported[id] = true
		in.refused.Add(1)
		in.o.Logger.Error("tamper log: a retention cutoff later than the retention allows is pending; not logged (written around the retention pass, or replicas whose rules or clocks disagree)",
			"cluster", cluster, "cutoff", at, "latest_allowed", latest)
	}
	return nil
}

// pendingRow is a row of log_pending: a reference, and the digest of its
// row when the ingest wrote it (a version a batch stored; none otherwise).
type pendingRow struct {
	Ref
	digest digestElem
}

// digestElem is a pending row's digest, scanned from bytea: ok when it is
// one of 32 bytes (NULL, or any other length, is none: the row is read).
type digestElem struct {
	d  [32]byte
	ok bool
}

func (e *digestElem) ScanBytes(v []byte) error {
	e.ok = len(v) == sha256.Size
	if e.ok {
		e.d = [32]byte(v)
	}
	return nil
}

// drain deletes a pass's pending rows and returns them in their order,
// each once: the pending batches, whole, until the pass has limit rows or
// none is left, and up to limit rows of log_pending; it leaves the
// retention cutoffs later than latest, and those not later than a row of
// a batch left pending.
//
// It returns, too, what it took out unlogged (drainSkips).
func drain(ctx context.Context, tx pgx.Tx, cluster string, limit int, latest time.Time, afterBatches func(context.Context)) (out []pendingRow, skipped drainSkips, err error) {
	brows, err := tx.Query(ctx, drainBatchesSQL, cluster, limit, refpack.MaxBytes, refpack.MaxRows)
	if err != nil {
		return nil, skipped, err
	}
	// A packed batch (refs) is read whole or not at all (readPacked).
	// Elements of arrays are read as pgtype values, which tell NULL apart
	// (and keys as []byte, nil for NULL): a NULL one (which the CHECK of
	// migration 00027 refuses, unless someone dropped it) is skipped, not
	// an error that would stop every pass of the cluster. Each array is
	// scanned into a new slice (FlatArray.SetDimensions), each key into
	// its own bytes, as refs is: a row keeps them without a copy.
	var refs []byte
	var firstAt pgtype.Timestamptz
	var refCount pgtype.Int4
	var kinds pgtype.FlatArray[pgtype.Int2]
	var uids pgtype.FlatArray[pgtype.Text]
	var keys pgtype.FlatArray[[]byte]
	var ats pgtype.FlatArray[pgtype.Timestamptz]
	var digests pgtype.FlatArray[digestElem]
	var oversized bool
	_, err = pgx.ForEachRow(brows, []any{&refs, &firstAt, &refCount, &kinds, &uids, &keys, &ats, &digests, &oversized}, func() error {
		if oversized { // not read: what the ingest role planted costs no memory
			skipped.batches++
			skipped.batchErr = cmp.Or(skipped.batchErr, fmt.Errorf("a pending batch of more than %d bytes or %d rows", refpack.MaxBytes, refpack.MaxRows))
			return nil
		}
		if refs != nil {
			var perr error
			if out, perr = readPacked(out, cluster, refs, firstAt, refCount); perr != nil {
				skipped.batches++
				skipped.batchErr = cmp.Or(skipped.batchErr, perr)
			}
			return nil
		}
		if len(uids) != len(kinds) || len(keys) != len(kinds) || len(ats) != len(kinds) || (digests != nil && len(digests) != len(kinds)) {
			return nil // refused by the CHECK too: nothing to log of it
		}
		out = slices.Grow(out, len(kinds))
		for i, k := range kinds {
			if !k.Valid || !uids[i].Valid || keys[i] == nil || !ats[i].Valid || ats[i].InfinityModifier != pgtype.Finite ||
				Kind(k.Int16) != KindEvent && Kind(k.Int16) != KindVersion {
				// Only a retention pass asks for a cutoff, in
				// log_pending (the CHECK of migration 00027).
				continue
			}
			r := pendingRow{Ref: Ref{Kind: Kind(k.Int16), Cluster: cluster, UID: uids[i].String, Key: keys[i], At: ats[i].Time}}
			if digests != nil {
				r.digest = digests[i]
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, skipped, fmt.Errorf("pending batches: %w", err)
	}
	if afterBatches != nil {
		afterBatches(ctx)
	}
	rows, err := tx.Query(ctx, drainSQL, cluster, limit, latest)
	if err != nil {
		return nil, skipped, err
	}
	var r Ref
	var at pgtype.Timestamptz
	var d digestElem
	_, err = pgx.ForEachRow(rows, []any{&r.Kind, &r.UID, &r.Key, &at, &d}, func() error {
		if !at.Valid || at.InfinityModifier != pgtype.Finite {
			skipped.rows++ // drainSQL: taken out, not logged
			return nil
		}
		// pgx scans each key into new bytes: r.Key is the row's own.
		out = append(out, pendingRow{Ref{Kind: r.Kind, Cluster: cluster, UID: r.UID, Key: r.Key, At: at.Time}, d})
		return nil
	})
	if err != nil {
		return nil, skipped, err
	}
	sortRows(out)
	return slices.CompactFunc(out, func(a, b pendingRow) bool { return compareRefs(a.Ref, b.Ref) == 0 }), skipped, nil
}

// sortRows puts rows in the log's order (compareRefs) by sorting a small
// key per row (its time in microseconds and its kind, then compareRefs for
// rows of one microsecond and kind: rows' times are PostgreSQL's, to the
// microsecond) and moving each row once into its
// place, rather than moving the rows, about 128 bytes each, through the
// sort (TestSortRowsIsCompareRefs, BenchmarkSortRows).
func sortRows(rows []pendingRow) {
	type sortKey struct {
		at   int64 // microseconds since 2000, as PostgreSQL keeps a time
		kind Kind
		i    int32
	}
	const since2000 = 946684800 // seconds from 1970 to 2000
	keys := make([]sortKey, len(rows))
	for i := range rows {
		at := rows[i].At
		keys[i] = sortKey{(at.Unix()-since2000)*1e6 + int64(at.Nanosecond()/1e3), rows[i].Kind, int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		switch {
		case a.at != b.at:
			return cmp.Compare(a.at, b.at)
		case a.kind != b.kind:
			return cmp.Compare(a.kind, b.kind)
		}
		return compareRefs(rows[a.i].Ref, rows[b.i].Ref)
	})
	// Place k receives the row at keys[k].i: each cycle of the
	// permutation is followed once, marking its places done.
	for i := range keys {
		if int(keys[i].i) == i {
			continue
		}
		first, j := rows[i], i
		for {
			k := int(keys[j].i)
			keys[j].i = int32(j)
			if k == i {
				rows[j] = first
				break
			}
			rows[j], j = rows[k], k
		}
	}
}

// drainSkips is what a drain took out unlogged: rows of log_pending
// whose time is not finite (drainSQL), and malformed packed batches
// (readPacked), with the first one's error. No ingest writes either.
type drainSkips struct {
	rows, batches int
	batchErr      error
}

// readPacked appends the rows of a packed batch (refs, store/tamper/refpack)
// to out, each sharing refs's memory (pgx scanned it into its own bytes),
// and returns out as it was with an error when the value is malformed or
// its first_at or ref_count is not its rows' (a planted row: the ingest
// writes neither): none of its rows is logged, and log_pending_rows
// (log_pending_refs, migration 00033) shows none of them either.
func readPacked(out []pendingRow, cluster string, refs []byte, firstAt pgtype.Timestamptz, refCount pgtype.Int4) ([]pendingRow, error) {
	n0 := len(out)
	if !refCount.Valid || refCount.Int32 < 1 || refCount.Int32 > refpack.MaxRows {
		return out, fmt.Errorf("ref_count %v: not 1 to %d", refCount.Int32, refpack.MaxRows)
	}
	// As many rows as ref_count says, or as the value can hold if fewer:
	// ref_count is the ingest role's word, not a size to trust.
	out = slices.Grow(out, min(int(refCount.Int32), (len(refs)-1)/refpack.MinRowBytes))
	n, first, err := refpack.DecodeAtMost(refs, int(refCount.Int32), func(p refpack.Row) {
		r := pendingRow{Ref: Ref{Kind: Kind(p.Kind), Cluster: cluster, UID: p.UID, Key: p.Key, At: p.At}}
		if p.Digest != nil {
			r.digest = digestElem{d: [32]byte(p.Digest), ok: true}
		}
		out = append(out, r)
	})
	switch {
	case err != nil:
	case int(refCount.Int32) != n:
		err = fmt.Errorf("ref_count %v, but %d rows", refCount.Int32, n)
	case !firstAt.Valid || firstAt.InfinityModifier != pgtype.Finite || !firstAt.Time.Equal(first):
		err = fmt.Errorf("first_at %v, but the earliest row at %v", firstAt.Time, first)
	default:
		return out, nil
	}
	return out[:n0], err
}

// compareRefs orders rows by time, kind, uid and key; it compares the
// strings and keys only of rows of the same time and kind (the sort of
// every pass's rows).
func compareRefs(a, b Ref) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return cmp.Or(strings.Compare(a.UID, b.UID), bytes.Compare(a.Key, b.Key))
}

// probeBefore is the time before which a pending row with its digest is
// looked up before it is logged: retention removes only rows older than a
// logged cutoff, which is at least MinRetention before the time it was
// logged (cutoffLimit), so a row newer than now less MinRetention cannot
// have been removed by it. Half of MinRetention is left for replicas'
// clocks.
func (in *Integrator) probeBefore() time.Time {
	return time.Now().Add(-in.o.MinRetention / 2)
}

// readLeaves makes the leaves of the pending rows, in their order. A row
// whose pending row has its digest (the ingest's, of the values it wrote)
// is not read: its leaf holds that digest, so a row changed between its
// batch and this pass fails verify. Only one older than probeBefore is
// looked up (retention may have removed it: it then has no leaf); a newer
// one is logged as it is, so that one deleted between its batch and this
// pass fails verify too. The other rows (an event whose jsonb text the
// ingest was not sure of, rows of a writer that gives no digest) are read
// and their digests computed from what is stored; one gone has no leaf.
func readLeaves(ctx context.Context, tx pgx.Tx, cluster string, pending []pendingRow, probeBefore time.Time) ([]leaf, error) {
	var eKeys, vKeys, dKeys, deKeys [][]byte
	var eAts, deAts []time.Time
	var vUIDs, dUIDs []string
	for _, r := range pending {
		switch {
		case r.digest.ok && !r.At.Before(probeBefore):
			// Too new for retention to have removed: logged unread.
		case r.Kind == KindEvent && r.digest.ok:
			deKeys, deAts = append(deKeys, r.Key), append(deAts, r.At)
		case r.Kind == KindEvent:
			eKeys, eAts = append(eKeys, r.Key), append(eAts, r.At)
		case r.Kind == KindVersion && r.digest.ok:
			dUIDs, dKeys = append(dUIDs, r.UID), append(dKeys, r.Key)
		case r.Kind == KindVersion:
			vUIDs, vKeys = append(vUIDs, r.UID), append(vKeys, r.Key)
		}
	}
	// The maps by Ref.id are made only for rows looked up: in the common
	// pass (every row new, with its digest), none is.
	var found map[string]leaf
	var present map[string]bool
	keep := func(r Ref, d [32]byte) error {
		if found == nil {
			found = map[string]leaf{}
		}
		found[r.id()] = leaf{r, d}
		return nil
	}
	if len(eKeys) > 0 {
		first, last := slices.MinFunc(eAts, time.Time.Compare), slices.MaxFunc(eAts, time.Time.Compare)
		if err := scanRows(ctx, tx, KindEvent, eventsByRefSQL, []any{cluster, eKeys, eAts, first, last}, keep); err != nil {
			return nil, err
		}
	}
	if len(vKeys) > 0 {
		if err := scanRows(ctx, tx, KindVersion, versionsByRefSQL, []any{cluster, vUIDs, vKeys}, keep); err != nil {
			return nil, err
		}
	}
	if len(dKeys)+len(deKeys) > 0 {
		present = map[string]bool{}
	}
	if len(dKeys) > 0 {
		rows, err := tx.Query(ctx, versionsPresentSQL, cluster, dUIDs, dKeys)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", KindVersion, err)
		}
		var r Ref
		_, err = pgx.ForEachRow(rows, []any{&r.UID, &r.Key}, func() error {
			present[Ref{Kind: KindVersion, Cluster: cluster, UID: r.UID, Key: r.Key}.id()] = true
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", KindVersion, err)
		}
	}
	if len(deKeys) > 0 {
		first, last := slices.MinFunc(deAts, time.Time.Compare), slices.MaxFunc(deAts, time.Time.Compare)
		rows, err := tx.Query(ctx, eventsPresentSQL, cluster, deKeys, deAts, first, last)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", KindEvent, err)
		}
		var r Ref
		_, err = pgx.ForEachRow(rows, []any{&r.Key, &r.At}, func() error {
			present[Ref{Kind: KindEvent, Cluster: cluster, Key: r.Key, At: r.At}.id()] = true
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", KindEvent, err)
		}
	}
	leaves := make([]leaf, 0, len(pending))
	for _, r := range pending {
		switch {
		case r.Kind == KindCutoff:
			leaves = append(leaves, leaf{r.Ref, cutoffDigest(r.Ref)})
		case (r.Kind == KindVersion || r.Kind == KindEvent) && r.digest.ok:
			if !r.At.Before(probeBefore) || present[r.id()] {
				leaves = append(leaves, leaf{r.Ref, r.digest.d})
			}
		default:
			if l, ok := found[r.id()]; ok {
				leaves = append(leaves, l)
			}
		}
	}
	return leaves, nil
}

// append adds leaves to a tree of size leaves and stores them, the tree's
// new hashes and its signed checkpoint.
func (in *Integrator) append(ctx context.Context, tx pgx.Tx, cluster string, size int64, leaves []leaf) ([]byte, error) {
	f, err := loadFrontier(size, &storedHashes{ctx: ctx, q: tx, cluster: cluster, mem: map[int64]tlog.Hash{}})
	if err != nil {
		return nil, err
	}
	hashes := make([]byte, 0, (tlog.StoredHashCount(size+int64(len(leaves)))-tlog.StoredHashCount(size))*int64(len(tlog.Hash{})))
	digests := make([]byte, 0, len(leaves)*sha256.Size)
	kinds := make(pgarray.Array[pgarray.Int2], len(leaves))
	uids := make(pgarray.Array[pgarray.Text], len(leaves))
	keys := make(pgarray.Array[pgarray.Bytea], len(leaves))
	ats := make(pgarray.Array[pgarray.Timestamptz], len(leaves))
	var eventsFrom, eventsTo *time.Time // the range of the events' times
	for i, l := range leaves {
		hashes, err = f.add(size+int64(i), LeafHash(l.ref, l.digest), hashes)
		if err != nil {
			return nil, err
		}
		digests = append(digests, l.digest[:]...)
		kinds[i], uids[i], keys[i], ats[i] = pgarray.Int2(l.ref.Kind), pgarray.Text(l.ref.UID), l.ref.Key, pgarray.Timestamptz(l.ref.At)
		if l.ref.Kind == KindEvent {
			if eventsFrom == nil || l.ref.At.Before(*eventsFrom) {
				eventsFrom = &leaves[i].ref.At
			}
			if eventsTo == nil || l.ref.At.After(*eventsTo) {
				eventsTo = &leaves[i].ref.At
			}
		}
		if keys[i] == nil {
			keys[i] = []byte{}
		}
	}
	newSize := size + int64(len(leaves))
	root, err := tlog.TreeHash(newSize, f)
	if err != nil {
		return nil, err
	}
	cp := Checkpoint{Origin: Origin(in.o.Signer.Name(), cluster), Size: newSize, Root: root}
	signed, err := note.Sign(&note.Note{Text: cp.Text()}, in.o.Signer)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	err = insertSegment(ctx, tx, cluster, size, newSize, tlog.StoredHashCount(size),
		kinds, uids, keys, ats, digests, hashes, string(signed), eventsRange(eventsFrom, true), eventsRange(eventsTo, false))
	if err != nil {
		return nil, fmt.Errorf("append segment: %w", err)
	}
	if err := appendVersionSeconds(ctx, tx, cluster, size, leaves); err != nil {
		return nil, fmt.Errorf("append the versions' seconds: %w", err)
	}
	return signed, nil
}

// frontier is the left edge of a tree's growth as a pass appends to it:
// for each level l, the hash of the level's newest complete subtree of an
// even index (hash[l]) and that index (n[l], -1 when none), the left
// sibling of the next one of that level. These are all the
// stored hashes that the next leaves' new stored hashes and the tree's
// root are computed from (tlog.StoredHashesForRecordHash and
// tlog.TreeHash read no other). A pass reads them once, at its start,
// rather than leaf by leaf through a map (TestFrontierIsTlog).
type frontier struct {
	hash [64]tlog.Hash
	n    [64]int64
}

// loadFrontier reads the frontier of a tree of size leaves: the hashes of
// the complete subtrees it is made of.
func loadFrontier(size int64, r tlog.HashReader) (*frontier, error) {
	f := &frontier{}
	var indexes []int64
	for l := range f.n {
		f.n[l] = -1
		if l < 63 && size>>l&1 == 1 {
			indexes = append(indexes, tlog.StoredHashIndex(l, size>>l-1))
		}
	}
	if len(indexes) == 0 {
		return f, nil
	}
	hs, err := r.ReadHashes(indexes)
	if err != nil {
		return nil, err
	}
	if len(hs) != len(indexes) {
		return nil, fmt.Errorf("read %d stored hashes, want %d", len(hs), len(indexes))
	}
	for j, i := range indexes {
		l, n := tlog.SplitStoredHashIndex(i)
		f.hash[l], f.n[l] = hs[j], n
	}
	return f, nil
}

// add appends to hashes the stored hashes that leaf n (of hash h) adds
// (tlog.StoredHashesForRecordHash's) and keeps them in the frontier.
func (f *frontier) add(n int64, h tlog.Hash, hashes []byte) ([]byte, error) {
	hashes = append(hashes, h[:]...)
	for l := 0; l < 63; l++ {
		k := n >> l
		if k&1 == 0 {
			f.hash[l], f.n[l] = h, k
			return hashes, nil
		}
		if f.n[l] != k-1 {
			return nil, fmt.Errorf("stored hash %d is missing", tlog.StoredHashIndex(l, k-1))
		}
		h = tlog.NodeHash(f.hash[l], h)
		hashes = append(hashes, h[:]...)
	}
	return nil, fmt.Errorf("leaf %d: a tree too large", n)
}

// ReadHashes makes the frontier the tlog.HashReader of the tree's root
// (tlog.TreeHash), which reads only the subtrees the tree is made of.
func (f *frontier) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for j, i := range indexes {
		l, n := tlog.SplitStoredHashIndex(i)
		if l >= len(f.n) || f.n[l] != n {
			return nil, fmt.Errorf("stored hash %d is missing", i)
		}
		out[j] = f.hash[l]
	}
	return out, nil
}

// eventsRange is a segment's events_from (from) or events_to: the time of
// its earliest or latest event, or, when it has none, infinity and
// -infinity, a range that holds no time, so that the incremental verify's
// lookup of events (eventsBeforeSQL) never reads it (NULL, a segment of
// an older replica, is read whatever the time).
func eventsRange(t *time.Time, from bool) pgtype.Timestamptz {
	switch {
	case t != nil:
		return pgtype.Timestamptz{Time: *t, Valid: true}
	case from:
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	}
	return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
}

// appendVersionSeconds writes the log_version_seconds rows of a pass's
// segment (migration 00034): one per second of its versions' changed_at
// (their leaves' at, as Unix seconds, the floor as PostgreSQL's
// floor(extract(epoch FROM changed_at))), so that a lookup of a version
// (findLeaf, secondsSQL) reads the segments of its second only. Events have
// none: the incremental verify finds them by their segments' range of
// times. A log rebuilt from its pending rows writes its rows again (the
// table has no unique key).
func appendVersionSeconds(ctx context.Context, tx pgx.Tx, cluster string, size int64, leaves []leaf) error {
	var seconds []int64
	for _, l := range leaves {
		if l.ref.Kind == KindVersion {
			// A pass's rows are in time order (sortRows): a second's
			// versions are next to each other, but for relogged cutoffs.
			if s := l.ref.At.Unix(); len(seconds) == 0 || seconds[len(seconds)-1] != s {
				seconds = append(seconds, s)
			}
		}
	}
	if len(seconds) == 0 {
		return nil
	}
	slices.Sort(seconds)
	seconds = slices.Compact(seconds)
	_, err := tx.Exec(ctx, insertVersionSecondsSQL, cluster, seconds, size)
	return err
}

const insertVersionSecondsSQL = `INSERT INTO log_version_seconds (cluster, second, first_index) SELECT $1, s, $3 FROM unnest($2::bigint[]) AS s`

// storedHashesSQL reads stored hashes by index ($2), each from the segment
// that holds the leaf that completed it ($3).
const storedHashesSQL = `
SELECT k.i, substring(s.hashes FROM ((k.i - s.stored_from) * 32 + 1)::int FOR 32)
FROM unnest($2::bigint[], $3::bigint[]) AS k(i, leaf)
CROSS JOIN LATERAL (
    SELECT stored_from, hashes FROM log_segments
    WHERE cluster = $1 AND first_index <= k.leaf
    ORDER BY first_index DESC LIMIT 1) s`

// storedHashes is the tlog.HashReader of a cluster's stored hashes: those
// of this pass in memory, the others read from log_segments.
type storedHashes struct {
	ctx     context.Context
	q       pgx.Tx
	cluster string
	mem     map[int64]tlog.Hash
}

func (r *storedHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	var need, leaves []int64
	for _, i := range indexes {
		if _, ok := r.mem[i]; !ok {
			level, n := tlog.SplitStoredHashIndex(i)
			need, leaves = append(need, i), append(leaves, (n+1)<<level-1)
		}
	}
	if len(need) > 0 {
		rows, err := r.q.Query(r.ctx, storedHashesSQL, r.cluster, need, leaves)
		if err != nil {
			return nil, fmt.Errorf("read stored hashes: %w", err)
		}
		var i int64
		var b []byte
		_, err = pgx.ForEachRow(rows, []any{&i, &b}, func() error {
			if len(b) != len(tlog.Hash{}) {
				return fmt.Errorf("stored hash %d: %d bytes", i, len(b))
			}
			r.mem[i] = tlog.Hash(b)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read stored hashes: %w", err)
		}
	}
	out := make([]tlog.Hash, len(indexes))
	for k, i := range indexes {
		h, ok := r.mem[i]
		if !ok {
			return nil, fmt.Errorf("stored hash %d is missing", i)
		}
		out[k] = h
	}
	return out, nil
}
