package auditsink

import (
	"errors"
	"io"
	"math/bits"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// bodyGrace is how long a body may take before its average transfer rate
// is held to the minimum: connection set-up and the first write of a large
// body are not cut short.
const bodyGrace = 2 * time.Second

// chunkSize is the unit a body is read in. Chunks come from a pool and
// are taken as the body arrives, so a caller holds memory (and in-flight
// bytes) for what it has sent, not for what it announced; the whole body is
// then copied once into a buffer of its exact size, as the decoder keeps
// slices of it.
const chunkSize = 256 << 10

var chunks = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// Gathered bodies are recycled too, by size class: a fresh buffer of
// several MB per batch was most of what the sink allocated, and so most of
// its garbage collection, where the rules drop most events (measured with
// make bench at 10% kept: 76-81k events/s and 12-13 µs of the sink's CPU
// per event without, 91-95k and 9-10 µs with; peak RSS 145 and 155 MiB).
// The classes are quarter octaves, so a buffer is less than a quarter
// larger than its body. A body is recycled only once nothing reads it:
// see Handler.serve and Outcome.Retained.
const (
	minPooledBody = 64 << 10 // smaller bodies are allocated
	maxPooledBody = 1 << 30
)

var bodies [4 * (bits.UintSize + 1)]sync.Pool

// poisonRecycled, set by tests, overwrites a body with X when it is
// recycled, so that anything still reading it reads garbage, and garbage
// PostgreSQL accepts as text.
var poisonRecycled bool

// bodyClass returns the pool and the capacity of a buffer for n bytes
// (minPooledBody < n <= maxPooledBody): 2^k + q·2^(k-2) for the smallest
// q in 1..4 that holds n, where 2^k < n <= 2^(k+1).
func bodyClass(n int) (class, size int) {
	k := bits.Len(uint(n-1)) - 1
	step := 1 << (k - 2)
	q := (n - 1<<k + step - 1) / step
	return 4*k + q, 1<<k + q*step
}

// newBody returns an empty buffer with room for n bytes.
func newBody(n int64) []byte {
	if n <= minPooledBody || n > maxPooledBody {
		return make([]byte, 0, n)
	}
	class, size := bodyClass(int(n))
	if p, ok := bodies[class].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

// recycleBody gives back a buffer of newBody's: nothing may read it after.
func recycleBody(b []byte) {
	n := cap(b)
	if n <= minPooledBody || n > maxPooledBody {
		return
	}
	class, size := bodyClass(n)
	if size != n {
		return // not one of newBody's
	}
	if poisonRecycled {
		b = b[:n]
		for i := range b {
			b[i] = 'X'
		}
	}
	bodies[class].Put(&b)
}

// deadlineStep is how far the read deadline must move before it is set
// again: setting it on every read of an HTTP/2 stream costs a timer reset
// per frame. A body is held to the minimum rate at most this much early.
const deadlineStep = 250 * time.Millisecond

var (
	// errSlowBody is a body that did not arrive in time: slower than the
	// minimum rate after the grace period, or longer than the body timeout.
	errSlowBody = errors.New("request body too slow")
	// errBytesBusy is a body that would take the in-flight bytes over
	// their budget.
	errBytesBusy = errors.New("too many bytes in flight")
	// errLongerThanAnnounced is a body that goes on past its Content-Length.
	errLongerThanAnnounced = errors.New("body longer than its Content-Length")
)

// slowBodyRetryAfter is the Retry-After of a body cut off for its rate:
// without one, the apiserver drops the batch on the first try.
const slowBodyRetryAfter = "5"

// bodyReader reads request bodies under the handler's limits, before the
// request takes a processing slot: a caller that sends slowly occupies a
// connection, never a slot.
type bodyReader struct {
	max     int64         // MaxBodyBytes; 0: no limit
	chunk   int64         // ChunkBytes: the most read into memory at once
	minRate int64         // bytes per second, after bodyGrace
	timeout time.Duration // the whole body, or each chunk of a streamed one
	mem     *semaphore.Weighted
	now     func() time.Time
}

// deadline is the deadline of the next read of a body (or chunk) begun at
// start of which received bytes have come: when it would fall below the
// minimum rate if nothing more came; never later than the timeout.
func (b *bodyReader) deadline(start time.Time, received int64) time.Time {
	d := max(bodyGrace, time.Duration(float64(received)/float64(b.minRate)*float64(time.Second)))
	return start.Add(min(d, b.timeout))
}

// read reads r's body. It returns the body and the in-flight bytes it holds
// for it (to release when the body is no longer used), also on error. A
// body longer than ChunkBytes is not read whole: read returns its first
// bytes and, in rest, the reader of the others, held to the same minimum
// rate (see restReader).
func (b *bodyReader) read(w http.ResponseWriter, r *http.Request) ([]byte, int64, *restReader, error) {
	rc := http.NewResponseController(w)
	start := b.now()
	var body io.Reader = r.Body
	if b.max > 0 {
		body = http.MaxBytesReader(w, r.Body, b.max)
	}
	// Room for one byte more than the chunk may hold, so that a body longer
	// than announced, or than one chunk, is seen.
	want := b.chunk + 1
	if n := r.ContentLength; n >= 0 && n <= b.chunk {
		want = n + 1
	}
	var (
		parts []*[]byte // full chunks, then the one being filled
		fill  int       // bytes in the last chunk
		total int64
		held  int64
		set   time.Time // the read deadline in force
	)
	release := func() {
		for _, c := range parts {
			chunks.Put(c)
		}
	}
	defer release()
	// gather copies the chunks into one buffer of the exact size: the
	// decoder keeps slices of it.
	gather := func() []byte {
		out := newBody(total)
		for i, c := range parts {
			if i == len(parts)-1 {
				out = append(out, (*c)[:fill]...)
			} else {
				out = append(out, *c...)
			}
		}
		return out
	}
	for {
		if total >= want {
			// Only a body longer than it may be fills the extra byte.
			if r.ContentLength >= 0 && r.ContentLength <= b.chunk {
				return nil, held, nil, errLongerThanAnnounced
			}
			// Longer than a chunk: the rest is read as it is decoded.
			return gather(), held, &restReader{b: b, rc: rc, r: body, start: start, received: total, set: set}, nil
		}
		if len(parts) == 0 || fill == chunkSize {
			grow := min(int64(chunkSize), want-total)
			if !b.mem.TryAcquire(grow) {
				return nil, held, nil, errBytesBusy
			}
			held += grow
			parts = append(parts, chunks.Get().(*[]byte))
			fill = 0
		}
		last := (*parts[len(parts)-1])[:min(int64(chunkSize), int64(fill)+want-total)]
		// A writer without deadlines (a test's recorder) reads without.
		if d := b.deadline(start, total); d.Sub(set) >= deadlineStep || set.IsZero() {
			_ = rc.SetReadDeadline(d)
			set = d
		}
		n, err := body.Read(last[fill:])
		fill += n
		total += int64(n)
		switch {
		case errors.Is(err, io.EOF):
			// Lift the body's deadline: the connection waits for the
			// answer, bounded by the write deadline.
			_ = rc.SetReadDeadline(time.Time{})
			if total >= want {
				if r.ContentLength >= 0 && r.ContentLength <= b.chunk {
					return nil, held, nil, errLongerThanAnnounced
				}
				return gather(), held, nil, nil // exactly one chunk and one byte
			}
			// Memory is the chunks' until they go back to the pool; the
			// body's own buffer is counted by what held released.
			return gather(), held, nil, nil
		case errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
			return nil, held, nil, errSlowBody
		case err != nil:
			return nil, held, nil, err
		}
	}
}

// restReader reads the rest of a body longer than a chunk, held to the
// minimum rate and the timeout per chunk: pause lifts the deadline while a
// chunk is stored (the sender waits for us then), resume starts the next
// chunk's clock.
type restReader struct {
	b        *bodyReader
	rc       *http.ResponseController
	r        io.Reader
	start    time.Time
	received int64
	set      time.Time
}

func (d *restReader) Read(p []byte) (int, error) {
	if dl := d.b.deadline(d.start, d.received); dl.Sub(d.set) >= deadlineStep || d.set.IsZero() {
		_ = d.rc.SetReadDeadline(dl)
		d.set = dl
	}
	n, err := d.r.Read(p)
	d.received += int64(n)
	if err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err)) {
		return n, errSlowBody
	}
	return n, err
}

func (d *restReader) pause() {
	_ = d.rc.SetReadDeadline(time.Time{})
	d.set = time.Time{}
}

func (d *restReader) resume() {
	d.start, d.received = d.b.now(), 0
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
