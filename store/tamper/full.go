package tamper

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

// A full check holds neither the log nor the record in memory: its peak
// memory is that of a segment and a page of rows, whatever the number of
// rows. It reads the segments twice. First in log order, one at a time:
// each leaf's hash, the tree's stored hashes rebuilt from them (keeping
// only the last hash of each level, all the next leaf needs) and the
// retention cutoffs with the newest row logged before each. Then the
// leaves of rows and the rows themselves, as three server-side cursors
// that PostgreSQL sorts by the row's primary key (spilling to disk, not
// to the verifier's memory), merged a page at a time: a row and its leaf
// meet, a row with no leaf is not logged. Text is sorted COLLATE "C",
// byte by byte as Go compares it: a database's own collation (ICU, glibc)
// sorts otherwise. Each problem is reported as found (VerifyOptions.
// OnProblem), the rows' in the order of their ids, not held to be sorted;
// the pending rows are a fourth cursor sorted as the rows. What it holds
// besides grows with the cutoffs, not with the record, its pending rows
// or its problems.

// pageRows is the rows a cursor's FETCH reads at a time.
const pageRows = 1000

// leavesByRowSQL reads the leaves of rows (not cutoffs), ordered as the
// rows are read (compareIDs), each id's leaves in log order.
const leavesByRowSQL = `
SELECT s.first_index + l.n - 1, l.kind, coalesce(l.uid, ''), coalesce(l.key, ''::bytea), l.at,
       substring(s.digests FROM (32 * (l.n - 1) + 1)::int FOR 32)
FROM log_segments s, unnest(s.kinds, s.uids, s.keys, s.ats) WITH ORDINALITY AS l(kind, uid, key, at, n)
WHERE s.cluster = $1 AND l.kind <> 3
ORDER BY l.kind, coalesce(l.uid, '') COLLATE "C", coalesce(l.key, ''::bytea), CASE WHEN l.kind <> 2 THEN l.at END, 1`

// The rows of a cluster, ordered by their primary key as compareIDs is.
var (
	eventsByIDSQL   = eventsOfClusterSQL + ` ORDER BY e.event_key, e.stage_at`
	versionsByIDSQL = versionsOfClusterSQL + ` ORDER BY v.uid COLLATE "C", v.version_key`
)

// compareIDs orders rows by their id (Ref.id): table, uid, key, and the
// time but of a version's (changed_at is not part of its key).
func compareIDs(a, b Ref) int {
	c := cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.UID, b.UID), bytes.Compare(a.Key, b.Key))
	if c != 0 || a.Kind == KindVersion {
		return c
	}
	return cmp.Compare(a.At.UnixMicro(), b.At.UnixMicro())
}

// indexed is a leaf and its index in the log.
type indexed struct {
	leaf
	index int64
}

func (v *verifier) full(ctx context.Context, tx pgx.Tx) error {
	var b treeBuilder
	if v.trusted != nil && v.trustedErr == nil {
		if t, err := OpenCheckpoint(v.trusted, v.o.Verifier); err == nil {
			b.near = t.Size // checkTrusted proves the log extends it
		}
	}
	size, last, err := v.scanLog(ctx, tx, &b)
	if err != nil {
		if isMalformed(err) {
			v.fail("log", "%v: the log's segments were edited, removed or planted", err)
			return nil
		}
		return err
	}
	v.cr.Size = size
	mem := b.reader(&storedHashes{ctx: ctx, q: tx, cluster: v.cr.Cluster, mem: map[int64]tlog.Hash{}})
	root := v.checkSigned(size, mem, last)
	v.checkTrusted(ctx, size, root, mem)
	if err := v.readPendingCutoffs(ctx, tx); err != nil {
		return err
	}
	return v.mergeRows(ctx, tx)
}

// pendingByIDSQL reads the pending rows (not cutoffs), ordered as the
// rows are read (compareIDs). A NULL reference (refused by the CHECK of
// migration 00027), or an infinite time, names no row: it is left out, as
// readPending does.
const pendingByIDSQL = `
SELECT kind, coalesce(uid, ''), coalesce(key, ''::bytea), at FROM log_pending_rows
WHERE cluster = $1 AND kind IN (1, 2) AND isfinite(at)
ORDER BY kind, coalesce(uid, '') COLLATE "C", coalesce(key, ''::bytea), CASE WHEN kind <> 2 THEN at END`

// readPendingCutoffs reads the pending retention cutoffs (readPending's,
// without the rows: a full check merges those as a cursor; an infinite
// one, which no retention asks for, is left out as readPending leaves it).
func (v *verifier) readPendingCutoffs(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, "SELECT DISTINCT at FROM log_pending_rows WHERE cluster = $1 AND kind = 3 AND isfinite(at) ORDER BY at", v.cr.Cluster)
	if err != nil {
		return err
	}
	v.cr.PendingCutoffs, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
	return err
}

// treeBuilder rebuilds the tree's stored hashes leaf after leaf.
type treeBuilder struct {
	// last is the last hash rebuilt at each level, and its node.
	last [64]struct {
		n  int64
		h  tlog.Hash
		ok bool
	}
	rebuilt int64 // the stored hashes rebuilt
	broken  bool  // rebuilding failed: no more is rebuilt
	// differ holds rebuilt hashes that differ from the stored ones (each
	// a problem), by index: the tree's hashes are the stored ones but
	// these, and last. It keeps only those beside the path to leaf near
	// (the trusted checkpoint's size: a consistency proof from it reads
	// them, and the right edge of the tree, last), not each that differs:
	// a log whose every stored hash was edited is checked in the memory
	// of one with none. dropped counts those not kept: then the reader
	// refuses what it might not know, rather than read an edited one.
	differ  map[int64]tlog.Hash
	near    int64
	dropped int64
}

// keeps says whether the rebuilt hash of node n at level, when it
// differs from the stored one, is kept: it is beside the path to leaf
// near-1, or to near.
func (b *treeBuilder) keeps(level int, n int64) bool {
	if b.near <= 0 {
		return false
	}
	at := (b.near - 1) >> level
	return n >= at-1 && n <= at+2
}

// ReadHashes reads the hashes the next leaf's stored hashes are made from.
func (b *treeBuilder) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for k, i := range idx {
		level, n := tlog.SplitStoredHashIndex(i)
		if l := b.last[level]; l.ok && l.n == n {
			out[k] = l.h
			continue
		}
		return nil, fmt.Errorf("stored hash %d is missing", i)
	}
	return out, nil
}

// reader reads the tree's hashes once rebuilt: the stored ones (they
// were checked), but those that differ from the rebuilt.
func (b *treeBuilder) reader(stored tlog.HashReader) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		for _, i := range idx {
			if i < 0 || i >= b.rebuilt {
				return nil, fmt.Errorf("stored hash %d is missing", i)
			}
		}
		out, err := stored.ReadHashes(idx)
		if err != nil {
			return nil, err
		}
		for k, i := range idx {
			level, n := tlog.SplitStoredHashIndex(i)
			if l := b.last[level]; l.ok && l.n == n {
				out[k] = l.h
			} else if h, ok := b.differ[i]; ok {
				out[k] = h
			} else if b.dropped > 0 && !b.keeps(level, n) {
				return nil, fmt.Errorf("stored hash %d (level %d, node %d) was not kept: %d edited stored hashes were not", i, level, n, b.dropped)
			}
		}
		return out, nil
	})
}

// scanLog reads the segments in log order, one at a time: it checks each
// leaf's hash and the stored hashes (checkTree's checks), notes the
// retention cutoffs (checkLeaves') and returns the log's size and newest
// checkpoint.
func (v *verifier) scanLog(ctx context.Context, tx pgx.Tx, b *treeBuilder) (int64, string, error) {
	c := v.cr.Cluster
	var size int64
	var last string
	var newest time.Time
	err := v.eachSegment(ctx, tx, 0, func(s *segment) error {
		for i := range s.Size - s.First {
			n := s.First + i
			ref := Ref{Kind: Kind(s.Kinds[i]), Cluster: c, UID: s.UIDs[i], Key: s.Keys[i], At: s.Ats[i]}
			digest := [32]byte(s.Digests[32*i:])
			newest = v.noteCutoff(n, ref, newest)
			if ref.Kind == KindCutoff && cutoffDigest(ref) != digest {
				v.fail(ref.String(), "leaf %d: the cutoff's digest is not its own", n)
			}
			if b.broken {
				continue
			}
			at := tlog.StoredHashIndex(0, n) - s.StoredFrom
			stored := tlog.Hash(s.Hashes[32*at:])
			if LeafHash(ref, digest) != stored {
				v.fail(ref.String(), "leaf %d does not match the log's hash (the log was edited)", n)
			}
			hs, err := tlog.StoredHashesForRecordHash(n, stored, b)
			if err != nil {
				v.fail("log", "rebuilding the tree at leaf %d: %v", n, err)
				b.broken = true
				continue
			}
			for _, h := range hs {
				i := b.rebuilt
				level, node := tlog.SplitStoredHashIndex(i)
				b.last[level].n, b.last[level].h, b.last[level].ok = node, h, true
				if j := i - s.StoredFrom; tlog.Hash(s.Hashes[32*j:]) != h {
					switch {
					case !b.keeps(level, node):
						b.dropped++
					case b.differ == nil:
						b.differ = map[int64]tlog.Hash{i: h}
					default:
						b.differ[i] = h
					}
					v.fail("log", "stored hash %d (level %d, node %d) does not match the leaves below it", i, level, node)
				}
				b.rebuilt++
			}
		}
		size, last = s.Size, s.Checkpoint
		return nil
	})
	return size, last, err
}

// mergeRows compares the leaves of rows with the rows, both in row order:
// a leaf's row is present and unchanged, or gone behind a cutoff; a row
// is logged, or pending. Its problems are reported as found, in row order.
func (v *verifier) mergeRows(ctx context.Context, tx pgx.Tx) error {
	c := v.cr.Cluster
	for _, d := range []struct{ name, sql string }{
		{"verify_leaves", leavesByRowSQL}, {"verify_events", eventsByIDSQL}, {"verify_versions", versionsByIDSQL},
		{"verify_pending", pendingByIDSQL},
	} {
		if _, err := tx.Exec(ctx, "DECLARE "+d.name+" NO SCROLL CURSOR FOR "+d.sql, c); err != nil {
			return fmt.Errorf("declare %s: %w", d.name, err)
		}
	}
	leaves := &stream[indexed]{next: func(page []indexed) ([]indexed, error) {
		rows, err := tx.Query(ctx, fmt.Sprintf("FETCH %d FROM verify_leaves", pageRows))
		if err != nil {
			return nil, err
		}
		var l indexed
		var kind int16
		var digest []byte
		_, err = pgx.ForEachRow(rows, []any{&l.index, &kind, &l.ref.UID, &l.ref.Key, &l.ref.At, &digest}, func() error {
			l.ref.Kind, l.ref.Cluster, l.digest = Kind(kind), c, [32]byte(digest)
			page = append(page, l)
			l.ref.Key = nil // scanned into anew
			return nil
		})
		return page, err
	}}
	cursor := "verify_events"
	rows := &stream[leaf]{next: func(page []leaf) ([]leaf, error) {
		for cursor != "" {
			k := KindEvent
			if cursor == "verify_versions" {
				k = KindVersion
			}
			err := scanRows(ctx, tx, k, fmt.Sprintf("FETCH %d FROM %s", pageRows, cursor), nil, func(r Ref, d [32]byte) error {
				page = append(page, leaf{r, d})
				return nil
			})
			if err != nil || len(page) > 0 {
				return page, err
			}
			if cursor == "verify_events" {
				cursor = "verify_versions"
			} else {
				cursor = ""
			}
		}
		return page, nil
	}}
	pending := &stream[Ref]{next: func(page []Ref) ([]Ref, error) {
		rows, err := tx.Query(ctx, fmt.Sprintf("FETCH %d FROM verify_pending", pageRows))
		if err != nil {
			return nil, err
		}
		var p Ref
		_, err = pgx.ForEachRow(rows, []any{&p.Kind, &p.UID, &p.Key, &p.At}, func() error {
			p.Cluster = c
			page = append(page, p)
			p.Key = nil // scanned into anew
			return nil
		})
		return page, err
	}}
	cov := v.coverage()
	// unlogged takes the rows with no leaf in row order: each is pending
	// (the pending rows are passed to it), or a problem.
	unlogged := func(r leaf) error {
		for {
			p, err := pending.peek()
			if err != nil {
				return err
			}
			o := 1
			if p != nil {
				o = compareIDs(*p, r.ref)
			}
			if o == 0 {
				v.cr.Pending++
				return nil
			}
			if o > 0 {
				v.reportExtra([]leaf{r}, nil)
				return nil
			}
			pending.skip()
		}
	}
	var first indexed // the first leaf of the id the last leaf had
	seen := false
	for {
		l, err := leaves.take()
		if err != nil {
			return err
		}
		if l == nil {
			break
		}
		if seen && compareIDs(first.ref, l.ref) == 0 {
			v.fail(l.ref.String(), "logged twice, at leaves %d and %d", first.index, l.index)
			continue
		}
		first, seen = *l, true
		var row *leaf
		for {
			r, err := rows.peek()
			if err != nil {
				return err
			}
			if r == nil {
				break
			}
			o := compareIDs(r.ref, l.ref)
			if o > 0 {
				break
			}
			rows.skip()
			if o == 0 {
				row = r
				break
			}
			if err := unlogged(*r); err != nil {
				return err
			}
		}
		if what := v.checkLeaf(cov, l.index, l.leaf, row); what != "" {
			v.fail(l.ref.String(), "%s", what)
		}
	}
	for {
		r, err := rows.take()
		if err != nil {
			return err
		}
		if r == nil {
			break
		}
		if err := unlogged(*r); err != nil {
			return err
		}
	}
	return nil
}

// stream reads a cursor a page at a time: next appends the next page to
// page (empty: the end).
type stream[T any] struct {
	next func(page []T) ([]T, error)
	page []T
	i    int
	done bool
}

// peek returns the next item, valid until the next call (nil: the end).
func (s *stream[T]) peek() (*T, error) {
	if s.i == len(s.page) && !s.done {
		clear(s.page)
		p, err := s.next(s.page[:0])
		if err != nil {
			return nil, err
		}
		s.page, s.i, s.done = p, 0, len(p) == 0
	}
	if s.done {
		return nil, nil
	}
	return &s.page[s.i], nil
}

func (s *stream[T]) skip() { s.i++ }

// take returns the next item and moves past it.
func (s *stream[T]) take() (*T, error) {
	t, err := s.peek()
	if t != nil {
		s.skip()
	}
	return t, err
}
