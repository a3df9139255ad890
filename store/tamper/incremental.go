package tamper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

// newestLoggedSQL reads leaves of rows (not cutoffs) in the first $2
// leaves (with $3, only those of the pass that ends there), newest first:
// $4 of them after the first $5. Nothing in it is trusted: each leaf is
// checked against the verified root before its time is used.
const newestLoggedSQL = `
SELECT s.first_index + l.n - 1, l.kind, coalesce(l.uid, ''), l.key, l.at, substring(s.digests FROM (32 * (l.n - 1) + 1)::int FOR 32)
FROM log_segments s, unnest(s.kinds, s.uids, s.keys, s.ats) WITH ORDINALITY AS l(kind, uid, key, at, n)
WHERE s.cluster = $1 AND s.tree_size <= $2 AND (NOT $3 OR s.tree_size = $2) AND l.kind <> 3 AND l.at IS NOT NULL
ORDER BY l.at DESC, 1 LIMIT $4 OFFSET $5`

// maxBadLeaves bounds the leaves below the verified checkpoint that
// newestLogged tries and finds edited before it gives up.
const maxBadLeaves = 100

// indexedSQL finds where versions (uids $2, keys $3, changed_at $4) are in
// the log before leaf $5 (log_leaf_index: those logged before migration
// 00034, or by an older replica since; secondsSQL finds the others), which an inclusion proof then
// checks (by either key: an integrator of a release before migration 00032
// wrote log_ref_hash during a rolling upgrade): an entry of
// another row whose reference has the same hash fails its proof, and the
// row's own entry proves it all the same.
// Each leaf once, and at most $6 a row (maxCandidates + 1: the index has
// no unique key since migration 00030, and a flood of planted entries
// would cost a proof each).
const indexedSQL = `
SELECT k.n, x.log_index
FROM unnest($2::text[], $3::bytea[], $4::timestamptz[]) WITH ORDINALITY AS k(uid, key, at, n)
CROSS JOIN LATERAL (
    SELECT DISTINCT log_index FROM log_leaf_index
    WHERE cluster = $1 AND ref_hash IN (log_version_ref(k.uid, k.key, k.at), log_ref_hash(2::smallint, k.uid, k.key))
      AND log_index < $5
    ORDER BY 1 LIMIT $6) x`

// secondsSQL finds where versions (uids $2, keys $3, the Unix seconds of
// their changed_at $4) are in the first $5 leaves: among the references of
// the segments log_version_seconds names for their seconds (migration
// 00034), each segment read once. The rows looked for are those as new as
// the oldest row after the checkpoint (checkNewRows): the segments read
// are about those integrated since those seconds, which the scan of the
// rows already covers. A planted entry costs the read of a segment more;
// an inclusion proof checks each leaf found.
const secondsSQL = `
WITH k AS (SELECT * FROM unnest($2::text[], $3::bytea[]) WITH ORDINALITY AS k(uid, key, n)),
l AS MATERIALIZED (
    SELECT s.first_index + l.i - 1 AS index, l.uid, l.key
    FROM (SELECT DISTINCT first_index FROM log_version_seconds
          WHERE cluster = $1 AND second = ANY($4::bigint[])) x
    JOIN log_segments s ON s.cluster = $1 AND s.first_index = x.first_index AND s.tree_size <= $5,
        unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, i)
    WHERE l.kind = 2)
SELECT k.n, l.index FROM k JOIN l ON l.uid = k.uid AND l.key = k.key`

// eventsBeforeSQL finds where events (keys $2, times $3) are in the
// first $4 leaves, which have no log_leaf_index entries: in the segments
// whose range of event times (events_from, events_to; migration 00028)
// meets that of theirs ($5, the oldest, to $6, the newest), found by the
// index on (cluster, events_to), and those with no range (no events, or
// written before 00028). A pass logs the events pending then, in their
// order, so the segments whose range holds a time are those integrated
// while events of that time were still being committed: the search is
// bounded by how late an event commits after its time, not by the log.
// The rows looked for are those as new as the oldest (checkNewRows), so
// the segments read are about those the scan of the rows already covers.
// An inclusion proof checks each leaf found: a range edited to hide a
// segment leaves its events not found (reported as not in the log).
const eventsBeforeSQL = `
WITH k AS (SELECT * FROM unnest($2::bytea[], $3::timestamptz[]) WITH ORDINALITY AS k(key, at, n)),
l AS MATERIALIZED (
    SELECT s.first_index + l.i - 1 AS index, l.key, l.at
    FROM (SELECT first_index, kinds, keys, ats FROM log_segments
          WHERE cluster = $1 AND tree_size <= $4 AND events_to >= $5 AND events_from <= $6
          UNION ALL
          SELECT first_index, kinds, keys, ats FROM log_segments
          WHERE cluster = $1 AND tree_size <= $4 AND events_to IS NULL) s,
        unnest(s.kinds, s.keys, s.ats) WITH ORDINALITY AS l(kind, key, at, i)
    WHERE l.kind = 1)
SELECT k.n, l.index FROM k JOIN l ON l.key = k.key AND l.at = k.at`

// incremental checks a cluster from base, the signed checkpoint a previous
// run verified (VerifyOptions.Since).
func (v *verifier) incremental(ctx context.Context, tx pgx.Tx, base []byte) error {
	c := v.cr.Cluster
	v.cr.Incremental = true
	b, err := OpenCheckpoint(base, v.o.Verifier)
	if err == nil && b.Origin != Origin(v.o.Verifier.Name(), c) {
		err = fmt.Errorf("it is of another log (origin %q)", b.Origin)
	}
	if err != nil {
		v.fail("log", "the verified checkpoint the incremental check starts from: %v", err)
		return nil
	}
	v.cr.From = b.Size
	leaves, stored, last, err := v.readSegments(ctx, tx, b.Size)
	if err != nil {
		if isMalformed(err) {
			v.fail("log", "%v: in the log after the verified checkpoint of %d leaves (edited, or removed)", err, b.Size)
			return nil
		}
		return err
	}
	if len(leaves) == 0 {
		var size int64
		err := tx.QueryRow(ctx, newestCheckpointSQL, c).Scan(&size, &last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if size != b.Size {
			v.fail("log", "the log has %d leaves, fewer than the %d of the verified checkpoint: it was rolled back or truncated", size, b.Size)
			return nil
		}
	}
	size := b.Size + int64(len(leaves))
	// The stored hashes below the checkpoint must still give its root:
	// those the tree after it is built on.
	below := &storedHashes{ctx: ctx, q: tx, cluster: c, mem: map[int64]tlog.Hash{}}
	if b.Size > 0 {
		root, err := tlog.TreeHash(b.Size, below)
		if err != nil || root != b.Root {
			v.fail("log", "the stored hashes of the first %d leaves do not give the root of the verified checkpoint (the log was edited before it): %v", b.Size, err)
			return nil
		}
	}
	mem := v.checkTree(b.Size, leaves, stored, below)
	root := v.checkSigned(size, mem, last)
	if b.Size > 0 && size > b.Size {
		p, err := tlog.ProveTree(size, b.Size, mem)
		if err == nil {
			err = tlog.CheckTree(p, size, root, b.Size, b.Root)
		}
		if err != nil {
			v.fail("log", "the log of %d leaves does not extend the verified checkpoint of %d: %v", size, b.Size, err)
		}
	}
	v.checkTrusted(ctx, size, root, mem)
	return v.checkNewRows(ctx, tx, b, leaves, below)
}

// checkNewRows checks the rows of the leaves after b, and the rows at
// least as new as the oldest of them (or, when there is none, as the
// newest of the pass that ends at b): each is logged or pending.
func (v *verifier) checkNewRows(ctx context.Context, tx pgx.Tx, b Checkpoint, leaves []leaf, below tlog.HashReader) error {
	c := v.cr.Cluster
	rows := map[string]leaf{}
	keep := func(r Ref, d [32]byte) error {
		rows[r.id()] = leaf{r, d}
		return nil
	}
	var eKeys, vKeys [][]byte
	var eAts []time.Time
	var vUIDs []string
	var since, newest time.Time
	cutoff := false
	for _, l := range leaves {
		switch l.ref.Kind {
		case KindEvent:
			eKeys, eAts = append(eKeys, l.ref.Key), append(eAts, l.ref.At)
		case KindVersion:
			vKeys, vUIDs = append(vKeys, l.ref.Key), append(vUIDs, l.ref.UID)
		case KindCutoff:
			cutoff = true
			continue
		}
		if since.IsZero() || l.ref.At.Before(since) {
			since = l.ref.At
		}
	}
	if len(eKeys) > 0 {
		first, last := eAts[0], eAts[0]
		for _, at := range eAts {
			first, last = minTime(first, at), maxTime(last, at)
		}
		if err := scanRows(ctx, tx, KindEvent, eventsByRefSQL, []any{c, eKeys, eAts, first, last}, keep); err != nil {
			return err
		}
	}
	if len(vKeys) > 0 {
		if err := scanRows(ctx, tx, KindVersion, versionsByRefSQL, []any{c, vUIDs, vKeys}, keep); err != nil {
			return err
		}
	}
	pending, err := v.readPending(ctx, tx)
	if err != nil {
		return err
	}
	if cutoff {
		// A cutoff's justification is the newest row logged before it
		// (none proven: the cutoffs justify nothing).
		if newest, _, err = v.newestLogged(ctx, tx, b, below, false); err != nil {
			return err
		}
	}
	logged := v.checkLeaves(b.Size, newest, leaves, rows)
	t, ok, err := v.newestLogged(ctx, tx, b, below, true)
	if err != nil {
		return err
	}
	switch {
	case !ok: // the pass's leaves were edited: every row is scanned
		since = time.Time{}
	case !t.IsZero() && (since.IsZero() || t.Before(since)):
		since = t
	}
	// The rows at least as new: those of the leaves are read already.
	if err := scanRows(ctx, tx, KindEvent, eventsOfClusterSQL+" AND e.stage_at >= $2", []any{c, since}, keep); err != nil {
		return err
	}
	if err := scanRows(ctx, tx, KindVersion, versionsOfClusterSQL+" AND v.changed_at >= $2", []any{c, since}, keep); err != nil {
		return err
	}
	var lookupErr error
	v.checkExtra(rows, logged, pending, func(extra []leaf) map[string]string {
		ok, err := v.loggedBefore(ctx, tx, b, extra, below)
		lookupErr = err
		return ok
	})
	return lookupErr
}

// newestLogged is the time of the newest row logged in the first b.Size
// leaves (pass: in the pass that ends there; zero: none), read from the
// segments below b, which the incremental check does not otherwise read:
// that of the newest leaf an inclusion proof shows under b's root. Each
// leaf tried that does not is a problem (its time or row was edited); ok
// is false when there were leaves and none of those tried (maxBadLeaves
// at most) is proven.
func (v *verifier) newestLogged(ctx context.Context, tx pgx.Tx, b Checkpoint, below tlog.HashReader, pass bool) (time.Time, bool, error) {
	const page = 256
	type cand struct {
		index  int64
		ref    Ref
		digest []byte
	}
	bad := 0
	for off := 0; ; off += page {
		q, err := tx.Query(ctx, newestLoggedSQL, v.cr.Cluster, b.Size, pass, page, off)
		if err != nil {
			return time.Time{}, false, err
		}
		cs, err := pgx.CollectRows(q, func(row pgx.CollectableRow) (cand, error) {
			c := cand{ref: Ref{Cluster: v.cr.Cluster}}
			var kind int16
			err := row.Scan(&c.index, &kind, &c.ref.UID, &c.ref.Key, &c.ref.At, &c.digest)
			c.ref.Kind = Kind(kind)
			return c, err
		})
		if err != nil {
			return time.Time{}, false, err
		}
		if len(cs) == 0 {
			return time.Time{}, off == 0, nil
		}
		for _, c := range cs {
			err := errors.New("its digest is not 32 bytes")
			if len(c.digest) == 32 {
				var p tlog.RecordProof
				p, err = tlog.ProveRecord(b.Size, c.index, below)
				if err == nil {
					err = tlog.CheckRecord(p, b.Size, b.Root, c.index, LeafHash(c.ref, [32]byte(c.digest)))
				}
			}
			if err == nil {
				return c.ref.At, true, nil
			}
			if v.badLeaves == nil {
				v.badLeaves = map[int64]bool{}
			}
			if !v.badLeaves[c.index] {
				v.badLeaves[c.index] = true
				v.fail(c.ref.String(), "leaf %d as the log's segments store it does not lead to the verified checkpoint's root (the log was edited before it): %v", c.index, err)
			}
			if bad++; bad == maxBadLeaves {
				return time.Time{}, false, nil
			}
		}
	}
}

// loggedBefore says which rows are logged, unchanged, in the first b.Size
// leaves (""), or what is wrong with one found there: the segments of its
// second (log_version_seconds) or log_leaf_index name a version's leaf,
// the segments' ranges of event times an event's
// (leaves), and an inclusion proof of the row's own leaf hash against b's
// root (which the stored hashes were checked to give) shows it.
func (v *verifier) loggedBefore(ctx context.Context, tx pgx.Tx, b Checkpoint, rows []leaf, below tlog.HashReader) (map[string]string, error) {
	var vRows, eRows []leaf
	var uids []string
	var vKeys, eKeys [][]byte
	var vAts, eAts []time.Time
	var seconds []int64
	for _, r := range rows {
		switch r.ref.Kind {
		case KindVersion:
			vRows, uids, vKeys, vAts = append(vRows, r), append(uids, r.ref.UID), append(vKeys, r.ref.Key), append(vAts, r.ref.At)
			seconds = append(seconds, r.ref.At.Unix())
		case KindEvent:
			eRows, eKeys, eAts = append(eRows, r), append(eKeys, r.ref.Key), append(eAts, r.ref.At)
		}
	}
	found := map[string]string{}
	check := func(rows []leaf, sql string, args ...any) error {
		if len(rows) == 0 {
			return nil
		}
		q, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		type hit struct{ n, index int64 }
		hits, err := pgx.CollectRows(q, func(row pgx.CollectableRow) (hit, error) {
			var h hit
			return h, row.Scan(&h.n, &h.index)
		})
		if err != nil {
			return err
		}
		tried := map[int64]int{}
		for _, h := range hits {
			r, index := rows[h.n-1], h.index
			id := r.ref.id()
			if what, ok := found[id]; ok && what == "" {
				continue // proved by another leaf found
			}
			// Past maxCandidates leaves named for one row, the entries
			// were planted (log_leaf_index has no unique key): each
			// would cost a proof. The row is reported, not searched.
			if tried[h.n]++; tried[h.n] > maxCandidates {
				found[id] = fmt.Sprintf("log_leaf_index names more than %d leaves for it (entries written around the integrator); not checked", maxCandidates)
				continue
			}
			p, err := tlog.ProveRecord(b.Size, index, below)
			if err == nil {
				err = tlog.CheckRecord(p, b.Size, b.Root, index, LeafHash(r.ref, r.digest))
			}
			if err == nil {
				found[id] = ""
			} else if _, ok := found[id]; !ok { // another leaf found may prove it yet
				found[id] = fmt.Sprintf("changed since it was logged at leaf %d (its leaf hash does not lead to the verified checkpoint's root)", index)
			}
		}
		return nil
	}
	slices.Sort(seconds)
	if err := check(vRows, secondsSQL, v.cr.Cluster, uids, vKeys, slices.Compact(seconds), b.Size); err != nil {
		return nil, err
	}
	if err := check(vRows, indexedSQL, v.cr.Cluster, uids, vKeys, vAts, b.Size, maxCandidates+1); err != nil {
		return nil, err
	}
	if len(eRows) > 0 {
		first, last := slices.MinFunc(eAts, time.Time.Compare), slices.MaxFunc(eAts, time.Time.Compare)
		if err := check(eRows, eventsBeforeSQL, v.cr.Cluster, eKeys, eAts, b.Size, first, last); err != nil {
			return nil, err
		}
	}
	return found, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
