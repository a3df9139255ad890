package auditsink

import (
	"errors"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// The webhook's default body rate and timeout (--webhook-min-body-rate,
// --webhook-body-timeout).
const (
	defaultMinBodyRate = 32 << 10
	defaultBodyTimeout = 15 * time.Second
)

// BodyLimits bound the reading of whole request bodies by another endpoint
// of the sink (the observing webhook, auditsink/admission) with the
// webhook's own reader.
type BodyLimits struct {
	// MaxBytes is the largest body; required.
	MaxBytes int64
	// MinRate is the slowest a body may arrive, in bytes per second after
	// its first 2 s (default 32 KiB/s), and Timeout the longest it may take
	// (default 15 s); slower is ErrSlowBody.
	MinRate int64
	Timeout time.Duration
	// MaxInFlightBytes bounds the bytes of the bodies being read and used
	// at once (default 4 × MaxBytes), counted as they arrive (in chunks of
	// 256 KiB), not as announced; beyond is ErrBytesBusy.
	MaxInFlightBytes int64
}

// ErrSlowBody and ErrBytesBusy are BodyReader.Read's refusals (408 and
// 429); a body over MaxBytes is an *http.MaxBytesError (413).
var (
	ErrSlowBody  = errSlowBody
	ErrBytesBusy = errBytesBusy
)

// BodyReader reads whole request bodies as the webhook does, before the
// request takes a processing slot: a sender that sends slowly occupies a
// connection, never a slot, and is cut off below the minimum rate.
type BodyReader struct{ b *bodyReader }

// NewBodyReader returns a BodyReader.
func NewBodyReader(l BodyLimits) (*BodyReader, error) {
	if l.MaxBytes <= 0 {
		return nil, errors.New("auditsink: a body reader needs a maximum body size")
	}
	if l.MinRate <= 0 {
		l.MinRate = defaultMinBodyRate
	}
	if l.Timeout <= 0 {
		l.Timeout = defaultBodyTimeout
	}
	if l.MaxInFlightBytes <= 0 {
		l.MaxInFlightBytes = 4 * l.MaxBytes
	}
	// One chunk holds the largest body: Read never returns part of one.
	return &BodyReader{&bodyReader{max: l.MaxBytes, chunk: l.MaxBytes, minRate: l.MinRate, timeout: l.Timeout,
		mem: semaphore.NewWeighted(l.MaxInFlightBytes), now: time.Now}}, nil
}

// Read reads r's whole body. release gives back the in-flight bytes it
// holds: call it once the body is no longer used, on error too.
func (br *BodyReader) Read(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	body, held, rest, err := br.b.read(w, r)
	release = func() { br.b.mem.Release(held) }
	if err == nil && rest != nil {
		err = &http.MaxBytesError{Limit: br.b.max} // unreachable: one chunk holds MaxBytes
	}
	if err != nil {
		return nil, release, err
	}
	return body, release, nil
}
