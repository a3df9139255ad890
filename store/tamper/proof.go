package tamper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/options-record/options-record/api/tlogproof"
)

// An inclusion proof of a version is a C2SP tlog-proof
// (c2sp.org/tlog-proof): its header, an extra line (base64 of the leaf
// bundle below), the leaf's index, the hashes of tlog.ProveRecord, a blank
// line and the signed checkpoint the proof leads to.
//
// The leaf bundle (version 1) lets a verifier recompute the leaf hash and
// check the state: a version byte, the length (uvarint) of the row's
// encoding (RowEncoding: its columns, json ones by the SHA-256 of their
// text), that encoding, then the exact stored text of the object column
// (empty when NULL), whose SHA-256 the encoding holds. The bundle carries
// every column, rules too (the OptionsRecordControllers that matched,
// which no other answer shows a reader): the leaf hashes them all, and a
// proof without one would not verify (TestProofCarriesTheRules).
const (
	proofHeader   = tlogproof.Header
	bundleVersion = tlogproof.BundleVersion
	// objectColumn is the index of object_versions.object in versionColumns.
	objectColumn = 18
)

// ErrNotLogged is ProveVersion's error for a version that is stored but
// not in the log yet: its pending row is there, and the integrator
// appends it within seconds.
var ErrNotLogged = errors.New("the version is not in the tamper-evident log yet")

// ErrNoLog is ProveVersion's error for a version of a cluster whose log
// has no checkpoint: the record is written without the log (no signing
// key), or its first integration pass has not run yet.
var ErrNoLog = errors.New("the cluster has no tamper-evident log")

// ErrNoVersion is ProveVersion's error for a version that is not stored.
var ErrNoVersion = errors.New("no such version")

// ErrBeforeLog is ProveVersion's error for a version of a cluster that has
// a log, which the log does not hold and never will: it has no leaf and no
// pending row, and it was changed before the log's first leaf, so the
// ingest stored it while it kept no log (before the log was enabled).
// Asking again does not help. A version without a leaf or pending row
// changed since the log began is ErrNotInLog.
var ErrBeforeLog = errors.New("the version was stored when the ingest kept no tamper-evident log (before the log was enabled): the log does not hold it and never will")

// ErrNotInLog is ProveVersion's error for a version of a cluster that has
// a log, which has neither a leaf nor a pending row and was changed after
// the log began: the ingest did not store it (it was written around the
// ingest, or its leaf's row was removed from the log). It is an
// ErrNotLogged too (errors.Is), so a caller that needs a proof fails.
var ErrNotInLog error = notInLog{}

type notInLog struct{}

func (notInLog) Error() string {
	return "the version is not in the tamper-evident log and has no pending row, though it was changed after the log began: it was not stored by the ingest that keeps the log (written around it, or its leaf removed)"
}

func (notInLog) Is(target error) bool { return target == ErrNotLogged }

var objectTextSQL = `SELECT v.object::text, v.changed_at FROM object_versions v WHERE v.cluster = $1 AND v.uid = $2 AND v.version_key = $3`

// leafBySecondSQL finds a version's leaf among the references of the
// segments that log versions of its changed_at's second ($4, Unix seconds;
// log_version_seconds, migration 00034): an index lookup and the read of
// those segments (one or a few: those integrated while versions of that
// second were being committed), a cost that does not grow with the log.
// In each, the key's places (array_positions over the keys, a comparison
// of bytes each) then the kind and uid there: unnesting the three arrays
// of a segment of 10,000 leaves cost about 2 ms, this about a seventh.
// At most $5 segments: past them (entries planted for the second), the
// version not found here is searched in the whole log (leafScanSQL), a
// cost bounded by the log, not by what was planted. Neither is trusted:
// the proof is of the row read here against the signed tree.
const leafBySecondSQL = `
SELECT s.first_index + p - 1
FROM (SELECT DISTINCT first_index FROM log_version_seconds
      WHERE cluster = $1 AND second = $4 ORDER BY 1 LIMIT $5) x
JOIN log_segments s ON s.cluster = $1 AND s.first_index = x.first_index
CROSS JOIN LATERAL unnest(array_positions(s.keys, $3::bytea)) AS p
WHERE s.kinds[p] = 2 AND s.uids[p] = $2
ORDER BY 1 LIMIT 1`

// maxSecondSegments bounds the segments leafBySecondSQL reads for one
// second: the versions of a second are logged by a few passes, unless a
// backlog of hundreds of thousands of them was.
const maxSecondSegments = 64

// leafIndexSQL finds a version's leaf by log_leaf_index (migrations 00024,
// 00026 and 00032: by its uid, key and changed_at, $5; or by the key an
// integrator of a release before 00032 wrote during a rolling upgrade): a
// version logged before migration 00034, or by a replica of a release
// before it during a rolling upgrade. An index lookup whose cost does not
// grow with the log. The
// index is not trusted: the proof is of the row read here against the
// signed tree, so a wrong entry gives a proof that VerifyProof refuses.
// It names leaves by the hash of their reference: when it names several
// (another row whose reference has the same hash, or a planted entry),
// leafIsSQL tells which is the version's.
//
// Each leaf once, and at most maxCandidates + 1: since migration 00030 the
// index has no unique key, so whoever writes it can plant any number of
// entries under a version's hash (each would cost a leafIsSQL); past
// maxCandidates, findLeaf gives up on the index and the log is searched
// (leafScanSQL), a cost bounded by the log, not by what was planted.
const leafIndexSQL = `
SELECT DISTINCT log_index FROM log_leaf_index
WHERE cluster = $1 AND ref_hash IN (log_version_ref($2, $3, $5), log_ref_hash(2::smallint, $2, $3))
ORDER BY 1 LIMIT $4`

// maxCandidates bounds the leaves of log_leaf_index findLeaf checks: 64
// other rows of a log share a 64-bit hash with a version only if planted.
const maxCandidates = 64

// leafChecks counts findLeaf's leafIsSQL queries (TestLeafIndexFlood).
var leafChecks atomic.Int64

// leafIsSQL says whether leaf $2 of the log is the version's ($3, $4).
const leafIsSQL = `
SELECT coalesce(s.kinds[$2 - s.first_index + 1] = 2 AND s.uids[$2 - s.first_index + 1] = $3
    AND s.keys[$2 - s.first_index + 1] = $4, false)
FROM log_segments s WHERE s.cluster = $1 AND s.first_index <= $2
ORDER BY s.first_index DESC LIMIT 1`

// findLeaf returns the index of a version's leaf (ErrNotLogged: none), the
// version stored with changedAt: among the segments of its second, or, for
// a version logged before migration 00034 (or by an older replica), by
// log_leaf_index.
func findLeaf(ctx context.Context, tx pgx.Tx, cluster, uid string, key []byte, changedAt time.Time) (int64, error) {
	var index int64
	err := tx.QueryRow(ctx, leafBySecondSQL, cluster, uid, key, changedAt.Unix(), maxSecondSegments).Scan(&index)
	if err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return index, err
	}
	rows, err := tx.Query(ctx, leafIndexSQL, cluster, uid, key, maxCandidates+1, changedAt)
	if err != nil {
		return 0, err
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, err
	}
	if len(candidates) == 0 || len(candidates) > maxCandidates {
		return 0, ErrNotLogged // the log is searched instead
	}
	if len(candidates) > 1 {
		for _, i := range candidates {
			leafChecks.Add(1)
			var is bool
			if err := tx.QueryRow(ctx, leafIsSQL, cluster, i, uid, key).Scan(&is); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return 0, err
			}
			if is {
				return i, nil
			}
		}
	}
	// One, or none of them the version's: its proof fails VerifyProof.
	return candidates[0], nil
}

// leafScanSQL finds a version's leaf in the log's segments when
// log_leaf_index names none: a scan of the whole log, for a rare answer
// (the entry of a logged version removed). As with the index, the proof
// of the row against the signed tree is what counts.
const leafScanSQL = `
SELECT s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE s.cluster = $1 AND l.kind = 2 AND l.uid = $2 AND l.key = $3
ORDER BY 1 LIMIT 1`

// beforeLogSQL: was the version changed before the log began, that is
// before the first leaf of a row in the cluster's first segment and before
// that segment was integrated (the earlier of the two: an ingest that kept
// the log would have logged the version)? Only then does the absence of
// its leaf and pending row mean it was stored while the ingest kept no
// log. The first segment is the log's (verify checks its leaves against
// the signed tree), so moving its times is an edit verify reports.
const beforeLogSQL = `
SELECT coalesce(v.changed_at < (
    SELECT least(s.integrated_at, (SELECT min(a) FROM unnest(s.kinds, s.ats) AS l(kind, a) WHERE l.kind <> 3))
    FROM log_segments s WHERE s.cluster = $1 ORDER BY s.first_index LIMIT 1), false)
FROM object_versions v WHERE v.cluster = $1 AND v.uid = $2 AND v.version_key = $3`

const hasLogSQL = `SELECT EXISTS (SELECT FROM log_segments WHERE cluster = $1)`

// pendingSQL: is the version's pending row there (log_pending_rows: in
// log_pending, or in a batch's row of log_pending_batches)? Neither has an
// index, and both stay small (the integrator drains them every second). A
// version's pending row is written in its batch's transaction and replaced
// by its leaf in the integrator's, so in one snapshot a version stored
// with the log has one or the other.
//
// It reads log_pending_rows' three parts apart, so that of the packed
// batches it unpacks only those whose value holds the key's bytes
// (position, a byte search): unpacking (log_pending_refs) costs a few
// microseconds a row, which a backlog, or a planted value, would cost
// every proof.
const pendingSQL = `
SELECT EXISTS (SELECT FROM log_pending WHERE cluster = $1 AND kind = 2 AND uid = $2 AND key = $3)
    OR EXISTS (SELECT FROM log_pending_batches b, unnest(b.kinds, b.uids, b.keys) AS l(kind, uid, key)
               WHERE b.cluster = $1 AND b.refs IS NULL AND l.kind = 2 AND l.uid = $2 AND l.key = $3)
    OR EXISTS (SELECT FROM log_pending_batches b, log_pending_refs(b.refs, b.first_at, b.ref_count) AS l
               WHERE b.cluster = $1 AND b.refs IS NOT NULL AND position($3::bytea IN b.refs) > 0
                 AND l.kind = 2 AND l.uid = $2 AND l.key = $3)`

const newestCheckpointSQL = `SELECT tree_size, checkpoint FROM log_segments WHERE cluster = $1 ORDER BY first_index DESC LIMIT 1`

// ProveVersion returns the inclusion proof (a tlog-proof) of a version of
// the record against the cluster's newest checkpoint, read in one snapshot
// of pool (a role that reads the record: the API's reader). It proves what
// the log holds: a row changed after it was logged gives a proof that
// VerifyProof refuses.
func ProveVersion(ctx context.Context, pool *pgxpool.Pool, cluster, uid string, key []byte) ([]byte, error) {
	var out []byte
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var enc []byte
		err := scanEncoded(ctx, tx, versionsByRefSQL, []any{cluster, []string{uid}, [][]byte{key}}, func(b []byte) { enc = b })
		if err != nil {
			return err
		}
		if enc == nil {
			return ErrNoVersion
		}
		var object *string
		var changedAt time.Time
		if err := tx.QueryRow(ctx, objectTextSQL, cluster, uid, key).Scan(&object, &changedAt); err != nil {
			return fmt.Errorf("read the object: %w", err)
		}
		var index, size int64
		var checkpoint string
		index, err = findLeaf(ctx, tx, cluster, uid, key, changedAt)
		if errors.Is(err, ErrNotLogged) {
			// Lookup aids are not evidence: an entry may be gone, so
			// the log itself is searched before its absence means anything.
			err = tx.QueryRow(ctx, leafScanSQL, cluster, uid, key).Scan(&index)
			if errors.Is(err, pgx.ErrNoRows) {
				err = ErrNotLogged
			}
		}
		if errors.Is(err, ErrNotLogged) {
			var logged bool
			if err := tx.QueryRow(ctx, hasLogSQL, cluster).Scan(&logged); err != nil {
				return fmt.Errorf("read the log: %w", err)
			}
			if !logged {
				return ErrNoLog
			}
			var pending bool
			if err := tx.QueryRow(ctx, pendingSQL, cluster, uid, key).Scan(&pending); err != nil {
				return fmt.Errorf("read the pending rows: %w", err)
			}
			if !pending {
				var before bool
				if err := tx.QueryRow(ctx, beforeLogSQL, cluster, uid, key).Scan(&before); err != nil {
					return fmt.Errorf("read the log's start: %w", err)
				}
				if before {
					return ErrBeforeLog
				}
				return ErrNotInLog
			}
			return ErrNotLogged
		}
		if err != nil {
			return fmt.Errorf("find the leaf: %w", err)
		}
		if err := tx.QueryRow(ctx, newestCheckpointSQL, cluster).Scan(&size, &checkpoint); err != nil {
			return fmt.Errorf("read the checkpoint: %w", err)
		}
		proof, err := tlog.ProveRecord(size, index, &storedHashes{ctx: ctx, q: tx, cluster: cluster, mem: map[int64]tlog.Hash{}})
		if err != nil {
			return fmt.Errorf("prove leaf %d in tree %d: %w", index, size, err)
		}
		bundle := binary.AppendUvarint([]byte{bundleVersion}, uint64(len(enc)))
		bundle = append(bundle, enc...)
		if object != nil {
			bundle = append(bundle, *object...)
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s\nextra %s\nindex %d\n", proofHeader, base64.StdEncoding.EncodeToString(bundle), index)
		for _, h := range proof {
			fmt.Fprintf(&b, "%s\n", base64.StdEncoding.EncodeToString(h[:]))
		}
		b.WriteString("\n")
		b.WriteString(checkpoint)
		out = b.Bytes()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tamper: prove version %s/%x of cluster %q: %w", uid, key, cluster, err)
	}
	return out, nil
}

// scanEncoded reads rows of a statement of rows.go and gives each one's
// encoding.
func scanEncoded(ctx context.Context, tx pgx.Tx, sql string, args []any, each func([]byte)) error {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("read the version: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return fmt.Errorf("read the version: %w", err)
		}
		b, err := RowEncoding(KindVersion, vals)
		if err != nil {
			return fmt.Errorf("encode the version: %w", err)
		}
		each(b)
	}
	return rows.Err()
}

// ProvenVersion is what a verified proof shows.
type ProvenVersion struct {
	// Ref names the version (cluster, uid, version key, changed_at).
	Ref Ref
	// Columns are the row's values, by name (json columns: the SHA-256 of
	// their text).
	Columns map[string]any
	// Object is the exact stored text of the state; nil when NULL.
	Object []byte
	// Index is the leaf's index; Checkpoint the checkpoint it is in.
	Index      int64
	Checkpoint Checkpoint
}

// VerifyProof checks a version's tlog-proof offline: the checkpoint's
// signature by verifier and its origin (the key's log of the version's
// cluster), that the leaf recomputed from the row's encoding is at the
// index of the tree the checkpoint signs, and that the object's text is
// the one the row holds. Each error names what failed.
func VerifyProof(proof []byte, verifier note.Verifier) (*ProvenVersion, error) {
	p, err := tlogproof.Parse(proof)
	if err != nil {
		return nil, err
	}
	index, extra := p.Index, p.Extra
	hashes := make(tlog.RecordProof, len(p.Hashes))
	for i, h := range p.Hashes {
		hashes[i] = h
	}
	cp, err := OpenCheckpoint(p.Checkpoint, verifier)
	if err != nil {
		return nil, err
	}
	if extra == nil {
		return nil, errors.New("proof: no extra line: the version's row is missing")
	}
	pv, digest, err := openBundle(extra)
	if err != nil {
		return nil, err
	}
	pv.Index, pv.Checkpoint = index, cp
	if want := Origin(verifier.Name(), pv.Ref.Cluster); cp.Origin != want {
		return nil, fmt.Errorf("checkpoint: origin %q is not the log of cluster %q (%q)", cp.Origin, pv.Ref.Cluster, want)
	}
	if index >= cp.Size {
		return nil, fmt.Errorf("inclusion proof: index %d is not in the checkpoint's tree of %d leaves", index, cp.Size)
	}
	if err := tlog.CheckRecord(hashes, cp.Size, cp.Root, index, LeafHash(pv.Ref, digest)); err != nil {
		return nil, fmt.Errorf("inclusion proof: the leaf of %s at index %d does not lead to the root the checkpoint signs (tree of %d leaves): the row, the proof or the checkpoint is not the one logged: %w", pv.Ref, index, cp.Size, err)
	}
	return pv, nil
}

// openBundle reads a leaf bundle: the row, its digest and the object, and
// checks that the object is the row's.
func openBundle(b []byte) (*ProvenVersion, [32]byte, error) {
	bad := func(what string) (*ProvenVersion, [32]byte, error) {
		return nil, [32]byte{}, fmt.Errorf("proof: malformed leaf bundle: %s", what)
	}
	enc, object, err := tlogproof.SplitBundle(b)
	if err != nil {
		return nil, [32]byte{}, err
	}
	if len(enc) < 2 || enc[0] != encodingVersion || Kind(enc[1]) != KindVersion {
		return bad("not an object_versions row of encoding 1")
	}
	count, w2 := binary.Uvarint(enc[2:])
	if w2 <= 0 || count != uint64(len(versionColumns)) {
		return bad("wrong number of columns")
	}
	vals := make([]any, 0, count)
	p := enc[2+w2:]
	for range count {
		v, next, err := decodeValue(p, 0)
		if err != nil {
			return bad(err.Error())
		}
		vals, p = append(vals, v), next
	}
	if len(p) != 0 {
		return bad("bytes after the columns")
	}
	ref, err := rowRef(KindVersion, vals)
	if err != nil {
		return bad(err.Error())
	}
	pv := &ProvenVersion{Ref: ref, Columns: map[string]any{}}
	for i, c := range versionColumns {
		pv.Columns[strings.TrimSuffix(c, "::text")] = vals[i]
	}
	switch h := vals[objectColumn].(type) {
	case nil:
		if len(object) != 0 {
			return nil, [32]byte{}, errors.New("proof: the row holds no object, the proof carries one")
		}
	case []byte:
		if sum := sha256.Sum256(object); !bytes.Equal(sum[:], h) {
			return nil, [32]byte{}, fmt.Errorf("proof: the object's text (SHA-256 %x) is not the row's (%x)", sum, h)
		}
		pv.Object = slices.Clip(object)
	default:
		return bad("object column")
	}
	return pv, sha256.Sum256(enc), nil
}

// decodeValue reads one value of appendValue's encoding.
func decodeValue(b []byte, depth int) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, errors.New("truncated")
	}
	tag, b := b[0], b[1:]
	switch tag {
	case 'n':
		return nil, b, nil
	case 's', 'b':
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, nil, errors.New("bad length")
		}
		v := b[w : w+int(n)]
		if tag == 's' {
			return string(v), b[w+int(n):], nil
		}
		return bytes.Clone(v), b[w+int(n):], nil
	case 'B':
		if len(b) < 1 || b[0] > 1 {
			return nil, nil, errors.New("bad boolean")
		}
		return b[0] == 1, b[1:], nil
	case 'i', 't':
		if len(b) < 8 {
			return nil, nil, errors.New("truncated number")
		}
		u := int64(binary.BigEndian.Uint64(b))
		if tag == 't' {
			return time.UnixMicro(u).UTC(), b[8:], nil
		}
		return u, b[8:], nil
	case 'a':
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) || depth > 0 {
			return nil, nil, errors.New("bad array")
		}
		b = b[w:]
		out := make([]any, 0, n)
		for range n {
			v, next, err := decodeValue(b, depth+1)
			if err != nil {
				return nil, nil, err
			}
			out, b = append(out, v), next
		}
		return out, b, nil
	}
	return nil, nil, fmt.Errorf("unknown tag %q", tag)
}
