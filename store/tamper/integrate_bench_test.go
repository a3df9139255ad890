package tamper

import (
	"context"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/pgarray"
)

// BenchmarkIntegrate: passes over batches of 500 events and their
// versions, the sink's share of the log's cost per pass (go test -run '^$'
// -bench Integrate -benchmem -cpuprofile cpu.out ./store/tamper/).
// cpu-ns/op is the CPU the test process (the sink) spent in the passes,
// user and system (sys-ns/op: the system's share, mostly the checkpoint
// files' writes and fsyncs, once a pass whatever its size): ns/op is wall
// time, PostgreSQL's share included, and moves with whatever else the
// machine runs. The garbage of each batch written is collected before
// its pass.
func BenchmarkIntegrate(b *testing.B) {
	e := newEnv(b)
	e.in.o.MaxLeaves = 10000
	now := time.Now()
	var user, sys time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e.write(e.batch("default", now, 500))
		runtime.GC() // the batch's garbage is not the pass's
		b.StartTimer()
		u0, s0 := processCPU(b)
		e.integrate()
		u1, s1 := processCPU(b)
		user, sys = user+u1-u0, sys+s1-s0
	}
	b.ReportMetric(float64((user+sys).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N), "sys-ns/op")
}

// processCPU is the user and system CPU time of the process so far.
func processCPU(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkAppendSegment: the INSERT of a pass's segment of 10,000
// leaves (5,000 events and their versions, hostile strings), as a pass
// sends it, on an idle private PostgreSQL (go test -run '^$' -bench
// AppendSegment -benchtime 5s ./store/tamper/). "before" is the INSERT of
// before insertSegment (tx.Exec, its arrays encoded by pgx's own array
// codec, planned for them: the store's force_custom_plan), "encoding" the
// same with pgarray's encoding (pgarray.Register), "now" what a pass runs
// (insertSegment: that encoding and the generic plan). cpu-ns/op is the
// CPU of the test process (the sink), pg-cpu-ns/op that of the PostgreSQL
// backend serving the connection (from /proc; 10 ms ticks, so give it a
// -benchtime of seconds); allocations are the sink's.
func BenchmarkAppendSegment(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	e.in.o.MaxLeaves = 10000
	e.write(e.batch("default", time.Now(), 5000))
	var args []any
	errCaptured := errors.New("captured")
	now := insertSegment
	defer func() { insertSegment = now }()
	insertSegment = func(_ context.Context, _ pgx.Tx, a ...any) error {
		args = a
		return errCaptured
	}
	if _, err := e.in.Integrate(ctx, "default"); !errors.Is(err, errCaptured) || len(args[5].(pgarray.Array[pgarray.Text])) != 10000 {
		b.Fatalf("a pass of 10,000 leaves: %v", err)
	}
	insertSegment = now
	conn := func(register bool) (*pgx.Conn, int) {
		cfg, err := pgx.ParseConfig(e.url)
		if err != nil {
			b.Fatal(err)
		}
		cfg.RuntimeParams["plan_cache_mode"] = "force_custom_plan" // the store's (store.Open)
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close(ctx) })
		if register {
			pgarray.Register(c.TypeMap())
		}
		var pid int
		if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			b.Fatal(err)
		}
		return c, pid
	}
	exec := func(ctx context.Context, tx pgx.Tx, args ...any) error {
		_, err := tx.Exec(ctx, insertSegmentSQL, args...)
		return err
	}
	for _, c := range []struct {
		name     string
		register bool
		insert   func(context.Context, pgx.Tx, ...any) error
	}{{"before", false, exec}, {"encoding", true, exec}, {"now", true, now}} {
		b.Run(c.name, func(b *testing.B) {
			conn, pid := conn(c.register)
			b.ReportAllocs()
			rolledBack(b, conn, pid, nil, func(tx pgx.Tx) error { return c.insert(ctx, tx, args...) })
		})
	}
}
