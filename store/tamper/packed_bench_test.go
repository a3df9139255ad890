package tamper

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/options-record/options-record/store/pgarray"
	"github.com/options-record/options-record/store/tamper/refpack"
)

// BenchmarkPendingBatch: the INSERT of a batch's log_pending_batches row
// (400 events and their versions: 800 references) in each form, and a
// pass's drain of it, on an idle private PostgreSQL (go test -run '^$'
// -bench PendingBatch ./store/tamper/). pg-cpu-ns/op is the CPU of the
// PostgreSQL backend serving the connection (user and system, from
// /proc; 10 ms ticks, so give it -benchtime of a few seconds), cpu-ns/op
// that of the test process (the sink). "arrays" is what a batch wrote
// before migration 00033 (an older replica's, during a rolling upgrade,
// still: the trigger fills its first_at), "packed" this release's, and
// "packed, no trigger" the same with the trigger dropped (what the
// trigger costs a packed row: its WHEN alone).
func BenchmarkPendingBatch(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	batch := e.batch("bench", time.Now(), 400)
	var p refpack.Builder
	var kinds []int16
	var uids pgarray.Array[pgarray.Text]
	var keys, digests pgarray.Array[pgarray.Bytea]
	var ats pgarray.Array[pgarray.Timestamptz]
	add := func(kind int16, at time.Time, uid string, key []byte) {
		d := make([]byte, 32)
		p.Add(kind, at, uid, key, d)
		kinds, uids, keys = append(kinds, kind), append(uids, pgarray.Text(uid)), append(keys, key)
		ats, digests = append(ats, pgarray.Timestamptz(at)), append(digests, d)
	}
	for _, ev := range batch.Events {
		add(1, ev.StageAt, "", ev.Key)
	}
	for _, v := range batch.Versions {
		add(2, v.ChangedAt, v.UID, v.Key)
	}
	insertArrays := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO log_pending_batches (cluster, kinds, uids, keys, ats, digests) VALUES ($1, $2, $3, $4, $5, $6)`,
			"bench", kinds, uids, keys, ats, digests)
		return err
	}
	insertPacked := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO log_pending_batches (cluster, refs, first_at, ref_count) VALUES ($1, $2, $3, $4)`,
			"bench", p.Bytes(), p.First(), p.Len())
		return err
	}
	conn, err := e.st.Pool().Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, op func(tx pgx.Tx) error, setup func(tx pgx.Tx) error) {
		e.exec("VACUUM log_pending_batches") // the rows rolled back before
		rolledBack(b, conn, pid, setup, op)
	}
	drainOne := func(tx pgx.Tx) error {
		rows, _, err := drain(ctx, tx, "bench", 10000, time.Now(), nil)
		if err == nil && len(rows) != 800 {
			err = fmt.Errorf("drained %d rows", len(rows))
		}
		return err
	}
	b.Run("insert arrays", func(b *testing.B) { run(b, insertArrays, nil) })
	b.Run("insert packed", func(b *testing.B) { run(b, insertPacked, nil) })
	b.Run("drain arrays", func(b *testing.B) { run(b, drainOne, insertArrays) })
	b.Run("drain packed", func(b *testing.B) { run(b, drainOne, insertPacked) })
	e.exec(`DROP TRIGGER log_pending_batches_arrays ON log_pending_batches`)
	b.Run("insert packed, no trigger", func(b *testing.B) { run(b, insertPacked, nil) })
}

// backendCPU is the user and system CPU time of process pid so far.
func backendCPU(b *testing.B, pid int) time.Duration {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(s[strings.LastIndexByte(string(s), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ 100
}

func selfCPU(b *testing.B) time.Duration {
	u, s := processCPU(b)
	return u + s
}

// rolledBack runs op at each iteration of b in a transaction of conn,
// after setup (untimed, if not nil), rolled back after, and reports the
// CPU per op of the PostgreSQL backend serving conn (pid; from /proc) and
// of this process.
func rolledBack(b *testing.B, conn interface {
	Begin(context.Context) (pgx.Tx, error)
}, pid int, setup, op func(pgx.Tx) error) {
	ctx := context.Background()
	var pg, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		tx, err := conn.Begin(ctx)
		if err == nil && setup != nil {
			err = setup(tx)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		p0, u0 := backendCPU(b, pid), selfCPU(b)
		if err := op(tx); err != nil {
			b.Fatal(err)
		}
		pg, cpu = pg+backendCPU(b, pid)-p0, cpu+selfCPU(b)-u0
		b.StopTimer()
		if err := tx.Rollback(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(pg.Nanoseconds())/float64(b.N), "pg-cpu-ns/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
