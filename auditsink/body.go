package auditsink

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/semaphore"
)

// bodyGrace is how long a body may take before its average transfer rate
// is held to the minimum: connection set-up and the first write of a large
// body are not cut short.
const bodyGrace = 2 * time.Second

// firstChunk is the buffer a body starts in. The buffer doubles as the body
// arrives, so a caller holds memory (and in-flight bytes) for what it has
// sent, not for what it announced.
const firstChunk = 64 << 10

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

// bodyReader reads request bodies under the handler's limits, before the
// request takes a processing slot: a caller that sends slowly occupies a
// connection, never a slot.
type bodyReader struct {
	max     int64         // MaxBodyBytes
	minRate int64         // bytes per second, after bodyGrace
	timeout time.Duration // the whole body
	mem     *semaphore.Weighted
	now     func() time.Time
}

// read reads r's body. It returns the body and the in-flight bytes it holds
// for it (to release when the body is no longer used), also on error.
func (b *bodyReader) read(w http.ResponseWriter, r *http.Request) ([]byte, int64, error) {
	rc := http.NewResponseController(w)
	start := b.now()
	// The deadline of the next read: when the body, if nothing more came,
	// would fall below the minimum rate; never later than the timeout.
	deadline := func(received int) time.Time {
		d := max(bodyGrace, time.Duration(float64(received)/float64(b.minRate)*float64(time.Second)))
		return start.Add(min(d, b.timeout))
	}
	body := http.MaxBytesReader(w, r.Body, b.max)
	// Room for one byte more than the body may hold, so that a body longer
	// than announced or allowed is seen.
	want := b.max + 1
	if n := r.ContentLength; n >= 0 && n <= b.max {
		want = n + 1
	}
	var (
		buf  []byte
		held int64
	)
	for {
		if len(buf) == cap(buf) {
			if int64(cap(buf)) >= want {
				// Only a body longer than it may be fills the extra byte.
				if r.ContentLength >= 0 {
					return nil, held, errLongerThanAnnounced
				}
				return nil, held, &http.MaxBytesError{Limit: b.max}
			}
			grow := min(max(int64(cap(buf))*2, firstChunk), want) - int64(cap(buf))
			if !b.mem.TryAcquire(grow) {
				return nil, held, errBytesBusy
			}
			held += grow
			next := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(next, buf)
			buf = next
		}
		// A writer without deadlines (a test's recorder) reads without.
		_ = rc.SetReadDeadline(deadline(len(buf)))
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			// Lift the body's deadline: the connection waits for the
			// answer, bounded by the write deadline.
			_ = rc.SetReadDeadline(time.Time{})
			return buf, held, nil
		case errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
			return nil, held, errSlowBody
		case err != nil:
			return nil, held, err
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
