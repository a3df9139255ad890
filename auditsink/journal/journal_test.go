package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// fakeStore records the batches it stores (by the audit IDs of their
// events) and fails or blocks on demand.
type fakeStore struct {
	mu     sync.Mutex
	down   bool            // fail with a connection error
	block  bool            // wait until the context ends
	hold   chan struct{}   // if set, wait until it is closed, whatever the context
	poison map[string]bool // audit IDs whose batch is rejected as invalid data
	stored []string        // audit IDs in the order stored
	writes int
}

func (f *fakeStore) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	f.mu.Lock()
	down, block, hold := f.down, f.block, f.hold
	f.writes++
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if block {
		<-ctx.Done()
		return model.WriteResult{}, ctx.Err()
	}
	if down {
		return model.WriteResult{}, errors.New("dial unix /run/pg/.s.PGSQL.5432: connect: no such file or directory")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range b.Events {
		if f.poison[e.AuditID] {
			return model.WriteResult{}, &pgconn.PgError{Code: "22021", Message: "invalid byte sequence for encoding \"UTF8\": 0x00"}
		}
	}
	for _, e := range b.Events {
		f.stored = append(f.stored, e.AuditID)
	}
	return model.WriteResult{Events: len(b.Events)}, nil
}

func (f *fakeStore) set(fn func(*fakeStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeStore) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stored)
}

// batch is a batch of one event with the given audit ID and some bulk.
func batch(id string) *model.Batch {
	return &model.Batch{
		Events: []model.Event{{
			Cluster: "default", Key: []byte("key-" + id), AuditID: id, Verb: "create",
			StageAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), RequestObject: []byte(`{"data":"` + id + `"}`),
			ImpersonatedGroups: []string{}, // empty, not nil: must survive the journal
		}},
		Versions: []model.Version{{Cluster: "default", UID: "uid-" + id, Object: []byte(`{"kind":"ConfigMap"}`)}},
	}
}

func open(t *testing.T, dir string, w model.Writer, o Options) *Journal {
	t.Helper()
	j, err := Open(dir, w, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// run starts the drainer and returns a function that stops it.
func run(t *testing.T, j *Journal) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func write(t *testing.T, j *Journal, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := j.WriteBatch(context.Background(), batch(id)); err != nil {
			t.Fatalf("write %s: %v", id, err)
		}
	}
}

// waitDrained waits until the journal holds nothing; the minute only ends
// a test whose journal never drains (the rate is BenchmarkDrainIntoPostgreSQL's).
func waitDrained(t *testing.T, j *Journal) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for j.Backlog() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("journal not drained within a minute: %+v", j.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitNoSegments waits for the drained segments to be deleted (just after
// the backlog reaches zero).
func waitNoSegments(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(segments(t, dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if segs := segments(t, dir); len(segs) != 0 {
		t.Errorf("segments left after draining: %v", segs)
	}
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var fast = Options{WriteDeadline: 200 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond}

func TestStoresDirectlyWhenTheStoreAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{}
	j := open(t, dir, fs, fast)
	b := batch("direct")
	if _, err := j.WriteBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if b.Retained {
		t.Error("a batch the store took is marked Retained: its memory would never be reused")
	}
	write(t, j, "a", "b")
	if got := fs.ids(); !slices.Equal(got, []string{"direct", "a", "b"}) {
		t.Errorf("stored %v", got)
	}
	if s := j.Stats(); s.Batches != 0 || s.DiskBytes != 0 {
		t.Errorf("stats %+v, want nothing journaled", s)
	}
	if segs := segments(t, dir); len(segs) != 0 {
		t.Errorf("segments %v, want none", segs)
	}
}

func TestJournalsWhileTheStoreIsDownAndDrainsInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{down: true}
	reg := prometheus.NewPedanticRegistry()
	o := fast
	o.Registerer = reg
	j := open(t, dir, fs, o)
	run(t, j)
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("e%02d", i))
	}
	write(t, j, want...)
	s := j.Stats()
	if s.Batches != 20 || s.Bytes <= 0 || s.Oldest.IsZero() {
		t.Fatalf("stats %+v, want 20 journaled", s)
	}
	if v := value(t, j.m.appended); v != 20 {
		t.Errorf("appended = %v", v)
	}
	if mfs, err := reg.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	} else {
		got := map[string]float64{}
		for _, mf := range mfs {
			if m := mf.GetMetric(); len(m) == 1 && m[0].GetGauge() != nil {
				got[mf.GetName()] = m[0].GetGauge().GetValue()
			}
		}
		if got["options_record_journal_batches"] != 20 || got["options_record_journal_bytes"] <= 0 ||
			got["options_record_journal_oldest_age_seconds"] <= 0 {
			t.Errorf("journal gauges %v", got)
		}
	}
	if !j.storeDown.Load() {
		t.Error("store not marked down after failures")
	}
	fs.set(func(f *fakeStore) { f.down = false })
	waitDrained(t, j)
	if got := fs.ids(); !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v in order", got, want)
	}
	// The store answers again: batches go to it directly.
	write(t, j, "after")
	if n := j.Backlog(); n != 0 || j.storeDown.Load() {
		t.Errorf("backlog %d, store down %v after the drain", n, j.storeDown.Load())
	}
	// The drained segment is deleted once the appender retires it.
	waitNoSegments(t, dir)
	if s := j.Stats(); s.DiskBytes != 0 || s.Bytes != 0 {
		t.Errorf("stats after drain %+v", s)
	}
}

func TestSlowStoreIsAbandonedAtTheDeadline(t *testing.T) {
	t.Parallel()
	fs := &fakeStore{block: true}
	o := fast
	o.WriteDeadline = 100 * time.Millisecond
	j := open(t, t.TempDir(), fs, o)
	// The store never answers while blocked: that write returns at all is
	// the deadline at work.
	write(t, j, "slow")
	if j.Backlog() != 1 {
		t.Errorf("backlog %d, want the batch journaled", j.Backlog())
	}
}

// TestWriteGoingOnPastTheDeadlineRetainsTheBatch: a store write that does
// not end when its context does (stuck in the kernel) may read the batch
// after WriteBatch returned: the batch is marked Retained, so its caller
// does not reuse the memory it points into.
func TestWriteGoingOnPastTheDeadlineRetainsTheBatch(t *testing.T) {
	t.Parallel()
	fs := &fakeStore{hold: make(chan struct{})}
	defer close(fs.hold)
	o := fast
	o.WriteDeadline = 100 * time.Millisecond
	j := open(t, t.TempDir(), fs, o)
	b := batch("stuck")
	if _, err := j.WriteBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if j.Backlog() != 1 {
		t.Errorf("backlog %d, want the batch journaled", j.Backlog())
	}
	if !b.Retained {
		t.Error("the batch of a write still under way is not marked Retained")
	}
}

func TestInvalidDataIsNotJournaled(t *testing.T) {
	t.Parallel()
	fs := &fakeStore{poison: map[string]bool{"bad": true}}
	j := open(t, t.TempDir(), fs, fast)
	_, err := j.WriteBatch(context.Background(), batch("bad"))
	if !store.IsPermanent(err) {
		t.Fatalf("err = %v, want the store's data error", err)
	}
	if j.Backlog() != 0 {
		t.Errorf("backlog %d: a batch the store rejects must not be acknowledged from the journal", j.Backlog())
	}
}

func TestReopenDrainsWhatAPreviousProcessJournaled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	down := &fakeStore{down: true}
	j := open(t, dir, down, fast)
	write(t, j, "a", "b", "c")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := j.WriteBatch(context.Background(), batch("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v, want ErrClosed", err)
	}

	up := &fakeStore{}
	j2 := open(t, dir, up, fast)
	if s := j2.Stats(); s.Batches != 3 {
		t.Fatalf("reopened with %+v, want 3 batches", s)
	}
	run(t, j2)
	waitDrained(t, j2)
	got := up.ids()
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("stored %v", got)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	want := batch("x")
	at := time.Unix(1700000000, 123456789)
	rec, err := encodeRecord(want, at)
	if err != nil {
		t.Fatal(err)
	}
	size, gotAt, err := parseRecord(rec)
	if err != nil || size != len(rec) || !gotAt.Equal(at) {
		t.Fatalf("parse: %d %v %v", size, gotAt, err)
	}
	b, err := decodePayload(rec)
	if err != nil {
		t.Fatal(err)
	}
	e, w := b.Events[0], want.Events[0]
	if e.ImpersonatedGroups == nil || string(e.Key) != string(w.Key) || !e.StageAt.Equal(w.StageAt) ||
		string(e.RequestObject) != string(w.RequestObject) || e.UserGroups != nil ||
		string(b.Versions[0].Object) != string(want.Versions[0].Object) || b.Versions[0].ResourceVersion != nil {
		t.Errorf("round trip changed the batch: %+v", b)
	}
}

func TestCursorKeepsStoredBatchesFromBeingStoredAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{down: true}
	j := open(t, dir, fs, fast)
	write(t, j, "a", "b", "c")
	fs.set(func(f *fakeStore) { f.down = false })
	stop := run(t, j)
	waitDrained(t, j)
	stop()
	fs.set(func(f *fakeStore) { f.down = true })
	write(t, j, "d")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2 := open(t, dir, &fakeStore{}, fast)
	if s := j2.Stats(); s.Batches != 1 {
		t.Errorf("reopened with %d batches, want only the undrained one", s.Batches)
	}
}

func TestTornTailIsCutOffAndIntactRecordsKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := open(t, dir, &fakeStore{down: true}, fast)
	write(t, j, "a", "b", "c", "d", "e")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segments(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	fi, _ := os.Stat(segs[0])
	// Cut the last record in the middle of its payload, as a crash during
	// the write would.
	last := j.queue[len(j.queue)-1]
	cut := last.off + last.size/2
	if err := os.Truncate(segs[0], cut); err != nil {
		t.Fatal(err)
	}

	fs := &fakeStore{}
	reg := prometheus.NewRegistry()
	o := fast
	o.Registerer = reg
	j2 := open(t, dir, fs, o)
	if s := j2.Stats(); s.Batches != 4 {
		t.Fatalf("reopened with %d batches, want the 4 intact ones", s.Batches)
	}
	if fi2, _ := os.Stat(segs[0]); fi2.Size() != last.off {
		t.Errorf("segment is %d bytes (was %d), want the torn tail cut at %d", fi2.Size(), fi.Size(), last.off)
	}
	if v := value(t, j2.m.corrupt); v != 0 {
		t.Errorf("corrupt = %v: a torn tail is an unacknowledged append, not damage", v)
	}
	run(t, j2)
	waitDrained(t, j2)
	if got := fs.ids(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("stored %v", got)
	}
	// Appending after the cut works and survives another reopen.
	fs.set(func(f *fakeStore) { f.down = true })
	write(t, j2, "f")
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	j3 := open(t, dir, &fakeStore{}, fast)
	if n := j3.Backlog(); n != 1 {
		t.Errorf("backlog %d, want 1", n)
	}
}

func TestDamagedRecordInTheMiddleIsSkippedAndCounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   func(e entry) int64 // offset of the byte to damage in record 2
	}{
		{"payload", func(e entry) int64 { return e.off + headerSize + 5 }},
		{"length", func(e entry) int64 { return e.off + 6 }},
		{"magic", func(e entry) int64 { return e.off }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			j := open(t, dir, &fakeStore{down: true}, fast)
			write(t, j, "a", "b", "c", "d")
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			path := j.queue[1].seg.path
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[tc.at(j.queue[1])] ^= 0xff
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			fs := &fakeStore{}
			j2 := open(t, dir, fs, fast)
			if v := value(t, j2.m.corrupt); v != 1 {
				t.Errorf("corrupt = %v, want 1", v)
			}
			run(t, j2)
			waitDrained(t, j2)
			if got := fs.ids(); !slices.Equal(got, []string{"a", "c", "d"}) {
				t.Errorf("stored %v, want the intact records", got)
			}
		})
	}
}

func TestSizeLimitActsAsAFullDisk(t *testing.T) {
	t.Parallel()
	rec, err := encodeRecord(batch("a0"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeStore{down: true}
	o := fast
	o.MaxBytes = int64(3*len(rec) + len(rec)/2) // room for three
	j := open(t, t.TempDir(), fs, o)
	write(t, j, "a0", "a1", "a2")
	_, err = j.WriteBatch(context.Background(), batch("a3"))
	if !errors.Is(err, ErrFull) {
		t.Fatalf("fourth write: %v, want ErrFull", err)
	}
	if v := value(t, j.m.errors.WithLabelValues("full")); v != 1 {
		t.Errorf("full errors = %v", v)
	}
	if err := j.Ready(); err == nil {
		t.Error("ready while full")
	}
	// Once the store answers, the backlog drains and there is room again;
	// while full, a write goes to the store directly if it can.
	fs.set(func(f *fakeStore) { f.down = false })
	write(t, j, "a3")
	run(t, j)
	waitDrained(t, j)
	if err := j.Ready(); err != nil {
		t.Errorf("not ready after draining: %v", err)
	}
	write(t, j, "a4")
	if got := fs.ids(); len(got) != 5 {
		t.Errorf("stored %v", got)
	}
}

func TestSegmentsRotateAndAreDeletedWhenDrained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{down: true}
	o := fast
	o.SegmentBytes = 1 // one record per segment
	j := open(t, dir, fs, o)
	write(t, j, "a", "b", "c", "d")
	if n := len(segments(t, dir)); n != 4 {
		t.Fatalf("%d segments, want 4", n)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	up := &fakeStore{}
	j2 := open(t, dir, up, o)
	run(t, j2)
	waitDrained(t, j2)
	waitNoSegments(t, dir)
	if got := up.ids(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("stored %v", got)
	}
}

func TestRejectedBatchIsQuarantinedAndTheRestDrains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{down: true, poison: map[string]bool{"bad": true}}
	j := open(t, dir, fs, fast)
	write(t, j, "a", "bad", "c")
	fs.set(func(f *fakeStore) { f.down = false })
	run(t, j)
	waitDrained(t, j)
	if got := fs.ids(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("stored %v", got)
	}
	q, _ := filepath.Glob(filepath.Join(dir, quarantineDir, "*.rec"))
	if len(q) != 1 || value(t, j.m.quarantined) != 1 {
		t.Fatalf("quarantined %v (metric %v), want one file", q, value(t, j.m.quarantined))
	}
	data, err := os.ReadFile(q[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseRecord(data); err != nil {
		t.Fatalf("quarantined record: %v", err)
	}
	if b, err := decodePayload(data); err != nil || b.Events[0].AuditID != "bad" {
		t.Errorf("quarantined %v, %v", b, err)
	}
}

func TestConcurrentBatchesShareFsyncs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{down: true}
	j := open(t, dir, fs, fast)
	write(t, j, "first") // now there is a backlog: the rest go straight to the journal
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if _, err := j.WriteBatch(context.Background(), batch(fmt.Sprint("c", i))); err != nil {
				t.Errorf("write: %v", err)
			}
		})
	}
	wg.Wait()
	if n := j.Backlog(); n != 101 {
		t.Fatalf("backlog %d", n)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2 := open(t, dir, &fakeStore{}, fast)
	if n := j2.Backlog(); n != 101 {
		t.Errorf("reopened with %d, want 101", n)
	}
}

func TestSecondProcessIsKeptOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open(t, dir, &fakeStore{}, fast)
	if _, err := Open(dir, &fakeStore{}, fast); err == nil {
		t.Fatal("a second Open of the same directory succeeded")
	}
}

func TestReadyFailsOverTheHighWaterMark(t *testing.T) {
	t.Parallel()
	rec, _ := encodeRecord(batch("h0"), time.Now())
	o := fast
	o.HighWater = int64(len(rec)) + 1 // one record is fine, two are not
	j := open(t, t.TempDir(), &fakeStore{down: true}, o)
	if err := j.Ready(); err != nil {
		t.Fatalf("empty journal not ready: %v", err)
	}
	write(t, j, "h0")
	if err := j.Ready(); err != nil {
		t.Errorf("under the mark: %v", err)
	}
	write(t, j, "h1")
	if err := j.Ready(); err == nil {
		t.Error("ready over the high-water mark")
	}
}

func TestCloseWaitsForBatchesUnderWay(t *testing.T) {
	t.Parallel()
	fs := &fakeStore{block: true}
	o := fast
	o.WriteDeadline = 300 * time.Millisecond
	dir := t.TempDir()
	j := open(t, dir, fs, o)
	errc := make(chan error, 1)
	go func() { _, err := j.WriteBatch(context.Background(), batch("inflight")); errc <- err }()
	time.Sleep(50 * time.Millisecond) // let it reach the store
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("batch under way at Close: %v, want it journaled", err)
	}
	j2 := open(t, dir, &fakeStore{}, fast)
	if n := j2.Backlog(); n != 1 {
		t.Errorf("backlog after reopen %d, want the batch that was under way", n)
	}
}

// value reads a counter or gauge.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("not a counter or gauge: %v", &m)
	return 0
}

// TestQuarantineNeverOverwrites: the drain cursor is only a hint; lost, the
// next journal numbers its segments from 1 again, and the next batch set
// aside at the same place must not replace the one set aside before.
func TestQuarantineNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, id := range []string{"bad1", "bad2"} {
		fs := &fakeStore{down: true, poison: map[string]bool{id: true}}
		j := open(t, dir, fs, fast)
		write(t, j, id)
		fs.set(func(f *fakeStore) { f.down = false })
		stop := run(t, j)
		waitDrained(t, j)
		stop()
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, cursorFile)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	q, _ := filepath.Glob(filepath.Join(dir, quarantineDir, "*.rec"))
	var ids []string
	for _, p := range q {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := decodePayload(data)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.Events[0].AuditID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"bad1", "bad2"}) {
		t.Errorf("quarantined %v (files %v), want both batches", ids, q)
	}
}

// TestAnUnreadableSegmentDoesNotStopTheJournal: a segment the disk does not
// give back keeps neither the journal from opening (and ingest from
// starting) nor the store from taking new batches: it is set aside and
// counted, and a record that cannot be read while draining is skipped
// after a few tries without the store being taken for down.
func TestAnUnreadableSegmentDoesNotStopTheJournal(t *testing.T) {
	t.Parallel()
	t.Run("at open", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, segmentName(99)), 0o700); err != nil { // read fails: a directory
			t.Fatal(err)
		}
		j := open(t, dir, &fakeStore{}, fast)
		if value(t, j.m.corrupt) != 1 {
			t.Errorf("corrupt %v, want 1", value(t, j.m.corrupt))
		}
		if _, err := os.Stat(filepath.Join(dir, quarantineDir, segmentName(99)+".unreadable")); err != nil {
			t.Errorf("not set aside: %v", err)
		}
	})
	t.Run("while draining", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fs := &fakeStore{down: true}
		j := open(t, dir, fs, fast)
		write(t, j, "a")
		segs, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
		for _, s := range segs {
			if err := os.Remove(s); err != nil {
				t.Fatal(err)
			}
		}
		fs.set(func(f *fakeStore) { f.down = false })
		run(t, j)
		waitDrained(t, j)
		if j.storeDown.Load() {
			t.Error("the store is taken for down for a record the disk lost")
		}
		write(t, j, "b")
		if got := fs.ids(); !slices.Equal(got, []string{"b"}) {
			t.Errorf("stored %v, want the new batch", got)
		}
	})
}

// TestOnlyTheRejectedEventsAreSetAside: a journaled batch of which the
// store rejects one event as invalid data has its other events stored
// (they were acknowledged when journaled); only the rejected one, with its
// versions, is quarantined.
func TestOnlyTheRejectedEventsAreSetAside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStore{down: true, poison: map[string]bool{"bad": true}}
	j := open(t, dir, fs, fast)
	b := &model.Batch{}
	for _, id := range []string{"ok1", "bad", "ok2"} {
		one := batch(id)
		one.Versions[0].EventKey = one.Events[0].Key
		b.Events = append(b.Events, one.Events...)
		b.Versions = append(b.Versions, one.Versions...)
	}
	if _, err := j.WriteBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	fs.set(func(f *fakeStore) { f.down = false })
	run(t, j)
	waitDrained(t, j)
	if got := fs.ids(); !slices.Equal(got, []string{"ok1", "ok2"}) {
		t.Errorf("stored %v, want ok1 and ok2", got)
	}
	q, _ := filepath.Glob(filepath.Join(dir, quarantineDir, "*.rec"))
	if len(q) != 1 {
		t.Fatalf("quarantined %v, want one file", q)
	}
	data, err := os.ReadFile(q[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePayload(data)
	if err != nil || len(got.Events) != 1 || got.Events[0].AuditID != "bad" || len(got.Versions) != 1 || got.Versions[0].UID != "uid-bad" {
		t.Errorf("quarantined %+v, %v; want the bad event and its version only", got, err)
	}
}

// TestAFullJournalWithNothingInItIsReady: a disk that was full once does
// not keep the sink unready while nothing is journaled and the store
// answers (batches go to the store); with the store down, it does.
func TestAFullJournalWithNothingInItIsReady(t *testing.T) {
	t.Parallel()
	j := open(t, t.TempDir(), &fakeStore{}, fast)
	j.setFull(true)
	if err := j.Ready(); err != nil {
		t.Errorf("empty, store answering: %v", err)
	}
	j.storeDown.Store(true)
	if err := j.Ready(); err == nil {
		t.Error("full and the store down: ready")
	}
}

// TestAnUnknownPayloadVersionIsQuarantined: a record of a payload version
// this release cannot read (one written by a newer release, before a
// downgrade) is never skipped nor stored: it is moved, byte for byte, to
// quarantine/ and counted, and the records around it drain.
func TestAnUnknownPayloadVersionIsQuarantined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	down := &fakeStore{down: true}
	j := open(t, dir, down, fast)
	write(t, j, "a")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	future, err := frame([]byte(`{"v":99,"batch":{"events":[{"audit_id":"from-the-future"}],"shape":"unknown"}}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	segs := segments(t, dir)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(future); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	up := &fakeStore{}
	j2 := open(t, dir, up, fast)
	write(t, j2, "c") // the store answers: not journaled
	run(t, j2)
	waitDrained(t, j2)
	if got := up.ids(); !slices.Equal(got, []string{"c", "a"}) {
		t.Errorf("stored %v, want c then a (the unreadable record neither stored nor in the way)", got)
	}
	q, _ := filepath.Glob(filepath.Join(dir, quarantineDir, "*.rec"))
	if len(q) != 1 || value(t, j2.m.quarantined) != 1 || value(t, j2.m.corrupt) != 0 {
		t.Fatalf("quarantined %v (metric %v, corrupt %v), want the record in one file", q, value(t, j2.m.quarantined), value(t, j2.m.corrupt))
	}
	if data, err := os.ReadFile(q[0]); err != nil || !bytes.Equal(data, future) {
		t.Errorf("quarantined %q, %v; want the record as it was written", data, err)
	}
}
