package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/options-record/options-record/store/model"
)

const (
	segmentExt    = ".seg"
	quarantineDir = "quarantine"
	// groupMax bounds the records written and fsynced together.
	groupMax = 64
)

// appendReq is one record for the appender and the channel its result
// comes back on.
type appendReq struct {
	rec  []byte
	at   time.Time
	done chan error // cap 1
}

// append journals b and returns once its record is on disk.
func (j *Journal) append(ctx context.Context, b *model.Batch) error {
	start := time.Now()
	rec, err := encodeRecord(b, start)
	if err != nil {
		j.m.errors.WithLabelValues("encode").Inc()
		return err
	}
	req := &appendReq{rec: rec, at: start, done: make(chan error, 1)}
	select {
	case j.appendc <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err = <-req.done:
	case <-ctx.Done():
		// The record may still reach the disk: then it is stored although
		// the caller failed, and the apiserver's redelivery is a no-op.
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	j.m.appendSeconds.Observe(time.Since(start).Seconds())
	j.m.appended.Inc()
	return nil
}

// appender is the only goroutine that writes segments. It takes the records
// that queued up while it was busy, writes them and fsyncs once for all (a
// group commit), so concurrent batches share one fsync.
func (j *Journal) appender() {
	defer close(j.appended)
	var f *os.File // the active segment, opened for writing
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	for {
		var first *appendReq
		select {
		case req, ok := <-j.appendc:
			if !ok {
				return
			}
			first = req
		case <-j.retirec:
			f = j.retire(f)
			continue
		}
		group := []*appendReq{first}
	more:
		for len(group) < groupMax {
			select {
			case req, ok := <-j.appendc:
				if !ok {
					break more
				}
				group = append(group, req)
			default:
				break more
			}
		}
		f = j.writeGroup(f, group)
	}
}

// writeGroup writes and fsyncs a group of records, answers each request and
// returns the active segment's file (nil after a failure: the next group
// starts a new segment).
func (j *Journal) writeGroup(f *os.File, group []*appendReq) *os.File {
	fail := func(reqs []*appendReq, err error) {
		for _, r := range reqs {
			r.done <- err
		}
	}
	// Admit what fits under MaxBytes, in order.
	j.mu.Lock()
	room := j.opts.MaxBytes - j.disk
	rotate := j.active == nil || j.active.size >= j.opts.SegmentBytes ||
		(j.active.pending == 0 && j.active.size > 0) // drained: start afresh so it can go
	if rotate && j.active != nil && j.active.pending == 0 {
		room += j.active.size // retired below
	}
	j.mu.Unlock()
	var admitted []*appendReq
	var size int64
	for i, r := range group {
		if size+int64(len(r.rec)) > room {
			j.setFull(true)
			j.m.errors.WithLabelValues("full").Add(float64(len(group) - i))
			fail(group[i:], fmt.Errorf("%w: %d bytes on disk, limit %d", ErrFull, j.opts.MaxBytes-room, j.opts.MaxBytes))
			break
		}
		size += int64(len(r.rec))
		admitted = append(admitted, r)
	}
	if len(admitted) == 0 {
		return f
	}
	if rotate {
		var err error
		if f, err = j.rotate(f); err != nil {
			if errors.Is(err, ErrFull) {
				j.setFull(true)
				j.m.errors.WithLabelValues("full").Add(float64(len(admitted)))
			} else {
				j.m.errors.WithLabelValues("append").Add(float64(len(admitted)))
			}
			fail(admitted, err)
			return nil
		}
	}
	j.mu.Lock()
	seg := j.active
	off := seg.size
	j.mu.Unlock()

	pos := off
	for _, r := range admitted {
		if _, err := f.WriteAt(r.rec, pos); err != nil {
			return j.abandonWrite(f, seg, off, admitted, err)
		}
		pos += int64(len(r.rec))
	}
	if err := datasync(f); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages:
		// nothing in this segment written since the last good fsync can be
		// trusted, so none of it is acknowledged and the segment is closed.
		// A full disk may first be reported here (delayed allocation):
		// then the journal is full, as when a write says so.
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			j.setFull(true)
			j.m.errors.WithLabelValues("full").Add(float64(len(admitted)))
			err = fmt.Errorf("%w: %v", ErrFull, err)
		} else {
			j.m.errors.WithLabelValues("sync").Inc()
		}
		j.log.Error("journal fsync failed; closing the segment", "segment", seg.path, "err", err)
		_ = f.Close()
		j.mu.Lock()
		j.active = nil
		j.mu.Unlock()
		j.removeIfDrained(seg)
		fail(admitted, fmt.Errorf("journal: fsync %s: %w", seg.path, err))
		return nil
	}
	j.mu.Lock()
	for _, r := range admitted {
		n := int64(len(r.rec))
		j.queue = append(j.queue, entry{seg: seg, span: span{off: off, size: n, at: r.at}})
		off += n
		seg.pending++
		j.pending += n
	}
	seg.size = off
	j.disk += size
	j.full = false
	j.mu.Unlock()
	for _, r := range admitted {
		r.done <- nil
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return f
}

// abandonWrite handles a failed write: it cuts the segment back to off so no
// partial record stays in it, and answers the group with the error.
func (j *Journal) abandonWrite(f *os.File, seg *segment, off int64, group []*appendReq, err error) *os.File {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		j.setFull(true)
		j.m.errors.WithLabelValues("full").Add(float64(len(group)))
		err = fmt.Errorf("%w: %v", ErrFull, err)
	} else {
		j.m.errors.WithLabelValues("append").Add(float64(len(group)))
		err = fmt.Errorf("journal: write %s: %w", seg.path, err)
	}
	for _, r := range group {
		r.done <- err
	}
	if terr := f.Truncate(off); terr != nil {
		j.log.Error("journal: cannot cut a failed append off its segment; closing the segment", "segment", seg.path, "err", terr)
		_ = f.Close()
		j.mu.Lock()
		j.active = nil // what follows off is garbage the next Open cuts off or skips
		j.mu.Unlock()
		j.removeIfDrained(seg)
		return nil
	}
	return f
}

// rotate closes the active segment (deleting it when drained) and creates
// the next one, durably: the directory is fsynced so that the new file
// survives a power loss along with the records acknowledged from it.
func (j *Journal) rotate(f *os.File) (*os.File, error) {
	f = j.retire(f)
	if f != nil {
		_ = f.Close()
		j.mu.Lock()
		old := j.active
		j.active = nil
		j.mu.Unlock()
		// The drainer may have emptied it since retire looked: it skipped
		// the segment then, as the active one.
		if old != nil {
			j.removeIfDrained(old)
		}
	}
	j.mu.Lock()
	seq := j.nextSeq
	j.nextSeq++
	j.mu.Unlock()
	path := filepath.Join(j.dir, segmentName(seq))
	nf, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return nil, fmt.Errorf("%w: new segment: %v", ErrFull, err)
		}
		return nil, fmt.Errorf("journal: new segment: %w", err)
	}
	if err := syncDir(j.dir); err != nil {
		_ = nf.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("journal: new segment: %w", err)
	}
	s := &segment{seq: seq, path: path}
	j.mu.Lock()
	j.segs = append(j.segs, s)
	j.active = s
	j.mu.Unlock()
	return nf, nil
}

// retire closes and deletes the active segment if everything in it is
// stored, and returns the file still open (nil if retired).
func (j *Journal) retire(f *os.File) *os.File {
	j.mu.Lock()
	s := j.active
	if s == nil || s.pending > 0 {
		j.mu.Unlock()
		return f
	}
	j.active = nil
	j.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
	j.removeIfDrained(s)
	return nil
}

// removeIfDrained deletes a segment that is not being appended to and holds
// nothing left to store.
func (j *Journal) removeIfDrained(s *segment) {
	j.mu.Lock()
	i := -1
	for k, t := range j.segs {
		if t == s {
			i = k
			break
		}
	}
	if i < 0 || s == j.active || s.pending > 0 {
		j.mu.Unlock()
		return
	}
	j.segs = append(j.segs[:i], j.segs[i+1:]...)
	j.disk -= s.size
	j.mu.Unlock()
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		j.log.Warn("journal: remove drained segment", "segment", s.path, "err", err)
	}
}

func (j *Journal) setFull(full bool) {
	j.mu.Lock()
	j.full = full
	j.mu.Unlock()
}

func segmentName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, segmentExt) }

func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, err == nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
