package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

const (
	cursorFile = "cursor"
	// drainRecords caps the records merged into one drain transaction.
	drainRecords = 64
	// quarantineAfter is how many times a record PostgreSQL rejects as
	// invalid data is retried alone before it is set aside.
	quarantineAfter = 3
)

// backoff is the drainer's: RetryMin doubling up to RetryMax, with jitter
// so that replicas whose store failed together do not retry together.
func (o Options) backoff() wait.Backoff {
	return wait.Backoff{Duration: o.RetryMin, Factor: 2, Jitter: 0.25, Steps: math.MaxInt32, Cap: o.RetryMax}
}

// Run stores the journaled batches in the store, oldest first, merging
// consecutive ones into one transaction, until ctx is cancelled. While the
// store fails it retries with backoff; it never drops a batch. A batch the
// store rejects as invalid data (store.IsPermanent) quarantineAfter times on
// its own is moved to the quarantine directory and counted.
func (j *Journal) Run(ctx context.Context) error {
	select {
	case j.running <- struct{}{}:
	default:
		return errors.New("journal: Run is already running")
	}
	defer func() { <-j.running }()
	bo := j.opts.backoff()
	single := 0     // records to drain one at a time (after a permanent error in a merged write)
	rejected := 0   // permanent failures of the head record alone
	unreadable := 0 // failures to read the head record from disk
	var failingSince time.Time
	for {
		head := j.head(single > 0)
		if len(head) == 0 {
			select {
			case j.retirec <- struct{}{}: // let the appender delete the drained segment
			default:
			}
			select {
			case <-ctx.Done():
				return nil
			case <-j.wake:
			}
			continue
		}
		n, err := j.drain(ctx, head)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			j.storeDown.Store(false)
			if !failingSince.IsZero() {
				j.log.Info("store answers again; draining the journal", "failing_for", time.Since(failingSince).Round(time.Millisecond).String())
				failingSince = time.Time{}
			}
			bo, rejected, unreadable = j.opts.backoff(), 0, 0
			single = max(0, single-n)
			if j.Backlog() == 0 {
				j.log.Info("journal drained")
			}
			continue
		}
		j.m.errors.WithLabelValues("drain").Inc()
		switch {
		case errors.Is(err, errUnreadable):
			// The disk failed, not the store: new batches still go to the
			// store. A record the disk has lost (an I/O error, a short
			// read, its file gone) is counted and skipped after a few
			// tries, and the others drain; any other read error (out of
			// file descriptors, say) passes: the record is retried.
			if !recordLost(err) {
				break
			}
			if unreadable++; unreadable >= quarantineAfter {
				j.m.corrupt.Inc()
				j.log.Error("journaled batch cannot be read from disk; skipping it", "err", err)
				j.skip(head[:1], "unreadable")
				unreadable = 0
				single = max(0, single-1)
				if j.Backlog() == 0 {
					// Nothing left to learn the store's state from: let the
					// next batch try it (it falls back here if it is down).
					j.storeDown.Store(false)
				}
				continue
			}
		case !store.IsPermanent(err):
			j.storeDown.Store(true)
		}
		if store.IsPermanent(err) {
			if len(head) > 1 {
				single = len(head) // find the culprit
				continue
			}
			if rejected++; rejected >= quarantineAfter {
				if qerr := j.setAside(ctx, head[0], err); qerr == nil {
					rejected = 0
					single = max(0, single-1)
					continue
				} else {
					err = qerr
				}
			}
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
			j.log.Warn("cannot store journaled batches; retrying", "backlog", j.Backlog(), "err", err)
		} else {
			j.log.Debug("cannot store journaled batches; retrying", "backlog", j.Backlog(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(bo.Step()):
		}
	}
}

// head returns the oldest journaled batches to store together.
func (j *Journal) head(one bool) []entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.queue) == 0 {
		return nil
	}
	limit := drainRecords
	if one {
		limit = 1
	}
	var size int64
	n := 0
	for n < len(j.queue) && n < limit {
		if n > 0 && size+j.queue[n].size > j.opts.DrainBytes {
			break
		}
		size += j.queue[n].size
		n++
	}
	return append([]entry(nil), j.queue[:n]...)
}

// drain stores the batches of head in one transaction and, once committed,
// removes them from the journal. It returns how many entries it removed.
// Records that no longer read back intact are skipped and counted; records
// that read back but do not decode are quarantined.
func (j *Journal) drain(ctx context.Context, head []entry) (int, error) {
	merged := &model.Batch{}
	var parts []*model.Batch // for Options.Drained
	for i, e := range head {
		rec, err := readRecord(e)
		if err != nil {
			if i > 0 {
				head = head[:i] // store the good ones before it first
				break
			}
			return 0, fmt.Errorf("journal: read %s at %d: %w: %w", e.seg.path, e.off, errUnreadable, err)
		}
		var b *model.Batch
		if _, _, err = parseRecord(rec); err == nil {
			b, err = decodePayload(rec)
		}
		if err != nil {
			if i > 0 {
				head = head[:i] // store the good ones before it first
				break
			}
			if errors.Is(err, errDecode) {
				// Intact but unreadable to this version: keep it for an operator.
				return 0, j.quarantine(e, rec, err)
			}
			j.m.corrupt.Inc()
			j.log.Error("journaled batch damaged on disk; skipping it", "segment", e.seg.path, "offset", e.off, "err", err)
			j.skip(head[:1], "damaged")
			return 0, nil
		}
		merged.Events = append(merged.Events, b.Events...)
		merged.Versions = append(merged.Versions, b.Versions...)
		parts = append(parts, b)
	}
	for i, b := range parts {
		if i == 0 || b.Source == merged.Source {
			merged.Source = b.Source
		} else {
			merged.Source = "" // of several sources: Drained tells each
			break
		}
	}
	wctx, cancel := context.WithTimeout(ctx, j.opts.DrainTimeout)
	defer cancel()
	start := time.Now()
	res, err := j.inner.WriteBatch(wctx, merged)
	if err != nil {
		return 0, err
	}
	j.m.drainSeconds.Observe(time.Since(start).Seconds())
	j.log.Debug("stored journaled batches", "batches", len(head), "events", res.Events,
		"duplicates", res.DuplicateEvents, "elapsed", time.Since(start))
	// The store answers: new batches go to it again from now on, not once
	// the cursor is saved (see skip).
	j.storeDown.Store(false)
	j.skip(head, "")
	j.drained(ctx, parts...)
	return len(head), nil
}

// skip removes the oldest len(done) entries, which are done, from the
// journal: it moves the cursor past them and deletes drained segments.
func (j *Journal) skip(done []entry, reason string) {
	// The cursor first (synced, so it takes a moment): the backlog is seen
	// to shrink only once the work is done.
	last := done[len(done)-1]
	if err := writeCursor(j.dir, cursor{seq: last.seg.seq, off: uint64(last.off + last.size)}); err != nil {
		// Only a hint: without it the next Open stores these batches again.
		j.log.Warn("journal: cannot save the drain cursor", "err", err)
	}
	j.mu.Lock()
	segs := make([]*segment, 0, 2)
	for i := range done {
		e := &j.queue[i]
		e.seg.pending--
		j.pending -= e.size
		if len(segs) == 0 || segs[len(segs)-1] != e.seg {
			segs = append(segs, e.seg)
		}
		j.queue[i] = entry{}
	}
	j.queue = j.queue[len(done):]
	j.full = false // room again, or soon: the segments go below
	if len(j.queue) == 0 {
		j.queue = nil // let the array go
	}
	j.mu.Unlock()
	if reason == "" {
		j.m.drained.Add(float64(len(done)))
	}
	for _, s := range segs {
		j.removeIfDrained(s)
	}
}

// drained tells Options.Drained of batches now stored.
func (j *Journal) drained(ctx context.Context, bs ...*model.Batch) {
	if j.opts.Drained == nil {
		return
	}
	now := time.Now()
	for _, b := range bs {
		j.opts.Drained(ctx, b, now)
	}
}

// recordLost reports whether a read error means the record is gone for
// good rather than for now.
func recordLost(err error) bool {
	return errors.Is(err, syscall.EIO) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR)
}

// setAside deals with a record the store keeps rejecting as invalid data:
// its events are stored one at a time (each with its versions), and only
// those the store rejects are quarantined, so that one bad event does not
// keep a batch's others, acknowledged long ago, out of the record. A
// failure of the store itself leaves the record at the head, to retry
// (what was stored by then is found stored).
func (j *Journal) setAside(ctx context.Context, e entry, cause error) error {
	rec, err := readRecord(e)
	if err != nil {
		return fmt.Errorf("journal: set aside: %w: %w", errUnreadable, err)
	}
	b, err := decodePayload(rec)
	if err != nil || len(b.Events) < 2 {
		return j.quarantine(e, rec, cause)
	}
	byEvent := make(map[string][]model.Version, len(b.Events))
	var loose []model.Version // versions of no event of the batch
	keys := make(map[string]bool, len(b.Events))
	for _, ev := range b.Events {
		keys[ev.Cluster+"\x00"+string(ev.Key)] = true
	}
	for _, v := range b.Versions {
		if k := v.Cluster + "\x00" + string(v.EventKey); keys[k] {
			byEvent[k] = append(byEvent[k], v)
		} else {
			loose = append(loose, v)
		}
	}
	var rejected model.Batch
	for i := range b.Events {
		ev := &b.Events[i]
		one := &model.Batch{Events: b.Events[i : i+1], Versions: byEvent[ev.Cluster+"\x00"+string(ev.Key)]}
		if i == 0 {
			one.Versions = append(one.Versions, loose...)
		}
		wctx, cancel := context.WithTimeout(ctx, j.opts.DrainTimeout)
		_, werr := j.inner.WriteBatch(wctx, one)
		cancel()
		switch {
		case werr == nil:
		case store.IsPermanent(werr):
			rejected.Events = append(rejected.Events, one.Events...)
			rejected.Versions = append(rejected.Versions, one.Versions...)
		default:
			return werr
		}
	}
	if len(rejected.Events) == 0 {
		j.skip([]entry{e}, "")
		j.drained(ctx, b)
		return nil
	}
	part, err := encodeRecord(&rejected, e.at)
	if err != nil {
		return fmt.Errorf("journal: set aside: %w", err)
	}
	j.log.Error("journaled events the store rejects as invalid data: the others of their batch stored, these set aside",
		"events", len(rejected.Events), "of", len(b.Events))
	return j.quarantine(e, part, cause)
}

// quarantine writes rec (the record of e, or the part of it the store
// rejects) aside, durably, and removes e from the journal.
func (j *Journal) quarantine(e entry, rec []byte, cause error) error {
	// Segment numbers can repeat after the cursor is lost (it is only a
	// hint): a name already taken gets a suffix, and no quarantined batch
	// is ever written over.
	base := filepath.Join(j.dir, quarantineDir, fmt.Sprintf("%020d-%012d", e.seg.seq, e.off))
	path := base + ".rec"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	for n := 1; errors.Is(err, fs.ErrExist) && n < 1000; n++ {
		path = fmt.Sprintf("%s.%d.rec", base, n)
		f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	}
	if err != nil {
		return fmt.Errorf("journal: quarantine: %w", err)
	}
	_, werr := f.Write(rec)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("journal: quarantine: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("journal: quarantine: %w", err)
	}
	j.m.quarantined.Inc()
	j.log.Error("journaled batch set aside: the store rejects it as invalid data; it is kept for inspection",
		"path", path, "err", cause)
	j.skip([]entry{e}, "quarantined")
	return nil
}

func readRecord(e entry) ([]byte, error) {
	f, err := os.Open(e.seg.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec := make([]byte, e.size)
	if _, err := f.ReadAt(rec, e.off); err != nil {
		return nil, err
	}
	return rec, nil
}

// cursor is how far the drain got: everything before off in segment seq,
// and every segment before seq, is stored.
type cursor struct{ seq, off uint64 }

func writeCursor(dir string, c cursor) error {
	b := binary.LittleEndian.AppendUint64(nil, c.seq)
	b = binary.LittleEndian.AppendUint64(b, c.off)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	// Written aside, synced, then renamed over the cursor: a crash leaves
	// the old cursor or the new, and nothing is written through a link.
	tmp := filepath.Join(dir, cursorFile+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, cursorFile)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// readCursor returns the saved cursor, or the zero cursor (drain everything).
func readCursor(dir string) (cursor, error) {
	f, err := os.OpenFile(filepath.Join(dir, cursorFile), os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return cursor{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return cursor{}, err
	}
	if len(b) != 20 || crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return cursor{}, errors.New("journal: damaged cursor")
	}
	return cursor{seq: binary.LittleEndian.Uint64(b), off: binary.LittleEndian.Uint64(b[8:])}, nil
}
