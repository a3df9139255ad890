package journal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// Errors of WriteBatch. Both mean the batch is not acknowledged.
var (
	// ErrFull: the journal reached Options.MaxBytes or its disk is full.
	ErrFull = errors.New("journal full")
	// ErrClosed: the journal is closed (the sink is stopping).
	ErrClosed = errors.New("journal closed")
)

// Options configure a Journal. Zero values take the defaults.
type Options struct {
	// MaxBytes caps the segment files on disk (default 1 GiB). An append
	// beyond it fails with ErrFull, as a full disk does.
	MaxBytes int64
	// HighWater is the backlog, in bytes not yet stored, above which Ready
	// fails (default 3/4 of MaxBytes).
	HighWater int64
	// SegmentBytes is the size at which a segment is closed and a new one
	// begun (default 32 MiB).
	SegmentBytes int64
	// WriteDeadline bounds a direct store write (default 5 s). A write that
	// has not committed by then is abandoned (its context cancelled) and the
	// batch journaled; should it commit after all, the drain's write of the
	// same batch changes nothing.
	WriteDeadline time.Duration
	// DrainTimeout bounds one drain write (default 30 s).
	DrainTimeout time.Duration
	// DrainBytes caps the records merged into one drain transaction
	// (default 16 MiB, and at most 64 records).
	DrainBytes int64
	// RetryMin and RetryMax bound the drainer's backoff while the store
	// fails (defaults 250 ms and 2 s): RetryMin doubling up to RetryMax,
	// each wait up to a quarter longer at random (see backoff).
	RetryMin, RetryMax time.Duration
	// Registerer receives the journal's metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Logger; nil discards.
	Logger *slog.Logger
	// Drained, when set, is called with each journaled batch once the
	// drainer has stored it (with the time it was stored): the sink records
	// its source's progress then, not when the batch was journaled. Its
	// Events and Source are set; it must not keep the batch.
	Drained func(ctx context.Context, b *model.Batch, stored time.Time)
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 30
	}
	if o.HighWater <= 0 {
		o.HighWater = o.MaxBytes / 4 * 3
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 32 << 20
	}
	if o.WriteDeadline <= 0 {
		o.WriteDeadline = 5 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.DrainBytes <= 0 {
		o.DrainBytes = 16 << 20
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 250 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 2 * time.Second
	}
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HighWater > o.MaxBytes {
		return o, fmt.Errorf("journal: high-water mark %d above the size limit %d", o.HighWater, o.MaxBytes)
	}
	return o, nil
}

// segment is one file of the journal.
type segment struct {
	seq     uint64
	path    string
	size    int64 // bytes on disk
	pending int   // records not yet stored
}

// entry is one journaled batch not yet stored.
type entry struct {
	seg *segment
	span
}

// Journal stores batches through an inner model.Writer and, when that fails or is
// too slow, journals them durably and stores them later (Run). It implements
// the sink's model.Writer.
type Journal struct {
	dir   string
	inner model.Writer
	opts  Options
	log   *slog.Logger
	m     *metrics
	lock  *os.File

	appendc  chan *appendReq
	retirec  chan struct{}
	appended chan struct{} // closed when the appender has stopped
	wake     chan struct{} // cap 1: a record was appended
	running  chan struct{} // cap 1: Run holds it

	mu      sync.Mutex
	segs    []*segment // oldest first
	active  *segment   // the segment being appended to (the appender's); nil: none yet
	queue   []entry    // journaled batches not yet stored, oldest first
	pending int64      // bytes of queue
	disk    int64      // bytes of segs
	nextSeq uint64
	full    bool // the last append failed for want of space and nothing drained since
	// storeDown: the last store write failed or missed its deadline, and
	// none has succeeded since.
	storeDown atomic.Bool
	closed    bool
	calls     sync.WaitGroup // WriteBatch calls under way
}

// Open opens (creating it if needed) the journal in dir, in front of inner.
// It recovers the batches a previous process journaled and did not store:
// Run stores them.
func Open(dir string, inner model.Writer, opts Options) (*Journal, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if inner == nil {
		return nil, errors.New("journal: no inner writer")
	}
	if err := os.MkdirAll(filepath.Join(dir, quarantineDir), 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, quarantineDir)} {
		if err := checkDir(d); err != nil {
			return nil, err
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	j := &Journal{
		dir: dir, inner: inner, opts: opts, log: opts.Logger, lock: lock,
		appendc:  make(chan *appendReq),
		retirec:  make(chan struct{}, 1),
		appended: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		running:  make(chan struct{}, 1),
	}
	j.m = newMetrics(j)
	if err := j.recover(); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if err := j.m.register(opts.Registerer); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if n := len(j.queue); n > 0 {
		j.log.Warn("journal holds batches not yet stored; draining them", "dir", dir, "batches", n,
			"bytes", j.pending, "oldest", j.queue[0].at)
	}
	go j.appender()
	return j, nil
}

// freeName is base+ext, or base.N+ext for the first N that names no file:
// what is set aside is never written over (segment numbers repeat once the
// cursor is lost). The journal's lock keeps other processes out.
func freeName(base, ext string) string {
	name := base + ext
	for n := 1; n < 1000; n++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.%d%s", base, n, ext)
	}
	return name
}

// recover rebuilds the queue from the segments on disk.
func (j *Journal) recover() error {
	cur, _ := readCursor(j.dir)
	names, err := filepath.Glob(filepath.Join(j.dir, "*"+segmentExt))
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	var segs []*segment
	for _, name := range names {
		if seq, ok := parseSegmentName(filepath.Base(name)); ok {
			segs = append(segs, &segment{seq: seq, path: name})
		}
	}
	slices.SortFunc(segs, func(a, b *segment) int { return cmp.Compare(a.seq, b.seq) })
	j.nextSeq = cur.seq + 1
	corrupt := 0
	for _, s := range segs {
		j.nextSeq = max(j.nextSeq, s.seq+1)
		if s.seq < cur.seq {
			_ = os.Remove(s.path) // drained before the cursor moved past it
			continue
		}
		data, err := os.ReadFile(s.path)
		if err != nil {
			// One unreadable segment must not keep the sink from starting
			// (and ingest down with it): it is moved aside, for an
			// operator, and counted.
			aside := freeName(filepath.Join(j.dir, quarantineDir, filepath.Base(s.path)), ".unreadable")
			rerr := os.Rename(s.path, aside)
			j.log.Error("journal segment cannot be read; set aside, its batches are not drained", "segment", s.path,
				"moved_to", aside, "err", err, "move_err", rerr)
			corrupt++
			continue
		}
		sc := scanSegment(data)
		corrupt += sc.corrupt
		if sc.corrupt > 0 {
			j.log.Error("journal segment has damaged records; skipped them", "segment", s.path, "damaged", sc.corrupt)
		}
		if sc.validEnd < int64(len(data)) {
			j.log.Warn("journal segment ends in a torn record (an append cut short); truncating it",
				"segment", s.path, "size", len(data), "intact", sc.validEnd)
			if err := os.Truncate(s.path, sc.validEnd); err != nil {
				// Not needed for correctness: recovered segments are never
				// appended to, and reads stop at validEnd.
				j.log.Warn("journal: cannot truncate a torn tail; leaving it", "segment", s.path, "err", err)
			}
		}
		s.size = sc.validEnd
		for _, r := range sc.records {
			if s.seq == cur.seq && uint64(r.off) < cur.off {
				continue // stored already
			}
			j.queue = append(j.queue, entry{seg: s, span: r})
			s.pending++
			j.pending += r.size
		}
		if s.pending == 0 {
			_ = os.Remove(s.path)
			continue
		}
		j.segs = append(j.segs, s)
		j.disk += s.size
	}
	j.m.corrupt.Add(float64(corrupt))
	return nil
}

// WriteBatch stores b through the inner writer when the write commits
// within WriteDeadline; otherwise (the store failed with anything but
// invalid data, or was too slow) it journals b and returns once the record
// is on disk. From such a failure until the next successful store write
// (the drainer's or another batch's), batches go to the journal without
// trying the store: acknowledgements stay fast during an outage. Once the
// store answers, new batches are stored directly again while the drainer
// catches up, so the backlog shrinks even under full load (the record
// orders versions by resourceVersion, never by arrival). A journaled batch has a zero WriteResult
// but for Journaled: it is counted, and Options.Drained told, when drained.
// Errors (ErrFull, ErrClosed, invalid data, a failing disk) mean b is
// neither stored nor journaled.
func (j *Journal) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	if !j.enter() {
		return model.WriteResult{}, ErrClosed
	}
	defer j.calls.Done()
	if len(b.Events) == 0 && len(b.Versions) == 0 {
		return model.WriteResult{}, nil
	}
	tried := false
	if !j.storeDown.Load() {
		res, err := j.direct(ctx, b)
		if err == nil {
			return res, nil
		}
		if store.IsPermanent(err) || ctx.Err() != nil {
			return res, err
		}
		if !j.storeDown.Swap(true) {
			j.log.Warn("store write failed or exceeded its deadline; journaling batches until the store answers again",
				"events", len(b.Events), "err", err)
		}
		j.m.fallbacks.Inc()
		tried = true
	}
	err := j.append(ctx, b)
	if err == nil {
		return model.WriteResult{Journaled: true}, nil
	}
	if errors.Is(err, ErrFull) && !tried && ctx.Err() == nil {
		// The journal is full while draining: the store may take this batch
		// itself (order between batches does not matter to the record).
		if res, derr := j.direct(ctx, b); derr == nil {
			return res, nil
		}
	}
	return model.WriteResult{}, err
}

// enter registers a WriteBatch call unless the journal is closed.
func (j *Journal) enter() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return false
	}
	j.calls.Add(1)
	return true
}

// direct writes b to the store, giving up after WriteDeadline. The
// abandoned write's context is cancelled, but it may still commit.
func (j *Journal) direct(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	wctx, cancel := context.WithTimeout(ctx, j.opts.WriteDeadline)
	type result struct {
		res model.WriteResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer cancel()
		res, err := j.inner.WriteBatch(wctx, b)
		done <- result{res, err}
	}()
	t := time.NewTimer(j.opts.WriteDeadline)
	defer t.Stop()
	select {
	case r := <-done:
		return r.res, r.err
	case <-t.C:
		b.Retained = true // the write goes on reading it
		return model.WriteResult{}, fmt.Errorf("store write did not commit within %s", j.opts.WriteDeadline)
	case <-ctx.Done():
		b.Retained = true
		return model.WriteResult{}, ctx.Err()
	}
}

// Backlog is the number of journaled batches not yet stored.
func (j *Journal) Backlog() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.queue)
}

// Stats describe the journal's backlog.
type Stats struct {
	Batches   int       // journaled, not yet stored
	Bytes     int64     // their size
	DiskBytes int64     // size of the segment files
	Oldest    time.Time // append time of the oldest; zero when empty
}

// Stats returns the current backlog.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := Stats{Batches: len(j.queue), Bytes: j.pending, DiskBytes: j.disk}
	if len(j.queue) > 0 {
		s.Oldest = j.queue[0].at
	}
	return s
}

// Ready fails when the backlog is above the high-water mark or the last
// append found the journal full (the sink should take no more traffic until
// it drains), or the journal is closed.
func (j *Journal) Ready() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return ErrClosed
	case j.pending > j.opts.HighWater:
		return fmt.Errorf("journal backlog of %d batches (%d bytes) is above the high-water mark of %d bytes",
			len(j.queue), j.pending, j.opts.HighWater)
	case j.full && (len(j.queue) > 0 || j.storeDown.Load()):
		// Full with nothing journaled and the store answering: batches go
		// to the store, and the next append says whether there is room.
		return fmt.Errorf("journal full (%d batches, %d bytes on disk): batches the database cannot take are refused", len(j.queue), j.disk)
	}
	return nil
}

// Close refuses new batches, waits for the WriteBatch calls under way (each
// ends stored, journaled or failed within its deadline), flushes and closes
// the segment and releases the directory. Stop Run first. What is journaled
// and not stored stays for the next Open.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	j.calls.Wait()
	close(j.appendc)
	<-j.appended
	return j.lock.Close()
}
