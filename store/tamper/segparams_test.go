package tamper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgarray"
	"github.com/options-record/options-record/store/pgtest"
)

// execSegment is the segment's INSERT as it was before insertSegment: one
// tx.Exec, planned for its parameters, its arrays encoded by pgx's own
// array codec (plain slices, which pgarray's codec does not encode).
func execSegment(ctx context.Context, tx pgx.Tx, args ...any) error {
	a := slices.Clone(args)
	kinds, uids, keys, ats := a[4].(pgarray.Array[pgarray.Int2]), a[5].(pgarray.Array[pgarray.Text]), a[6].(pgarray.Array[pgarray.Bytea]), a[7].(pgarray.Array[pgarray.Timestamptz])
	k, u, ky, at := make([]int16, len(kinds)), make([]string, len(uids)), make([][]byte, len(keys)), make([]time.Time, len(ats))
	for i := range kinds {
		k[i], u[i], ky[i], at[i] = int16(kinds[i]), string(uids[i]), keys[i], time.Time(ats[i])
	}
	a[4], a[5], a[6], a[7] = k, u, ky, at
	_, err := tx.Exec(ctx, insertSegmentSQL, a...)
	return err
}

// TestSegmentBytes, in each of pgx's query exec modes: the segments of a log of hostile rows (the corpus's
// uids, cutoffs' empty uids and keys, times below the microsecond, two
// clusters, passes of 7 leaves and of 10,000) are, byte for byte as
// PostgreSQL sends them (binary), what the INSERT of before (execSegment)
// writes in another database from each pass's same parameters; and the
// log verifies.
func TestSegmentBytes(t *testing.T) {
	for _, mode := range []string{"cache_statement", "simple_protocol", "exec"} {
		t.Run(mode, func(t *testing.T) { testSegmentBytes(t, mode) })
	}
}

// testSegmentBytes is TestSegmentBytes on connections of a query exec
// mode (pgx's default_query_exec_mode; cache_statement is its default).
func testSegmentBytes(t *testing.T, mode string) {
	ctx := context.Background()
	now := time.Now()
	url := pgtest.NewDatabase(t)
	e, old := newEnvAt(t, url+" default_query_exec_mode="+mode), newEnv(t)
	defer func(f func(context.Context, pgx.Tx, ...any) error) { insertSegment = f }(insertSegment)
	insert := insertSegment
	insertSegment = func(ctx context.Context, tx pgx.Tx, args ...any) error {
		err := insert(ctx, tx, args...)
		if err == nil {
			err = pgx.BeginFunc(ctx, old.st.Pool(), func(tx pgx.Tx) error { return execSegment(ctx, tx, args...) })
		}
		return err
	}
	e.write(e.batch("default", now.Add(-time.Hour), 5))
	e.write(e.batch("b", now.Add(-time.Hour), 2))
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)`, now.Add(-2*time.Hour))
	e.integrate()
	e.in.o.MaxLeaves = 10000
	e.write(e.batch("default", now.Add(-time.Minute), 300))
	e.write(e.batch("b", now.Truncate(time.Second).Add(-time.Nanosecond), 3))
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('b', 3, $1)`, now.Add(-2*time.Hour).Truncate(time.Second).Add(-time.Nanosecond))
	e.integrate()
	if rep := e.verify(true); !rep.OK() {
		t.Fatalf("verify:\n%s", problems(rep))
	}
	if n := e.count(`SELECT count(*) FROM log_leaves WHERE row_table = 'retention_cutoff' AND uid = '' AND key = ''`); n != 2 {
		t.Fatalf("%d cutoffs logged; want 2", n)
	}
	segments := func(url string) [][][]byte { // read in binary, whatever the mode
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `
SELECT cluster, first_index, tree_size, stored_from, kinds, uids, keys, ats, digests, hashes, checkpoint, events_from, events_to
FROM log_segments ORDER BY cluster, first_index`, pgx.QueryResultFormats{pgx.BinaryFormatCode})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out [][][]byte
		for rows.Next() {
			var row [][]byte
			for _, v := range rows.RawValues() {
				row = append(row, bytes.Clone(v))
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := segments(url), segments(old.url)
	if len(got) < 4 || len(got) != len(want) {
		t.Fatalf("%d segments; %d before", len(got), len(want))
	}
	for i := range got {
		for j := range got[i] {
			if !bytes.Equal(got[i][j], want[i][j]) {
				t.Errorf("segment %d, column %d: %s; before %s", i, j+1, short(got[i][j]), short(want[i][j]))
			}
		}
	}
}

func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%x... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%x", b)
}

// TestSegmentPlanIsGeneric: a connection's passes run the segment's
// INSERT on its generic plan, planned once, not planned for each pass's
// arrays (PostgreSQL's count of the prepared statement's plans, on a pool
// of one connection); and the INSERT leaves the transaction's
// plan_cache_mode as it was (the store's, force_custom_plan).
func TestSegmentPlanIsGeneric(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	st, err := store.Open(ctx, store.Options{URL: e.url, MaxConns: 1, TamperLog: true, VersionDigest: VersionDigest, EventDigest: EventDigest})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in, err := NewIntegrator(IntegratorOptions{Pool: st.Pool(), Signer: e.signer, Checkpoints: e.bucket, MaxLeaves: 7})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 3 {
		e.write(e.batch("default", now.Add(time.Duration(i)*time.Second), 3))
		if err := in.IntegrateAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int
	if err := st.Pool().QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, insertSegmentSQL).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if segments := e.count(`SELECT count(*) FROM log_segments`); generic != segments || custom != 0 {
		t.Errorf("the INSERT of %d segments ran %d times on its generic plan, %d on a custom plan; want every time on its generic plan", segments, generic, custom)
	}
	var mode string
	err = pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
		err := insertSegment(ctx, tx, "x", int64(0), int64(1), int64(0), pgarray.Array[pgarray.Int2]{1}, pgarray.Array[pgarray.Text]{""},
			pgarray.Array[pgarray.Bytea]{[]byte("k")}, pgarray.Array[pgarray.Timestamptz]{pgarray.Timestamptz(now)}, make([]byte, 32), make([]byte, 32), "c",
			eventsRange(&now, true), eventsRange(&now, false))
		if err == nil {
			err = tx.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&mode)
		}
		if err == nil {
			err = errors.New("rolled back")
		}
		return err
	})
	if err.Error() != "rolled back" || mode != "force_custom_plan" {
		t.Errorf("after the INSERT, in its transaction: plan_cache_mode %q (%v); want force_custom_plan", mode, err)
	}
}
