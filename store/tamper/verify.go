package tamper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"gocloud.dev/blob"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Verifier is the public key the checkpoints must be signed with.
	Verifier note.Verifier
	// Cluster limits the check to one cluster; empty checks every cluster
	// with a log or rows, and every cluster with a checkpoint in Trusted.
	Cluster string
	// Trusted holds each cluster's last trusted checkpoint
	// (cluster=<name>/latest, as an integrator's --checkpoint-dir or
	// --checkpoint-url writes them), kept outside the database: the log
	// must have only grown since. Nil: no such check; a bucket that does
	// not exist or cannot be listed is an error (a mistyped name must not
	// skip the check), an empty one is not (ClusterReport.Trusted says
	// what was found).
	Trusted *blob.Bucket
	// MinRetention is the shortest retention the record was ever kept
	// for (default an hour, store.MinRetention). A logged retention cutoff
	// covers a missing row only up to the time of the newest row logged
	// before it, less MinRetention: a later cutoff is more than any
	// retention allowed when it was logged.
	MinRetention time.Duration
	// Since holds, by cluster, the signed checkpoint a previous run
	// verified (ClusterReport.Checkpoint, ReadVerified): a cluster with one
	// is checked incrementally from it, the others fully. An incremental
	// check reads the segments after it, not the whole log: it checks that
	// the log extends it (the stored hashes below it still give its root,
	// and a consistency proof), the leaves after it and their rows, and
	// the rows at least as new as the oldest row logged since (or as the
	// newest of the pass it ends, a time taken from a leaf that an
	// inclusion proof shows under its root, as is the newest time a
	// retention cutoff after it is justified by): each is logged (a row logged before it by
	// an inclusion proof against its root) or pending. It cannot see a row
	// logged before it and older than that deleted, or changed, or one
	// inserted with an older time: a full check does.
	Since map[string][]byte
	// Witnesses are the cosignature/v1 verifiers of the witnesses whose
	// cosignatures each trusted checkpoint must carry, WitnessQuorum of
	// them (0: all). Needs TrustedDir: the cosignatures are kept with the
	// checkpoints there, not in the database.
	Witnesses     []note.Verifier
	WitnessQuorum int
	// OnProblem, when set, is called with each problem as it is found,
	// before Verify returns: a caller prints them as they come, not all
	// at the end, and a check that is stopped (killed for its memory, a
	// deadline) has printed what it found until then. A full check finds
	// the rows' problems in the order of their primary keys, not of their
	// leaves.
	OnProblem func(Problem)
	// KeepProblems is how many problems Report.Problems keeps, the first
	// found: 0 keeps all of them, a negative number none (OnProblem has
	// them). Report.Failed and ClusterReport.Problems count them all: a
	// record with millions of problems is checked in the memory of one
	// with none.
	KeepProblems int
}

// Problem is one failed check: the row (or the log) and what is wrong.
type Problem struct {
	Cluster string
	Row     string // the row's table and primary key; "log" for the log itself
	What    string
}

func (p Problem) String() string { return fmt.Sprintf("cluster %q: %s: %s", p.Cluster, p.Row, p.What) }

// ClusterReport is what Verify found in one cluster.
type ClusterReport struct {
	Cluster  string
	Size     int64     // leaves in the log
	Root     tlog.Hash // the root of the tree its leaves make
	Rows     int       // rows present and unchanged
	Retained int       // rows gone behind a logged retention cutoff
	Pending  int       // rows stored, not yet integrated
	Cutoffs  []Cutoff  // the retention cutoffs logged, in log order
	// PendingCutoffs are retention cutoffs in log_pending, not logged (an
	// integrator refuses one later than the retention allows): they cover
	// no row.
	PendingCutoffs []time.Time
	// Trusted says a trusted checkpoint of the cluster was found in
	// VerifyOptions.TrustedDir, signed with the key, and the log checked
	// against it (a Problem when it does not extend it); TrustedSize is
	// its leaves.
	Trusted     bool
	TrustedSize int64
	// Incremental says the cluster was checked from VerifyOptions.Since,
	// a checkpoint of From leaves.
	Incremental bool
	From        int64
	// Segments is how many of the log's segments (a pass's leaves each)
	// the check read: all of them in a full check, those after From in an
	// incremental one.
	Segments int
	// Checkpoint is the newest signed checkpoint, when every check of the
	// cluster passed (nil otherwise, or when its log is empty): what the
	// next incremental check starts from (WriteVerified).
	Checkpoint []byte
	// Cosigned is how many of VerifyOptions.Witnesses cosigned the
	// trusted checkpoint.
	Cosigned int
	// Problems is how many problems the check of the cluster found.
	Problems int
}

// Cutoff is a retention cutoff in the log.
type Cutoff struct {
	Leaf int64     // its index in the log
	At   time.Time // the cutoff: rows before it may be gone
	// Newest is the time of the newest row logged before it (zero: none).
	// Justified says At is no later than Newest less the minimum
	// retention; an unjustified cutoff covers rows only up to that time.
	Newest    time.Time
	Justified bool
}

// Report is what Verify found.
type Report struct {
	Clusters []ClusterReport
	// Problems are the first problems found (VerifyOptions.KeepProblems
	// of them), Failed how many were found in all.
	Problems []Problem
	Failed   int
}

// OK says that every check passed.
func (r Report) OK() bool { return r.Failed == 0 && len(r.Problems) == 0 }

// Verify checks the record against its logs, cluster by cluster, each in
// one snapshot: the newest checkpoint's signature, that the log extends the
// trusted checkpoint, that the stored hashes give the signed root, that each
// leaf's row is present and unchanged or gone behind a retention cutoff
// logged after it, and that each row is in the log or pending. The error
// is for what stopped the whole check (the clusters could not be listed,
// ctx ended); a failed check is a Problem, and so is a cluster whose
// check could not run (a query failed, a value no Go type holds: "check:
// it could not be checked: …"), after which the next cluster is checked.
func Verify(ctx context.Context, pool *pgxpool.Pool, o VerifyOptions) (Report, error) {
	var rep Report
	if o.MinRetention <= 0 {
		o.MinRetention = DefaultMinRetention
	}
	if len(o.Witnesses) > 0 && o.Trusted == nil {
		return rep, errors.New("tamper: verify: witnesses' cosignatures are checked on the trusted checkpoints: name their bucket")
	}
	if o.WitnessQuorum <= 0 || o.WitnessQuorum > len(o.Witnesses) {
		o.WitnessQuorum = len(o.Witnesses)
	}
	if o.Trusted != nil {
		// A bucket, listable: not one that is missing (ReadTrusted reads
		// a cluster's missing checkpoint as none).
		ok, err := o.Trusted.IsAccessible(ctx)
		if err == nil && !ok {
			err = errors.New("the bucket does not exist")
		}
		if err != nil {
			return rep, fmt.Errorf("tamper: verify: trusted checkpoints: %w", err)
		}
	}
	clusters := []string{o.Cluster}
	if o.Cluster == "" {
		rows, err := pool.Query(ctx, `SELECT cluster FROM log_segments UNION SELECT cluster FROM log_pending
			UNION SELECT cluster FROM log_pending_batches UNION SELECT cluster FROM events UNION SELECT cluster FROM object_versions ORDER BY 1`)
		if err != nil {
			return rep, fmt.Errorf("tamper: verify: clusters: %w", err)
		}
		if clusters, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return rep, fmt.Errorf("tamper: verify: clusters: %w", err)
		}
		// And each cluster with a trusted checkpoint: one whose every row
		// is gone from the database (deleted, or a backup from before it
		// was restored) has no log, and fails against it.
		var trusted []string
		if o.Trusted != nil {
			trusted, err = bucketClusters(ctx, o.Trusted, "latest")
		}
		if err != nil {
			return rep, fmt.Errorf("tamper: verify: trusted checkpoints: %w", err)
		}
		// And each cluster checked from a verified checkpoint: one whose
		// log is gone fails against it.
		for c := range o.Since {
			trusted = append(trusted, c)
		}
		clusters = slices.Compact(slices.Sorted(slices.Values(append(clusters, trusted...))))
	}
	for _, c := range clusters {
		v := &verifier{o: o, cr: ClusterReport{Cluster: c}}
		switch {
		case o.KeepProblems < 0:
			v.bounded = true
		case o.KeepProblems > 0:
			v.bounded, v.room = true, max(0, o.KeepProblems-len(rep.Problems))
		}
		if o.Trusted != nil {
			v.trusted, v.trustedErr = ReadTrusted(ctx, o.Trusted, c)
		}
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return v.cluster(ctx, tx) })
		if err != nil && ctx.Err() != nil {
			return rep, fmt.Errorf("tamper: verify cluster %q: %w", c, err)
		}
		if err != nil {
			// A check that could not run (a query failed, a planted value
			// no Go type holds) fails its cluster, not the others': one
			// cluster's planted row must not hide another's tampering.
			v.fail("check", "it could not be checked: %v", err)
		}
		if v.cr.Problems > 0 {
			v.cr.Checkpoint = nil
		}
		rep.Clusters = append(rep.Clusters, v.cr)
		rep.Problems = append(rep.Problems, v.problems...)
		rep.Failed += v.cr.Problems
	}
	return rep, nil
}

// NewestCheckpoints reads the newest checkpoint of each cluster's log as
// the database holds it, by cluster: unchecked (its signature is checked
// when a verify starts from it). Starting an incremental verify from one
// trusts the log up to it on first use: the check sees what changes after.
func NewestCheckpoints(ctx context.Context, pool *pgxpool.Pool) (map[string][]byte, error) {
	rows, err := pool.Query(ctx, `SELECT DISTINCT ON (cluster) cluster, checkpoint FROM log_segments ORDER BY cluster, first_index DESC`)
	if err != nil {
		return nil, fmt.Errorf("tamper: newest checkpoints: %w", err)
	}
	out := map[string][]byte{}
	var c, cp string
	_, err = pgx.ForEachRow(rows, []any{&c, &cp}, func() error {
		out[c] = []byte(cp)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tamper: newest checkpoints: %w", err)
	}
	return out, nil
}

type verifier struct {
	o  VerifyOptions
	cr ClusterReport
	// problems are the problems found (cr.Problems counts them), but
	// when bounded only the first room of them.
	problems []Problem
	bounded  bool
	room     int
	// badLeaves are the leaves below an incremental check's verified
	// checkpoint found edited (newestLogged), each a problem once.
	badLeaves map[int64]bool
	// trusted and trustedErr are the cluster's trusted checkpoint (nil:
	// none) as read before the check's snapshot began: an integrator
	// writes a newer one after each pass, which a snapshot taken before
	// that pass would read as a log rolled back.
	trusted    []byte
	trustedErr error
}

func (v *verifier) fail(row, format string, args ...any) {
	v.report(v.problem(row, format, args...))
}

// report counts a problem, hands it to VerifyOptions.OnProblem and keeps
// it if there is room.
func (v *verifier) report(p Problem) {
	v.cr.Problems++
	if v.o.OnProblem != nil {
		v.o.OnProblem(p)
	}
	if !v.bounded || len(v.problems) < v.room {
		v.problems = append(v.problems, p)
	}
}

func (v *verifier) problem(row, format string, args ...any) Problem {
	return Problem{Cluster: v.cr.Cluster, Row: row, What: fmt.Sprintf(format, args...)}
}

type segment struct {
	First, Size, StoredFrom int64
	Kinds                   []int16
	UIDs                    []string
	Keys                    [][]byte
	Ats                     []time.Time
	Digests, Hashes         []byte
	Checkpoint              string
}

// segmentsSQL reads the segments with leaves after the first $2, each
// with what its arrays should hold checked before they are read: a
// segment whose arrays' lengths (or dimensions) are not those of its
// leaves and stored hashes, that does not begin where the one before it
// ends, whose kinds, uids, keys or ats hold a NULL (cardinality counts
// it; no leaf has one) or whose ats an infinite time (no time.Time holds
// it), or whose checkpoint is over maxCheckpointBytes (as one read from
// the bucket), is read without
// them (NULL), its lengths only, so that a planted segment of millions of
// leaves is refused, not decoded. PostgreSQL counts the lengths, and
// finds the first such element (elems: what holds it, and its leaf; or
// that an array is not flat).
var segmentsSQL = `
SELECT first_index, tree_size, stored_from, prev, n_kinds, n_uids, n_keys, n_ats, n_digests, n_hashes, n_checkpoint, coalesce(elems, ''),
       CASE WHEN ok THEN kinds END, CASE WHEN ok THEN uids END, CASE WHEN ok THEN keys END, CASE WHEN ok THEN ats END,
       CASE WHEN ok THEN digests END, CASE WHEN ok THEN hashes END, CASE WHEN ok THEN checkpoint ELSE '' END
FROM (SELECT s.*, coalesce(lag(tree_size) OVER (ORDER BY first_index), $2) AS prev,
             coalesce(cardinality(kinds), 0) AS n_kinds, coalesce(cardinality(uids), 0) AS n_uids,
             coalesce(cardinality(keys), 0) AS n_keys, coalesce(cardinality(ats), 0) AS n_ats,
             octet_length(digests)::bigint AS n_digests, octet_length(hashes)::bigint AS n_hashes,
             octet_length(checkpoint)::bigint AS n_checkpoint,
             coalesce(array_ndims(kinds), 1) = 1 AND coalesce(array_ndims(uids), 1) = 1 AND
             coalesce(array_ndims(keys), 1) = 1 AND coalesce(array_ndims(ats), 1) = 1 AS flat
      FROM log_segments s WHERE cluster = $1 AND tree_size > $2) s,
     LATERAL (SELECT CASE WHEN NOT flat THEN 'kinds, uids, keys or ats have more than one dimension' ELSE coalesce(
                'kinds hold a NULL (leaf ' || first_index + array_position(kinds, NULL) - array_lower(kinds, 1) || ')',
                'uids hold a NULL (leaf ' || first_index + array_position(uids, NULL) - array_lower(uids, 1) || ')',
                'keys hold a NULL (leaf ' || first_index + array_position(keys, NULL) - array_lower(keys, 1) || ')',
                'ats hold a NULL (leaf ' || first_index + array_position(ats, NULL) - array_lower(ats, 1) || ')',
                'ats hold an infinite time (leaf ' || first_index +
                  coalesce(array_position(ats, 'infinity'), array_position(ats, '-infinity')) - array_lower(ats, 1) || ')')
              END AS elems) z,
     LATERAL (SELECT tree_size::numeric - first_index AS n,
                     2 * first_index::numeric - bit_count(first_index::bit(64)) AS want_from,
                     2 * tree_size::numeric - bit_count(tree_size::bit(64)) AS want_to) w,
     LATERAL (SELECT first_index = prev AND w.n > 0 AND stored_from = w.want_from AND elems IS NULL AND
                     n_kinds = w.n AND n_uids = w.n AND n_keys = w.n AND n_ats = w.n AND
                     n_digests = 32 * w.n AND n_hashes = 32 * (w.want_to - stored_from) AND
                     n_checkpoint <= ` + strconv.Itoa(maxCheckpointBytes) + ` AS ok) o
ORDER BY first_index`

// readSegments reads the leaves after the first from, the stored hashes
// they added and the newest checkpoint (eachSegment).
func (v *verifier) readSegments(ctx context.Context, tx pgx.Tx, from int64) ([]leaf, []tlog.Hash, string, error) {
	c := v.cr.Cluster
	var leaves []leaf
	var stored []tlog.Hash
	var last string
	err := v.eachSegment(ctx, tx, from, func(s *segment) error {
		for i := range s.Size - s.First {
			leaves = append(leaves, leaf{Ref{Kind: Kind(s.Kinds[i]), Cluster: c, UID: s.UIDs[i], Key: s.Keys[i], At: s.Ats[i]},
				[32]byte(s.Digests[32*i:])})
		}
		for i := 0; i < len(s.Hashes); i += 32 {
			stored = append(stored, tlog.Hash(s.Hashes[i:]))
		}
		last = s.Checkpoint
		return nil
	})
	return leaves, stored, last, err
}

// eachSegment reads the segments with leaves after the first from, in
// order, one at a time: a full check holds no more. A segment that does
// not follow the one before (or from), or whose arrays are not as long as
// its leaves, is errMalformed, named by its first leaf and what is wrong,
// and its arrays are not read (segmentsSQL).
func (v *verifier) eachSegment(ctx context.Context, tx pgx.Tx, from int64, each func(*segment) error) error {
	rows, err := tx.Query(ctx, segmentsSQL, v.cr.Cluster, from)
	if err != nil {
		return err
	}
	next := from
	var s segment
	var prev int64
	var lens [7]int64 // kinds, uids, keys, ats, digests, hashes, checkpoint
	var elems string
	_, err = pgx.ForEachRow(rows, []any{&s.First, &s.Size, &s.StoredFrom, &prev, &lens[0], &lens[1], &lens[2], &lens[3], &lens[4], &lens[5], &lens[6], &elems,
		&s.Kinds, &s.UIDs, &s.Keys, &s.Ats, &s.Digests, &s.Hashes, &s.Checkpoint}, func() error {
		if what := malformedSegment(&s, next, lens, elems); what != "" {
			return fmt.Errorf("%w: segment at %d (after %d leaves): %s", errMalformed, s.First, next, what)
		}
		next = s.Size
		v.cr.Segments++
		return each(&s)
	})
	return err
}

// malformedSegment says what is wrong with segment s, which should begin
// at leaf next, given its arrays' lengths as PostgreSQL counted them (and
// then as read: segmentsSQL reads none of a segment it finds wrong) and
// what it found wrong with their elements (elems; "": nothing): ""
// when nothing is.
func malformedSegment(s *segment, next int64, lens [7]int64, elems string) string {
	n := s.Size - s.First
	switch {
	case s.First != next:
		return fmt.Sprintf("it begins at leaf %d, not %d where the log before it ends", s.First, next)
	case n <= 0:
		return fmt.Sprintf("it ends at %d leaves, not after its first", s.Size)
	case s.StoredFrom != tlog.StoredHashCount(s.First):
		return fmt.Sprintf("its stored hashes begin at %d, want %d", s.StoredFrom, tlog.StoredHashCount(s.First))
	}
	hashes := 32 * (tlog.StoredHashCount(s.Size) - s.StoredFrom)
	arrays := []struct {
		what string
		want int64
		read int
	}{{"kinds have", n, len(s.Kinds)}, {"uids have", n, len(s.UIDs)}, {"keys have", n, len(s.Keys)}, {"ats have", n, len(s.Ats)},
		{"digests have", 32 * n, len(s.Digests)}, {"hashes have", hashes, len(s.Hashes)}}
	for i, c := range arrays {
		unit := "entries"
		if i >= 4 {
			unit = "bytes"
		}
		if lens[i] != c.want {
			return fmt.Sprintf("its %s %d %s, want %d", c.what, lens[i], unit, c.want)
		}
	}
	switch {
	case elems != "":
		return "its " + elems
	case lens[6] > maxCheckpointBytes:
		return fmt.Sprintf("its checkpoint has %d bytes, more than the %d of any", lens[6], maxCheckpointBytes)
	}
	for _, c := range arrays {
		if int64(c.read) != c.want {
			return fmt.Sprintf("its %s %d read, want %d", c.what, c.read, c.want)
		}
	}
	return ""
}

func (v *verifier) cluster(ctx context.Context, tx pgx.Tx) error {
	if base := v.o.Since[v.cr.Cluster]; base != nil {
		return v.incremental(ctx, tx, base)
	}
	return v.full(ctx, tx)
}

// checkSigned computes the root of the tree of size leaves and checks it
// against the newest checkpoint, last; it keeps that checkpoint as the
// report's.
func (v *verifier) checkSigned(size int64, mem tlog.HashReader, last string) tlog.Hash {
	c := v.cr.Cluster
	root, err := tlog.TreeHash(size, mem)
	if err != nil {
		v.fail("log", "the tree of %d leaves: %v", size, err)
	}
	v.cr.Size, v.cr.Root = size, root
	if size > 0 {
		v.cr.Checkpoint = []byte(last)
		signed, err := OpenCheckpoint([]byte(last), v.o.Verifier)
		switch {
		case err != nil:
			v.fail("log", "the checkpoint at size %d: %v", size, err)
		case signed.Origin != Origin(v.o.Verifier.Name(), c):
			v.fail("log", "the checkpoint at size %d is of another log (origin %q)", size, signed.Origin)
		case signed.Size != size:
			v.fail("log", "the checkpoint says %d leaves, the log has %d", signed.Size, size)
		case root != signed.Root:
			v.fail("log", "the tree of %d leaves has root %v, the signed checkpoint %v (the log's hashes were edited or reordered)", size, root, signed.Root)
		}
	}
	return root
}

// checkTree checks the hash of each leaf after the first first, and
// rebuilds the stored hashes they added from them: a leaf whose reference
// or digest was edited, or interior hashes that were, fail. below reads
// the stored hashes of the first first leaves (nil when first is 0). It
// returns the reader of the tree's hashes: below's, then the rebuilt.
func (v *verifier) checkTree(first int64, leaves []leaf, stored []tlog.Hash, below tlog.HashReader) tlog.HashReader {
	from := tlog.StoredHashCount(first)
	rebuilt := make([]tlog.Hash, 0, len(stored))
	r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		var low []int64 // read from below, in one call
		for k, i := range idx {
			switch {
			case i >= from && i-from < int64(len(rebuilt)):
				out[k] = rebuilt[i-from]
			case i >= 0 && i < from && below != nil:
				low = append(low, i)
			default:
				return nil, fmt.Errorf("stored hash %d is missing", i)
			}
		}
		if len(low) > 0 {
			hs, err := below.ReadHashes(low)
			if err != nil {
				return nil, err
			}
			j := 0
			for k, i := range idx {
				if i < from {
					out[k], j = hs[j], j+1
				}
			}
		}
		return out, nil
	})
	for i, l := range leaves {
		n := first + int64(i)
		at := tlog.StoredHashIndex(0, n) - from
		if LeafHash(l.ref, l.digest) != stored[at] {
			v.fail(l.ref.String(), "leaf %d does not match the log's hash (the log was edited)", n)
		}
		hs, err := tlog.StoredHashesForRecordHash(n, stored[at], r)
		if err != nil {
			v.fail("log", "rebuilding the tree at leaf %d: %v", n, err)
			break
		}
		rebuilt = append(rebuilt, hs...)
	}
	for i := range rebuilt {
		if i < len(stored) && rebuilt[i] != stored[i] {
			level, n := tlog.SplitStoredHashIndex(from + int64(i))
			v.fail("log", "stored hash %d (level %d, node %d) does not match the leaves below it", from+int64(i), level, n)
		}
	}
	return r
}

// checkTrusted checks that the log extends the trusted checkpoint kept
// outside the database.
func (v *verifier) checkTrusted(ctx context.Context, size int64, root tlog.Hash, mem tlog.HashReader) {
	if v.o.Trusted == nil {
		return
	}
	b, err := v.trusted, v.trustedErr
	if err != nil {
		v.fail("log", "the trusted checkpoint: %v", err)
		return
	}
	if b == nil {
		return
	}
	trusted, err := OpenCheckpoint(b, v.o.Verifier)
	if err != nil {
		v.fail("log", "the trusted checkpoint: %v", err)
		return
	}
	v.cr.Trusted, v.cr.TrustedSize = true, trusted.Size
	if len(v.o.Witnesses) > 0 {
		n, err := CheckCosignatures(b, v.o.Witnesses)
		v.cr.Cosigned = n
		switch {
		case err != nil:
			v.fail("log", "the trusted checkpoint of %d leaves: %v", trusted.Size, err)
		case n < v.o.WitnessQuorum:
			v.fail("log", "the trusted checkpoint of %d leaves is cosigned by %d of the witnesses, fewer than the quorum of %d", trusted.Size, n, v.o.WitnessQuorum)
		}
	}
	switch {
	case trusted.Origin != Origin(v.o.Verifier.Name(), v.cr.Cluster):
		v.fail("log", "the trusted checkpoint is of another log (origin %q)", trusted.Origin)
	case trusted.Size > size:
		v.fail("log", "the log has %d leaves, fewer than the %d of the trusted checkpoint: it was rolled back or truncated", size, trusted.Size)
	case trusted.Size > 0:
		p, err := tlog.ProveTree(size, trusted.Size, mem)
		if err == nil {
			err = tlog.CheckTree(p, size, root, trusted.Size, trusted.Root)
		}
		if err != nil {
			v.fail("log", "the log of %d leaves does not extend the trusted checkpoint of %d: %v", size, trusted.Size, err)
		}
	}
}

// readPending reads the cluster's pending rows (by id) and the pending
// retention cutoffs.
func (v *verifier) readPending(ctx context.Context, tx pgx.Tx) (map[string]bool, error) {
	c := v.cr.Cluster
	pending := map[string]bool{}
	// A NULL reference (refused by the CHECK of migration 00027), or an
	// infinite time (which it allows, and no time.Time holds), names no
	// row: it is left out, as the integrator leaves it, not an error that
	// stops the check.
	prows, err := tx.Query(ctx, "SELECT kind, coalesce(uid, ''), coalesce(key, ''::bytea), at FROM log_pending_rows WHERE cluster = $1 AND kind IS NOT NULL AND isfinite(at)", c)
	if err != nil {
		return nil, err
	}
	var p Ref
	_, err = pgx.ForEachRow(prows, []any{&p.Kind, &p.UID, &p.Key, &p.At}, func() error {
		p.Cluster = c
		pending[p.id()] = true
		if p.Kind == KindCutoff {
			v.cr.PendingCutoffs = append(v.cr.PendingCutoffs, p.At)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(v.cr.PendingCutoffs, time.Time.Compare)
	v.cr.PendingCutoffs = slices.CompactFunc(v.cr.PendingCutoffs, time.Time.Equal)
	return pending, nil
}

// checkLeaves compares the leaves after the first first with the rows
// stored (rows, by id); newest is the time of the newest row logged in the
// first first leaves. It returns the leaf of each row id logged.
func (v *verifier) checkLeaves(first int64, newest time.Time, leaves []leaf, rows map[string]leaf) map[string]int64 {
	for i, l := range leaves {
		newest = v.noteCutoff(first+int64(i), l.ref, newest)
	}
	cov := v.coverage()
	logged := map[string]int64{}
	for li, l := range leaves {
		i := first + int64(li)
		if l.ref.Kind == KindCutoff {
			if cutoffDigest(l.ref) != l.digest {
				v.fail(l.ref.String(), "leaf %d: the cutoff's digest is not its own", i)
			}
			continue
		}
		id := l.ref.id()
		if j, ok := logged[id]; ok {
			v.fail(l.ref.String(), "logged twice, at leaves %d and %d", j, i)
			continue
		}
		logged[id] = i
		var row *leaf
		if r, ok := rows[id]; ok {
			row = &r
		}
		if what := v.checkLeaf(cov, i, l, row); what != "" {
			v.fail(l.ref.String(), "%s", what)
		}
	}
	return logged
}

// noteCutoff adds leaf i to the report's cutoffs if it is one, and
// returns the time of the newest row logged up to it (newest: before it).
// A cutoff can justify up to that time, less the minimum retention: a
// retention pass logs now − retention, and a row logged before it was
// stored by then; a later cutoff was not written by retention (or the
// clocks were off).
func (v *verifier) noteCutoff(i int64, r Ref, newest time.Time) time.Time {
	if r.Kind != KindCutoff {
		return maxTime(newest, r.At)
	}
	justified := !newest.IsZero() && !r.At.After(newest.Add(-v.o.MinRetention))
	v.cr.Cutoffs = append(v.cr.Cutoffs, Cutoff{Leaf: i, At: r.At, Newest: newest, Justified: justified})
	return newest
}

// coverage is what the report's cutoffs cover: upTo[k], the latest time
// the cutoffs from the k-th on cover; claims[k], the one of them that
// claims the most (-1: none), which names an unjustified cutoff.
type coverage struct {
	cutoffs []Cutoff
	upTo    []time.Time
	claims  []int
}

func (v *verifier) coverage() coverage {
	cs := v.cr.Cutoffs
	c := coverage{cutoffs: cs, upTo: make([]time.Time, len(cs)+1), claims: make([]int, len(cs)+1)}
	c.claims[len(cs)] = -1
	for k := len(cs) - 1; k >= 0; k-- {
		c.upTo[k], c.claims[k] = c.upTo[k+1], c.claims[k+1]
		co := cs[k]
		upTo := co.At
		if !co.Justified {
			upTo = co.Newest.Add(-v.o.MinRetention)
		}
		if upTo.After(c.upTo[k]) {
			c.upTo[k] = upTo
		}
		if c.claims[k] < 0 || co.At.After(cs[c.claims[k]].At) {
			c.claims[k] = k
		}
	}
	return c
}

// after is what the cutoffs logged after leaf i cover, and the one that
// claims the most (-1: none).
func (c coverage) after(i int64) (time.Time, int) {
	k, _ := slices.BinarySearchFunc(c.cutoffs, i+1, func(co Cutoff, leaf int64) int { return cmp.Compare(co.Leaf, leaf) })
	return c.upTo[k], c.claims[k]
}

// checkLeaf checks the row of leaf i, a row's first leaf: present (row)
// and unchanged, or gone behind a cutoff logged after it. It counts the
// row, or returns what is wrong.
func (v *verifier) checkLeaf(cov coverage, i int64, l leaf, row *leaf) string {
	covers, claims := cov.after(i)
	pcs := v.cr.PendingCutoffs
	switch {
	case row == nil && l.ref.At.Before(covers):
		v.cr.Retained++
	case row == nil && claims >= 0 && l.ref.At.Before(cov.cutoffs[claims].At):
		co := cov.cutoffs[claims]
		return fmt.Sprintf("missing: logged at leaf %d; the retention cutoff of %s at leaf %d would cover it, but no retention allowed that cutoff then "+
			"(the newest row logged before it is of %s, less the minimum retention %s): planted, not written by retention",
			i, co.At.UTC().Format(time.RFC3339Nano), co.Leaf, co.Newest.UTC().Format(time.RFC3339Nano), v.o.MinRetention)
	case row == nil && len(pcs) > 0 && l.ref.At.Before(pcs[len(pcs)-1]):
		return fmt.Sprintf("missing: logged at leaf %d; a retention cutoff of %s is pending, not logged (an integrator refuses one later than the retention allows): it covers nothing",
			i, pcs[len(pcs)-1].UTC().Format(time.RFC3339Nano))
	case row == nil:
		return fmt.Sprintf("missing: logged at leaf %d, and no retention cutoff logged after it covers it", i)
	case row.digest != l.digest || !row.ref.At.Equal(l.ref.At):
		return fmt.Sprintf("changed since it was logged at leaf %d", i)
	default:
		v.cr.Rows++
	}
	return ""
}

// checkExtra fails each row that is neither logged nor pending, in a
// stable order. before, when set, says of rows not among logged which are
// logged unchanged before them (an incremental check's older leaves: ""),
// or what is wrong with those it finds there.
func (v *verifier) checkExtra(rows map[string]leaf, logged map[string]int64, pending map[string]bool, before func([]leaf) map[string]string) {
	var extra []leaf
	for id, r := range rows {
		if _, ok := logged[id]; !ok {
			if pending[id] {
				v.cr.Pending++
				continue
			}
			extra = append(extra, r)
		}
	}
	slices.SortFunc(extra, func(a, b leaf) int { return compareRefs(a.ref, b.ref) })
	v.reportExtra(extra, before)
}

// reportExtra fails each row of extra, rows neither logged nor pending
// (but, with before, those it finds logged before them).
func (v *verifier) reportExtra(extra []leaf, before func([]leaf) map[string]string) {
	var found map[string]string
	if before != nil && len(extra) > 0 {
		found = before(extra)
	}
	for _, r := range extra {
		what, ok := found[r.ref.id()]
		switch {
		case ok && what == "":
			v.cr.Rows++
		case ok:
			v.fail(r.ref.String(), "%s", what)
		case before != nil:
			// Found by its key and time: a row whose time was edited
			// since it was logged is not found either.
			v.fail(r.ref.String(), "not in the log, and not pending: written around the ingest, or its time edited since it was logged (a full verify tells which)")
		default:
			v.fail(r.ref.String(), "not in the log, and not pending: written around the ingest")
		}
	}
}
