package journal

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// switchable is a store that can be taken down.
type switchable struct {
	model.Writer
	down atomic.Bool
}

func (s *switchable) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	if s.down.Load() {
		return model.WriteResult{}, fmt.Errorf("connect: connection refused")
	}
	return s.Writer.WriteBatch(ctx, b)
}

// capture is a Writer that keeps the batches the pipeline produces.
type capture struct {
	mu      sync.Mutex
	batches []*model.Batch
}

func (c *capture) WriteBatch(_ context.Context, b *model.Batch) (model.WriteResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, b)
	return model.WriteResult{}, nil
}

const keepAll = `
apiVersion: optionsrecord.io/v1alpha1
kind: OptionsRecordController
metadata: {name: all, namespace: options-record}
spec: {}
`

// realBatches turns n batches of size ConfigMap creates and updates, built
// with test/gen, into store batches with the sink's own pipeline.
func realBatches(tb testing.TB, n, size int) []*model.Batch {
	tb.Helper()
	objs, err := filter.Parse([]byte(keepAll))
	if err != nil {
		tb.Fatal(err)
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	c := &capture{}
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, c, nil, nil)
	now := time.Now().UTC()
	for b := range n {
		evs := make([]auditv1.Event, 0, size)
		for i := range size {
			name := fmt.Sprintf("cm-%d-%d", b, i)
			uid := fmt.Sprintf("uid-%d-%d", b, i)
			data := map[string]string{"key": fmt.Sprintf("value %d %d", b, i), "config.yaml": "a: 1\nb: [x, y, z]\n"}
			evs = append(evs, *gen.Event(gen.Namespace("default"), gen.Name(name), gen.At(now),
				gen.Response(gen.ConfigMap("default", name, uid, int64(100+i), data, gen.Labels("app", "web")))))
		}
		if _, err := pipe.Process(context.Background(), "default", evs, nil); err != nil {
			tb.Fatal(err)
		}
	}
	return c.batches
}

func count(t *testing.T, st *store.Store, sql string) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDrainIntoPostgreSQL journals real batches while the database is
// "down", drains them into a real PostgreSQL, then journals and drains the
// same batches again: the store is idempotent, so nothing changes.
func TestDrainIntoPostgreSQL(t *testing.T) {
	const batches, size = 20, 400
	st, err := store.Open(context.Background(), store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	bs := realBatches(t, batches, size)
	sw := &switchable{Writer: st}
	sw.down.Store(true)
	o := Options{RetryMin: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond}
	j := open(t, t.TempDir(), sw, o)
	stop := run(t, j)
	start := time.Now()
	for _, b := range bs {
		if _, err := j.WriteBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	appendTime := time.Since(start)
	stats := j.Stats()
	sw.down.Store(false)
	start = time.Now()
	waitDrained(t, j)
	drainTime := time.Since(start)
	// Logged only: the rates are measured by BenchmarkAppend and
	// BenchmarkDrainIntoPostgreSQL.
	t.Logf("journaled %d batches of %d events (%d MB) in %s (%s per batch, fsync included); drained in %s: %.0f events/s",
		batches, size, stats.Bytes>>20, appendTime, appendTime/batches, drainTime, float64(batches*size)/drainTime.Seconds())
	if n := count(t, st, `SELECT count(*) FROM events`); n != batches*size {
		t.Fatalf("events = %d, want %d", n, batches*size)
	}
	versions := count(t, st, `SELECT count(*) FROM object_versions`)

	// Again: a re-stored batch (lost cursor, abandoned write that
	// committed) changes nothing.
	stop()
	sw.down.Store(true)
	for _, b := range bs[:5] {
		if _, err := j.WriteBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	sw.down.Store(false)
	run(t, j)
	waitDrained(t, j)
	if n := count(t, st, `SELECT count(*) FROM events`); n != batches*size {
		t.Errorf("events after re-storing = %d, want %d", n, batches*size)
	}
	if n := count(t, st, `SELECT count(*) FROM object_versions`); n != versions {
		t.Errorf("versions after re-storing = %d, want %d", n, versions)
	}
}

// TestLockedTableIsJournaledNotWaitedFor holds an exclusive lock on the
// events table: the write misses its deadline, the batch is journaled and
// acknowledged, and stored exactly once after the lock goes.
func TestLockedTableIsJournaledNotWaitedFor(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	bs := realBatches(t, 3, 50)
	o := Options{WriteDeadline: 300 * time.Millisecond, RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, DrainTimeout: time.Second}
	j := open(t, t.TempDir(), st, o)
	run(t, j)

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	// No write can reach the table before the rollback below: each that
	// returns was abandoned at the deadline and journaled.
	for _, b := range bs {
		if _, err := j.WriteBatch(ctx, b); err != nil {
			t.Fatalf("write with the table locked: %v", err)
		}
	}
	if j.Backlog() == 0 {
		t.Fatal("nothing journaled while the table was locked")
	}
	time.Sleep(500 * time.Millisecond) // let the drainer fail against the lock a few times
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitDrained(t, j)
	if n := count(t, st, `SELECT count(*) FROM events`); n != 150 {
		t.Errorf("events = %d, want 150", n)
	}
}

func BenchmarkAppend(b *testing.B) {
	bs := realBatches(b, 1, 400)
	rec, _ := encodeRecord(bs[0], time.Now())
	sw := &switchable{Writer: &capture{}}
	sw.down.Store(true)
	j, err := Open(b.TempDir(), sw, Options{MaxBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.SetBytes(int64(len(rec)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := j.WriteBatch(context.Background(), bs[0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendParallel(b *testing.B) {
	bs := realBatches(b, 1, 400)
	sw := &switchable{Writer: &capture{}}
	sw.down.Store(true)
	j, err := Open(b.TempDir(), sw, Options{MaxBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := j.WriteBatch(context.Background(), bs[0]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	bs := realBatches(b, 1, 400)
	rec, _ := encodeRecord(bs[0], time.Now())
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if _, err := encodeRecord(bs[0], time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDrainIntoPostgreSQL: the rate at which a journal written while
// the database was down is stored once it is back (events/s), on a real
// PostgreSQL: how long a backlog takes to drain after an outage.
func BenchmarkDrainIntoPostgreSQL(b *testing.B) {
	const batches, size = 20, 400
	st, err := store.Open(context.Background(), store.Options{URL: pgtest.NewDatabase(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	bs := realBatches(b, batches, size)
	sw := &switchable{Writer: st}
	j, err := Open(b.TempDir(), sw, Options{RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var drained time.Duration
	for b.Loop() {
		b.StopTimer()
		sw.down.Store(true)
		for _, bt := range bs {
			if _, err := j.WriteBatch(context.Background(), bt); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		sw.down.Store(false)
		for j.Backlog() > 0 {
			time.Sleep(time.Millisecond)
		}
		drained += time.Since(start)
	}
	b.ReportMetric(float64(b.N*batches*size)/drained.Seconds(), "events/s")
}
