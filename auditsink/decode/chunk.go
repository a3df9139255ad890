package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// maxChunkItems bounds the events of one chunk as chunkBytes bounds its
// bytes: decoding costs a few hundred bytes per event however small it is.
const maxChunkItems = 4000

// chunkHeader and chunkTrailer make each chunk of a streamed body an
// EventList of its own, decoded by EventList like any batch.
var (
	chunkHeader  = `{"kind":"EventList","apiVersion":"` + auditv1.SchemeGroupVersion.String() + `","items":[`
	chunkTrailer = `]}`
)

// Stream cuts an EventList read from a reader into chunks of about
// chunkBytes, each an EventList of its own, holding at most one chunk and
// one event: a batch larger than memory is decoded and stored as it
// arrives.
type Stream struct {
	s          *itemStream
	chunkBytes int64
	cut        int // s.cut already reported
	truncated  int // s.truncated already reported
}

// Chunk is a part of a streamed EventList.
type Chunk struct {
	// Body is an EventList of the chunk's items, for EventList.
	Body []byte
	// Last is the chunk that ends the stream (it may have no items).
	Last bool
	// TooLarge is the items skipped as longer than maxEventBytes that are
	// not events (an event is kept whatever its length).
	TooLarge int
	// Cut is the deletecollection answers longer than maxEventBytes whose
	// later items were kept as their metadata only.
	Cut int
	// Truncated is the events longer than maxEventBytes kept without their
	// bodies or longest values, marked audit.k8s.io/truncated.
	Truncated int
}

// NewStream reads the EventList r; maxEventBytes bounds what one event
// holds, chunkBytes a chunk.
func NewStream(r io.Reader, maxEventBytes, chunkBytes int64) *Stream {
	return &Stream{s: newItemStream(r, maxEventBytes), chunkBytes: chunkBytes}
}

// Start reads the envelope up to the first item: an ErrBadRequest where
// the body is not an audit.k8s.io/v1 EventList that gives its kind and
// apiVersion first. The reader's error, if any, is in its chain.
func (s *Stream) Start() error {
	if err := s.s.start(); err != nil {
		return fmt.Errorf("%w: body is not a JSON EventList: %w", ErrBadRequest, err)
	}
	if s.s.kind != "EventList" || s.s.apiVersion != auditv1.SchemeGroupVersion.String() {
		return wrongKind(s.s.kind, s.s.apiVersion)
	}
	return nil
}

// Next reads the next chunk, after Start: an ErrBadRequest (with the
// reader's error, if any, in its chain) where the body stops being an
// EventList.
func (s *Stream) Next() (Chunk, error) {
	var (
		c   Chunk
		buf bytes.Buffer
		n   int
	)
	buf.Grow(int(min(s.chunkBytes, 1<<20)))
	buf.WriteString(chunkHeader)
	for int64(buf.Len()) < s.chunkBytes && n+c.TooLarge < maxChunkItems {
		mark := buf.Len()
		if n > 0 {
			buf.WriteByte(',')
		}
		err := s.s.next(&buf)
		if errors.Is(err, io.EOF) {
			buf.Truncate(mark)
			c.Last = true
			break
		}
		if errors.Is(err, errItemTooLarge) {
			buf.Truncate(mark)
			c.TooLarge++
			continue
		}
		if err != nil {
			return Chunk{}, fmt.Errorf("%w: body is not a JSON EventList: %w", ErrBadRequest, err)
		}
		n++
	}
	buf.WriteString(chunkTrailer)
	c.Body = buf.Bytes()
	c.Cut, s.cut = s.s.cut-s.cut, s.s.cut
	c.Truncated, s.truncated = s.s.truncated-s.truncated, s.s.truncated
	return c, nil
}

// Warm compiles the decoder of EventList now rather than on the first
// batch (about 14 ms).
func Warm() error { return warmDecoder() }
