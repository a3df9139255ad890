package decode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/options-record/options-record/store/model/jsonscan"
)

// itemStream reads an EventList from a reader one item at a time, holding
// at most one item: a batch larger than memory is decoded as it arrives.
// Like splitEventList it finds the items' extent without a nesting limit
// (with jsonscan.Extent), leaving their decoding (and validation) to
// EventList.
//
// It needs kind and apiVersion before the items (the kube-apiserver writes
// them first): the events of a batch are stored chunk by chunk as they
// arrive, so what the batch is must be known before its first chunk is.
type itemStream struct {
	r          *bufio.Reader
	maxItem    int64
	off        int64 // bytes consumed, for messages
	kind       string
	apiVersion string
	state      int // where in the envelope the stream is
	first      bool
	cut        int // List items kept as their metadata only (see event)
	truncated  int // events kept without a body or a member (see event)
	// held is the most bytes one event held at a moment, in dst and beside
	// it (see event): what it costs above MaxEventBytes (tests).
	held int64
}

// holding notes that an event holds n bytes at this moment.
func (s *itemStream) holding(n int) { s.held = max(s.held, int64(n)) }

const (
	inEnvelope = iota // before a member of the EventList object
	inItems           // inside the items array
	atEnd             // the EventList object is closed
)

// errItemTooLarge is an item longer than maxItem: it was skipped.
var errItemTooLarge = errors.New("event too large")

func newItemStream(r io.Reader, maxItem int64) *itemStream {
	return &itemStream{r: bufio.NewReaderSize(r, 64<<10), maxItem: maxItem}
}

func (s *itemStream) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{s.off}, args...)...)
}

func (s *itemStream) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err == nil {
		s.off++
	} else if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return c, err
}

// space skips white space and returns the next byte, consumed.
func (s *itemStream) space() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil || !jsonscan.IsSpace(c) {
			return c, err
		}
	}
}

// start reads the envelope up to the first item (or the end of an empty
// list): kind and apiVersion, which it requires before the items.
func (s *itemStream) start() error {
	c, err := s.space()
	if err != nil {
		return err
	}
	if c != '{' {
		return s.errorf("not a JSON object")
	}
	s.first = true
	return s.members()
}

// members reads the envelope's members until the items array opens or the
// object closes.
func (s *itemStream) members() error {
	for {
		var name bytes.Buffer
		nw := &limitWriter{w: &name, max: 1 << 10}
		c, end, err := s.member(s.first, nw, "EventList")
		if err != nil {
			return err
		}
		if end {
			s.state = atEnd
			return s.trailer()
		}
		s.first = false
		if nw.over {
			return s.errorf("member name longer than %d bytes", 1<<10)
		}
		var key string
		if err := json.Unmarshal(name.Bytes(), &key); err != nil {
			return fmt.Errorf("member name: %w", err)
		}
		switch {
		case strings.EqualFold(key, "items"):
			if s.kind == "" || s.apiVersion == "" {
				return s.errorf("a large EventList must give kind and apiVersion before its items, as the kube-apiserver does")
			}
			if c == 'n' {
				if err := s.literal("ull"); err != nil {
					return err
				}
				continue
			}
			if c != '[' {
				return s.errorf("items: want an array")
			}
			s.state, s.first = inItems, true
			return nil
		case strings.EqualFold(key, "kind"), strings.EqualFold(key, "apiVersion"):
			var v bytes.Buffer
			if c != '"' {
				return s.errorf("member %q: want a string", key)
			}
			v.WriteByte('"')
			if err := s.copyString(&v, 1<<10); err != nil {
				return fmt.Errorf("member %q: %w", key, err)
			}
			var str string
			if err := json.Unmarshal(v.Bytes(), &str); err != nil {
				return fmt.Errorf("member %q: %w", key, err)
			}
			if strings.EqualFold(key, "kind") {
				s.kind = str
			} else {
				s.apiVersion = str
			}
		default:
			if err := s.value(c, io.Discard, -1); err != nil {
				return fmt.Errorf("member %q: %w", key, err)
			}
		}
	}
}

// trailer checks that nothing but white space follows the EventList.
func (s *itemStream) trailer() error {
	for {
		c, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s.off++
		if !jsonscan.IsSpace(c) {
			return s.errorf("data after the EventList")
		}
	}
}

func (s *itemStream) literal(rest string) error {
	for i := 0; i < len(rest); i++ {
		c, err := s.readByte()
		if err != nil {
			return err
		}
		if c != rest[i] {
			return s.errorf("want a value")
		}
	}
	return nil
}

// next appends the next item to dst. It returns io.EOF after the last item
// (with the envelope read to its end), errItemTooLarge for an item longer
// than maxItem that is not an object (skipped: dst is as it was, and the
// stream goes on; an event, an object, is kept whatever its length: see
// event), and any other error for a body that is not an EventList.
func (s *itemStream) next(dst *bytes.Buffer) error {
	for s.state == inItems {
		c, end, err := s.element(s.first, "items")
		if err != nil {
			return err
		}
		if end {
			// The items member was read: what follows it needs a comma
			// even when the array was empty.
			s.state, s.first = inEnvelope, false
			if err := s.members(); err != nil {
				return err
			}
			continue
		}
		s.first = false
		mark := dst.Len()
		if c == '{' && s.maxItem >= 0 {
			var (
				cut    int
				marked bool
			)
			cut, marked, err = s.event(dst, s.maxItem)
			s.cut += cut
			if marked {
				s.truncated++
			}
		} else {
			err = s.value(c, dst, s.maxItem)
		}
		if errors.Is(err, errItemTooLarge) {
			dst.Truncate(mark)
		}
		return err
	}
	if s.state == atEnd {
		return io.EOF
	}
	return s.errorf("not in the items")
}

// member reads up to the next member of an object (first: none was read),
// its name written to w, quoted, and its colon read: it returns the first
// byte of its value, or end at the object's closing brace. where names the
// object in errors.
func (s *itemStream) member(first bool, w io.ByteWriter, where string) (c byte, end bool, err error) {
	if c, err = s.space(); err != nil || c == '}' {
		return c, err == nil, err
	}
	if !first {
		if c != ',' {
			return 0, false, s.errorf("%s: want , or }", where)
		}
		if c, err = s.space(); err != nil {
			return 0, false, err
		}
	}
	if c != '"' {
		return 0, false, s.errorf("%s: want a member name", where)
	}
	c, err = s.memberName(w)
	return c, false, err
}

// element reads up to the next element of an array (first: none was
// read): it returns its first byte, or end at the array's closing bracket.
func (s *itemStream) element(first bool, where string) (c byte, end bool, err error) {
	if c, err = s.space(); err != nil || c == ']' {
		return c, err == nil, err
	}
	if !first {
		if c != ',' {
			return 0, false, s.errorf("%s: want , or ]", where)
		}
		c, err = s.space()
	}
	return c, false, nil
}

// value copies one JSON value that starts with c to w (io.Discard to skip
// it): a string, an object or array however deep, or a literal or number,
// its extent as jsonscan.Extent finds it. Past max bytes (max >= 0) it
// stops copying, skips the rest of the value and returns errItemTooLarge.
func (s *itemStream) value(c byte, w io.Writer, max int64) error {
	var e jsonscan.Extent
	if e.Step(c)&jsonscan.Bad != 0 {
		return s.errorf("want a value")
	}
	lw := &limitWriter{w: w, max: max}
	lw.WriteByte(c)
	if err := s.feed(&e, lw); err != nil {
		return err
	}
	if lw.over {
		return errItemTooLarge
	}
	return lw.err
}

// feed reads the rest of the value e follows, a buffer at a time, and
// writes it to w (nil: drops it).
func (s *itemStream) feed(e *jsonscan.Extent, w *limitWriter) error {
	for {
		if _, err := s.r.Peek(1); err != nil {
			if errors.Is(err, io.EOF) {
				if e.End() == nil {
					return nil // a number or literal ends with the body
				}
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		b, _ := s.r.Peek(s.r.Buffered())
		n, done, err := e.Feed(b)
		if err != nil {
			return s.errorf("want a value")
		}
		if w != nil {
			w.Write(b[:n])
		}
		s.r.Discard(n)
		s.off += int64(n)
		if done {
			return nil
		}
	}
}

// copyString copies the rest of a string whose opening quote was read,
// closing quote included; past max bytes (max >= 0) it fails.
func (s *itemStream) copyString(w io.ByteWriter, max int) error {
	var e jsonscan.Extent
	e.Step('"')
	for n := 1; ; n++ {
		c, err := s.readByte()
		if err != nil {
			return err
		}
		if max >= 0 && n > max {
			return s.errorf("string longer than %d bytes", max)
		}
		if err := w.WriteByte(c); err != nil {
			return err
		}
		if e.Step(c)&jsonscan.Close != 0 {
			return nil
		}
	}
}

// limitWriter writes to w until max bytes were written (max < 0: no
// limit), then drops the rest and says so.
type limitWriter struct {
	w    io.Writer
	max  int64
	n    int64
	over bool
	err  error
	one  [1]byte
}

// Write writes what of p is under the limit.
func (l *limitWriter) Write(p []byte) {
	if l.over || l.err != nil {
		return
	}
	if l.max >= 0 && l.n+int64(len(p)) > l.max {
		p, l.over = p[:l.max-l.n], true
	}
	l.n += int64(len(p))
	_, l.err = l.w.Write(p)
}

func (l *limitWriter) WriteByte(c byte) error {
	l.one[0] = c
	l.Write(l.one[:])
	return nil
}
