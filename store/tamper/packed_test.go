package tamper

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store/tamper/refpack"
)

// TestPackedRefsSQLAsGo: log_pending_refs (the view log_pending_rows)
// reads a packed value as refpack.Decode does, row for row: hostile uids,
// lengths of more than one byte, the earliest and latest times PostgreSQL
// holds, times before 1970 and between microseconds of a day.
func TestPackedRefsSQLAsGo(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	d := bytes.Repeat([]byte{7}, 32)
	var p refpack.Builder
	p.Add(refpack.KindEvent, time.UnixMicro(refpack.MinMicros), "", []byte{}, d)
	p.Add(refpack.KindVersion, time.UnixMicro(math.MaxInt64), strings.Repeat("\u202e", 60), bytes.Repeat([]byte{0}, 200), nil)
	p.Add(refpack.KindVersion, time.UnixMicro(-1), "u", []byte{1}, d)
	p.Add(refpack.KindEvent, time.UnixMicro(-86_400_000_001), "", []byte{2}, nil)
	for i, s := range hostile {
		p.Add(refpack.KindVersion, time.UnixMicro(1_790_000_000_000_000+int64(i)*86_400_000_123), s, []byte(s), d)
	}
	var want []refpack.Row
	if _, _, err := refpack.Decode(p.Bytes(), func(r refpack.Row) { want = append(want, r) }); err != nil {
		t.Fatal(err)
	}
	rows, err := e.st.Pool().Query(ctx, `SELECT kind, uid, key, at, digest FROM log_pending_refs($1, $2, $3)`, p.Bytes(), p.First(), p.Len())
	if err != nil {
		t.Fatal(err)
	}
	var got []refpack.Row
	var r refpack.Row
	if _, err := pgx.ForEachRow(rows, []any{&r.Kind, &r.UID, &r.Key, &r.At, &r.Digest}, func() error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("log_pending_refs: %d rows, Decode %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.Kind || !g.At.Equal(w.At) || g.UID != w.UID || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Digest, w.Digest) || (g.Digest == nil) != (w.Digest == nil) {
			t.Errorf("row %d: log_pending_refs %+v, Decode %+v", i, g, w)
		}
	}
}

// malformedCases are the ways a planted packed batch is not the ingest's:
// each changes a batch of one event and one version (refs, first_at,
// ref_count as written) into something else.
var malformedCases = []struct {
	name   string
	change func(refs []byte, first time.Time, n int) ([]byte, any, any)
}{
	{"truncated", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b[:len(b)-1], f, n }},
	{"a byte more", func(b []byte, f time.Time, n int) ([]byte, any, any) { return append(b, 0), f, n }},
	{"version 2", func(b []byte, f time.Time, n int) ([]byte, any, any) { b[0] = 2; return b, f, n }},
	{"kind 3", func(b []byte, f time.Time, n int) ([]byte, any, any) { b[1] = 3; return b, f, n }},
	{"-infinity", func(b []byte, f time.Time, n int) ([]byte, any, any) {
		copy(b[2:], []byte{0x80, 0, 0, 0, 0, 0, 0, 0})
		return b, f, n
	}},
	{"uid not UTF-8", func(b []byte, f time.Time, n int) ([]byte, any, any) { return repack(b, "\xff"), f, n }},
	{"NUL in uid", func(b []byte, f time.Time, n int) ([]byte, any, any) { return repack(b, "a\x00b"), f, n }},
	{"first_at later", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, f.Add(time.Microsecond), n }},
	{"first_at earlier", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, f.Add(-time.Hour), n }},
	{"first_at infinity", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, "infinity", n }},
	{"first_at NULL", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, nil, n }},
	{"ref_count more", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, f, n + 1 }},
	{"ref_count fewer", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, f, n - 1 }},
	{"ref_count NULL", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, f, nil }},
	// Review r8 F1: a ref_count taken as a size to allocate killed the
	// ingest process (255 GiB asked) at every start.
	{"ref_count 2^31-1", func(b []byte, f time.Time, n int) ([]byte, any, any) { return b, f, math.MaxInt32 }},
	// Review r8 F2: more rows than a value may hold (refpack.MaxRows), as
	// ref_count says: refused before they are read.
	{"more rows than MaxRows", func(b []byte, f time.Time, n int) ([]byte, any, any) {
		var p refpack.Builder
		if _, _, err := refpack.Decode(b, func(r refpack.Row) { p.Add(r.Kind, r.At, r.UID, r.Key, r.Digest) }); err != nil {
			panic(err)
		}
		for p.Len() <= refpack.MaxRows {
			p.Add(refpack.KindEvent, f.Add(time.Second), "", nil, nil)
		}
		return p.Bytes(), f, p.Len()
	}},
	// More bytes than a value may have (refpack.MaxBytes): not even sent
	// to the integrator.
	{"more bytes than MaxBytes", func(b []byte, f time.Time, n int) ([]byte, any, any) {
		var p refpack.Builder
		if _, _, err := refpack.Decode(b, func(r refpack.Row) { p.Add(r.Kind, r.At, r.UID, r.Key, r.Digest) }); err != nil {
			panic(err)
		}
		p.Add(refpack.KindVersion, f.Add(time.Second), "u", make([]byte, refpack.MaxBytes), nil)
		return p.Bytes(), f, p.Len()
	}},
}

// repack is b with its version rows' uid replaced.
func repack(b []byte, uid string) []byte {
	var p refpack.Builder
	if _, _, err := refpack.Decode(b, func(r refpack.Row) {
		if r.Kind == refpack.KindVersion {
			r.UID = uid
		}
		p.Add(r.Kind, r.At, r.UID, r.Key, r.Digest)
	}); err != nil {
		panic(err)
	}
	return p.Bytes()
}

// TestMalformedPackedBatchStopsNothing: a packed batch that is not the
// ingest's (its value malformed, or its first_at or ref_count not its
// rows'; the ingest role owns the table and may write anything, even
// with the constraints dropped) is taken out by the integrator unlogged,
// counted and logged, and shown by log_pending_rows as no row; every other
// batch is logged, and verify reports the rows it named as neither logged
// nor pending.
func TestMalformedPackedBatchStopsNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Add(-time.Minute)
	e.exec(`ALTER TABLE log_pending_batches ALTER COLUMN first_at DROP NOT NULL, ALTER COLUMN ref_count DROP NOT NULL,
		DROP CONSTRAINT log_pending_batches_ref_count`)
	for i, c := range malformedCases {
		cluster := fmt.Sprintf("c%d", i)
		e.write(e.batch(cluster, now, 1))
		e.integrate() // a log, with the batch's rows
		e.write(e.batch(cluster, now, 1))
		var refs []byte
		var first time.Time
		var n int
		if err := e.st.Pool().QueryRow(ctx, `SELECT refs, first_at, ref_count FROM log_pending_batches WHERE cluster = $1`, cluster).Scan(&refs, &first, &n); err != nil {
			t.Fatal(err)
		}
		b, f, m := c.change(refs, first, n)
		e.exec(`UPDATE log_pending_batches SET refs = $2, first_at = $3, ref_count = $4 WHERE cluster = $1`, cluster, b, f, m)
		if n := e.count(`SELECT count(*) FROM log_pending_rows WHERE cluster = $1`, cluster); n != 0 {
			t.Errorf("%s: log_pending_rows shows %d rows of it, want none", c.name, n)
		}
	}
	e.write(e.batch("default", now, 2))
	for range 2 {
		if err := e.in.IntegrateAll(ctx); err != nil {
			t.Fatalf("passes with malformed batches pending: %v", err)
		}
	}
	if n := e.count(`SELECT count(*) FROM log_pending_batches`); n != 0 {
		t.Errorf("%d batch rows left after the passes, want none", n)
	}
	if got := e.in.MalformedBatches(); got != int64(len(malformedCases)) {
		t.Errorf("MalformedBatches %d, want %d", got, len(malformedCases))
	}
	var found []string
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, KeepProblems: -1,
		OnProblem: func(p Problem) { found = append(found, p.String()) }})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(found, "\n")
	for _, cr := range rep.Clusters {
		problems, rows := 2, 2 // the planted batch's rows, and those logged before
		if cr.Cluster == "default" {
			problems, rows = 0, 4
		}
		if cr.Problems != problems || cr.Rows != rows {
			t.Errorf("cluster %q: %d problems, %d rows; want %d, %d", cr.Cluster, cr.Problems, cr.Rows, problems, rows)
		}
	}
	if strings.Count(all, "not in the log, and not pending") != 2*len(malformedCases) {
		t.Errorf("verify: %s\nwant each planted batch's two rows neither logged nor pending", all)
	}
}

// TestBothForms: a batch of parallel arrays (an older replica's, during a
// rolling upgrade) beside packed ones: the trigger gives it its first_at
// and ref_count, the view shows its rows, and a pass logs both forms, in
// first_at order. A row of both forms, or of neither, is refused.
func TestBothForms(t *testing.T) {
	e := newEnv(t)
	now := time.Now().Add(-time.Minute)
	e.write(e.batch("default", now.Add(time.Second), 2))
	e.write(e.batch("default", now, 3)) // the older: written as an older replica writes it
	e.exec(`INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats, digests)
		SELECT 'default', array_agg(l.kind), array_agg(l.uid), array_agg(l.key), array_agg(l.at), array_agg(l.digest)
		FROM log_pending_batches b, log_pending_refs(b.refs, b.first_at, b.ref_count) l WHERE b.ref_count = 6`)
	e.exec(`DELETE FROM log_pending_batches WHERE refs IS NOT NULL AND ref_count = 6`)
	if n := e.count(`SELECT count(*) FROM log_pending_batches WHERE refs IS NULL AND ref_count = 6 AND first_at = (SELECT min(a) FROM unnest(ats) a)`); n != 1 {
		t.Fatalf("%d batches of arrays with their first_at and ref_count, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM log_pending_rows`); n != 10 {
		t.Errorf("log_pending_rows: %d rows, want 10", n)
	}
	if rep := e.verify(false); !rep.OK() || rep.Clusters[0].Pending != 10 {
		t.Fatalf("verify with both pending: %+v\n%s", rep.Clusters, problems(rep))
	}
	e.in.o.MaxLeaves = 6
	if n, err := e.in.Integrate(context.Background(), "default"); err != nil || n != 6 {
		t.Fatalf("the first pass took %d rows (%v), want the older batch's 6", n, err)
	}
	e.integrate()
	if rep := e.verify(true); !rep.OK() || rep.Clusters[0].Rows != 10 || e.in.MalformedBatches() != 0 {
		t.Fatalf("verify: %+v\n%s", rep.Clusters, problems(rep))
	}
	for _, q := range []string{
		`INSERT INTO log_pending_batches (cluster, refs, first_at, ref_count, kinds, uids, keys, ats) VALUES ('x', '\x01', now(), 1, '{2}', '{u}', ARRAY['\x00'::bytea], ARRAY[now()])`,
		`INSERT INTO log_pending_batches (cluster, first_at, ref_count) VALUES ('x', now(), 1)`,
		`INSERT INTO log_pending_batches (cluster, refs, first_at, ref_count) VALUES ('x', '\x01', now(), 0)`,
		`INSERT INTO log_pending_batches (cluster, refs, ref_count) VALUES ('x', '\x01', 1)`,
	} {
		if _, err := e.st.Pool().Exec(context.Background(), q); err == nil {
			t.Errorf("the table took %s", q)
		}
	}
}

// olderDrainBatchesSQL is drainBatchesSQL as the release before migration
// 00033 ran it.
const olderDrainBatchesSQL = `
DELETE FROM log_pending_batches
WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM (
        SELECT ctid, sum(cardinality(kinds)) OVER (ORDER BY first_at, ctid) - cardinality(kinds) AS before
        FROM (SELECT ctid, kinds, first_at FROM log_pending_batches WHERE cluster = $1
              ORDER BY first_at, ctid LIMIT $2) b) b
    WHERE before < $2))
RETURNING kinds, uids, keys, ats, digests`

// TestOlderIntegratorLeavesPackedBatches: an older integrator (a replica
// not yet upgraded) takes no packed batch, which it could not read: it
// leaves it for the upgraded ones.
func TestOlderIntegratorLeavesPackedBatches(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 2))
	e.exec(olderDrainBatchesSQL, "default", 1000)
	if n := e.count(`SELECT count(*) FROM log_pending_batches`); n != 1 {
		t.Errorf("an older integrator's drain left %d of the packed batch, want it", n)
	}
}

// TestPackedRefsSQLAgreesOnMutations: log_pending_refs accepts exactly
// the values refpack.Decode accepts, and reads them as it does, over
// values mutated at random from a valid one (a byte changed, cut, or
// inserted): a value the SQL read and Go did not (or the other way) would
// show rows verify counts as pending that the integrator never logs.
func TestPackedRefsSQLAgreesOnMutations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var p refpack.Builder
	p.Add(refpack.KindEvent, time.UnixMicro(1_790_000_000_000_001), "", bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32))
	p.Add(refpack.KindVersion, time.UnixMicro(-5), strings.Repeat("é", 70), []byte("k"), nil)
	p.Add(refpack.KindVersion, time.UnixMicro(refpack.MinMicros+1), "u", nil, bytes.Repeat([]byte{3}, 32))
	good := p.Bytes()
	rng := rand.New(rand.NewPCG(36, 33))
	accepted := 0
	for i := range 600 {
		b := append([]byte{}, good...)
		switch at := rng.IntN(len(b)); i % 3 {
		case 0:
			b[at] = byte(rng.IntN(256))
		case 1:
			b = b[:at]
		default:
			b = slices.Insert(b, at, byte(rng.IntN(256)))
		}
		var want []refpack.Row
		n, first, err := refpack.Decode(b, func(r refpack.Row) { want = append(want, r) })
		if err != nil || n == 0 {
			want, n, first = nil, p.Len(), p.First()
		} else {
			accepted++
		}
		rows, err := e.st.Pool().Query(ctx, `SELECT kind, uid, key, at, digest FROM log_pending_refs($1, $2, $3)`, b, first, n)
		if err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		var got []refpack.Row
		var r refpack.Row
		if _, err := pgx.ForEachRow(rows, []any{&r.Kind, &r.UID, &r.Key, &r.At, &r.Digest}, func() error { got = append(got, r); return nil }); err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%x: log_pending_refs %d rows, Decode %d", b, len(got), len(want))
		}
		for j, w := range want {
			g := got[j]
			if g.Kind != w.Kind || !g.At.Equal(w.At) || g.UID != w.UID || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Digest, w.Digest) {
				t.Fatalf("%x: row %d: log_pending_refs %+v, Decode %+v", b, j, g, w)
			}
		}
	}
	t.Logf("%d of 600 mutated values read by both", accepted)
}

// TestOversizedPackedBatchNotRead: a value larger than refpack.MaxBytes
// (the ingest writes none) is taken out and counted without being sent
// to the integrator: review r8 F2 found a planted value costing a pass
// about twelve times its size in memory (up to 1 GB a value).
func TestOversizedPackedBatchNotRead(t *testing.T) {
	e := newEnv(t)
	now := time.Now().Add(-time.Minute)
	e.write(e.batch("default", now, 1))
	big := make([]byte, refpack.MaxBytes+1)
	big[0] = refpack.Version
	e.exec(`INSERT INTO log_pending_batches (cluster, refs, first_at, ref_count) VALUES ('default', $1, $2, 1)`, big, now)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := e.in.IntegrateAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > refpack.MaxBytes/4 {
		t.Errorf("the pass allocated %d bytes with a value of %d pending; want it not read", got, len(big))
	}
	if e.in.MalformedBatches() != 1 || e.count(`SELECT count(*) FROM log_pending_batches`) != 0 {
		t.Errorf("MalformedBatches %d, %d batches left; want 1, none", e.in.MalformedBatches(), e.count(`SELECT count(*) FROM log_pending_batches`))
	}
	if n := e.count(`SELECT count(*) FROM log_leaves`); n != 2 {
		t.Errorf("%d leaves; want the other batch's 2", n)
	}
}

// TestProofUnpacksOnlyItsBatch: whether a version is pending, a proof
// asks of the packed batches whose value holds its key's bytes only:
// review r8 F3 found every proof unpacking every pending batch of the
// cluster (a backlog: 285-311 ms a proof against 34-42 ms as arrays; a
// planted 11 MB value: 4.2 s).
func TestProofUnpacksOnlyItsBatch(t *testing.T) {
	e := newEnv(t)
	now := time.Now().Add(-time.Minute)
	for range 5 {
		e.write(e.batch("default", now, 3)) // other batches, pending
	}
	b := e.batch("default", now, 1)
	e.write(b)
	v := b.Versions[0]
	plan := e.explain("ANALYZE, COSTS OFF", pendingSQL, v.Cluster, v.UID, v.Key)
	unpacked := 0
	for _, l := range plan {
		if m := regexp.MustCompile(`Function Scan on log_pending_refs.*loops=(\d+)`).FindStringSubmatch(l); m != nil {
			unpacked, _ = strconv.Atoi(m[1])
		}
	}
	if unpacked != 1 {
		t.Errorf("the proof's pending lookup unpacked %d of the 6 batches; want its own only:\n%s", unpacked, strings.Join(plan, "\n"))
	}
	var pending bool
	if err := e.st.Pool().QueryRow(context.Background(), pendingSQL, v.Cluster, v.UID, v.Key).Scan(&pending); err != nil || !pending {
		t.Errorf("pending %v, %v; want the version pending", pending, err)
	}
}

// TestLargeBatchPackedInParts: a batch of more rows than a packed value
// may hold (refpack.MaxRows) writes several, each of at most that many,
// and all its rows are logged: none is taken for planted.
func TestLargeBatchPackedInParts(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 200000
	n := refpack.MaxRows/2 + 10 // events, and as many versions
	e.write(e.batch("default", time.Now().Add(-time.Minute), n))
	if got := e.count(`SELECT count(*) FROM log_pending_batches WHERE ref_count <= $1`, refpack.MaxRows); got != 2 {
		t.Fatalf("%d packed values of at most %d rows; want 2", got, refpack.MaxRows)
	}
	e.integrate()
	if got := e.count(`SELECT count(*) FROM log_leaves`); got != 2*n || e.in.MalformedBatches() != 0 {
		t.Errorf("%d leaves, %d malformed batches; want %d, none", got, e.in.MalformedBatches(), 2*n)
	}
}
