package auditsink

import (
	"bytes"
	"errors"
	"io"
)

// A kube-apiserver writes no event near MaxEventBytes for one object (it
// takes requests of a few MiB), but a deletecollection answers the List of
// every object it deleted: the namespace controller's, in a namespace of
// large Secrets, can be far longer. Skipping such an event would lose who
// deleted what, so the stream keeps it, cut: its List's items in full up to
// half of MaxEventBytes, the others as their metadata only
// (PartialObjectMetadata items, which the model records as deletions
// without a state: their last state is the one recorded before).

// metadataOnlyItem opens an item cut to its metadata.
const metadataOnlyItem = `{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":`

// deleteCollectionAhead tells whether the event whose opening brace was
// just read may be a deletecollection: the kube-apiserver writes the verb
// before the objects. Other events are
// copied as they are (value), as before: event parses more strictly, and
// a malformed event must cost only itself, at the decoder.
func (s *itemStream) deleteCollectionAhead() bool {
	// The first verb ahead is this event's: the kube-apiserver writes it
	// within its first few hundred bytes (after level, auditID, stage and
	// requestURI). 4 KiB rarely makes bufio read ahead.
	b, _ := s.r.Peek(min(verbWindow, s.r.Size()))
	i := bytes.Index(b, []byte(`"verb":"`))
	return i >= 0 && bytes.HasPrefix(b[i+len(`"verb":"`):], []byte(`deletecollection"`))
}

// verbWindow is how far ahead deleteCollectionAhead looks for the verb.
const verbWindow = 4 << 10

// event copies one event, a JSON object whose opening brace was read, to
// dst. An event longer than limit is skipped whole (errItemTooLarge, dst as
// it was), unless it is a deletecollection whose List makes it long: then
// the List is cut as said above, and cut counts the items kept as metadata.
func (s *itemStream) event(dst *bytes.Buffer, limit int64) (cut int, err error) {
	start := dst.Len()
	used := func() int64 { return int64(dst.Len() - start) }
	dst.WriteByte('{')
	var (
		first      = true
		tooLarge   bool // the rest is read and dropped
		collection bool // the event's verb is deletecollection
	)
	for {
		c, err := s.space()
		if err != nil {
			return 0, err
		}
		if c == '}' {
			break
		}
		if !first {
			if c != ',' {
				return 0, s.errorf("event: want , or }")
			}
			if c, err = s.space(); err != nil {
				return 0, err
			}
		}
		if c != '"' {
			return 0, s.errorf("event: want a member name")
		}
		if tooLarge {
			if c, err = s.memberName(discardBytes{}); err != nil {
				return 0, err
			}
			if err := s.value(c, io.Discard, -1); err != nil {
				return 0, err
			}
			continue
		}
		if !first {
			dst.WriteByte(',')
		}
		first = false
		nameAt := dst.Len()
		lw := &limitWriter{w: dst, max: max(0, limit-used())}
		if c, err = s.memberName(lw); err != nil {
			return 0, err
		}
		name := string(dst.Bytes()[nameAt:])
		dst.WriteByte(':')
		valueAt := dst.Len()
		switch {
		case lw.over:
			err = s.value(c, io.Discard, -1)
			if err == nil {
				err = errItemTooLarge
			}
		case name == `"responseObject"` && collection && c == '{':
			var n int
			n, err = s.list(dst, start, limit)
			cut += n
		default:
			err = s.value(c, dst, max(0, limit-used()))
			if err == nil && name == `"verb"` {
				collection = string(dst.Bytes()[valueAt:]) == `"deletecollection"`
			}
		}
		if errors.Is(err, errItemTooLarge) {
			tooLarge = true
			continue
		}
		if err != nil {
			return 0, err
		}
	}
	if tooLarge || used() >= limit {
		dst.Truncate(start)
		return 0, errItemTooLarge
	}
	dst.WriteByte('}')
	return cut, nil
}

// list copies the List (its opening brace read) a deletecollection
// answered, within an event that began at start in dst.
func (s *itemStream) list(dst *bytes.Buffer, start int, limit int64) (cut int, err error) {
	used := func() int64 { return int64(dst.Len() - start) }
	dst.WriteByte('{')
	for first := true; ; first = false {
		c, err := s.space()
		if err != nil {
			return cut, err
		}
		if c == '}' {
			dst.WriteByte('}')
			return cut, nil
		}
		if !first {
			if c != ',' {
				return cut, s.errorf("list: want , or }")
			}
			if c, err = s.space(); err != nil {
				return cut, err
			}
			dst.WriteByte(',')
		}
		if c != '"' {
			return cut, s.errorf("list: want a member name")
		}
		nameAt := dst.Len()
		lw := &limitWriter{w: dst, max: max(0, limit-used())}
		if c, err = s.memberName(lw); err != nil {
			return cut, err
		}
		if lw.over {
			if err := s.value(c, io.Discard, -1); err != nil {
				return cut, err
			}
			return cut, s.tooLarge(1)
		}
		name := string(dst.Bytes()[nameAt:])
		dst.WriteByte(':')
		if name == `"items"` && c == '[' {
			n, err := s.items(dst, start, limit)
			cut += n
			if errors.Is(err, errItemTooLarge) {
				return cut, s.tooLarge(1)
			}
			if err != nil {
				return cut, err
			}
			continue
		}
		if err := s.value(c, dst, max(0, limit-used())); err != nil {
			if errors.Is(err, errItemTooLarge) {
				return cut, s.tooLarge(1)
			}
			return cut, err
		}
	}
}

// items copies the items array (its opening bracket read) of a List: in
// full while the event stays under half of limit, then as their metadata.
func (s *itemStream) items(dst *bytes.Buffer, start int, limit int64) (cut int, err error) {
	used := func() int64 { return int64(dst.Len() - start) }
	dst.WriteByte('[')
	for first := true; ; first = false {
		c, err := s.space()
		if err != nil {
			return cut, err
		}
		if c == ']' {
			dst.WriteByte(']')
			return cut, nil
		}
		if !first {
			if c != ',' {
				return cut, s.errorf("items: want , or ]")
			}
			if c, err = s.space(); err != nil {
				return cut, err
			}
			dst.WriteByte(',')
		}
		if c != '{' {
			err = s.value(c, dst, max(0, limit-used()))
		} else {
			var wasCut bool
			wasCut, err = s.item(dst, start, limit, cut > 0)
			if wasCut {
				cut++
			}
		}
		if errors.Is(err, errItemTooLarge) {
			return cut, s.tooLarge(1)
		}
		if err != nil {
			return cut, err
		}
	}
}

// item copies one item (its opening brace read): whole if the event stays
// under half of limit and cutting is false, else its metadata only.
func (s *itemStream) item(dst *bytes.Buffer, start int, limit int64, cutting bool) (wasCut bool, err error) {
	used := func() int64 { return int64(dst.Len() - start) }
	full := limit / 2
	at := dst.Len()
	dst.WriteByte('{')
	var meta []byte // the metadata's JSON, once the item is cut
	metaAt, metaEnd := -1, -1
	for first := true; ; first = false {
		c, err := s.space()
		if err != nil {
			return false, err
		}
		if c == '}' {
			break
		}
		if !first {
			if c != ',' {
				return false, s.errorf("item: want , or }")
			}
			if c, err = s.space(); err != nil {
				return false, err
			}
		}
		if c != '"' {
			return false, s.errorf("item: want a member name")
		}
		if cutting {
			var name bytes.Buffer
			nw := &limitWriter{w: &name, max: 16} // only "metadata" matters
			if c, err = s.memberName(nw); err != nil {
				return false, err
			}
			if nw.over || name.String() != `"metadata"` {
				if err := s.value(c, io.Discard, -1); err != nil {
					return false, err
				}
				continue
			}
			var b bytes.Buffer
			if err := s.value(c, &b, max(0, limit-used()-int64(len(metadataOnlyItem))-1)); err != nil {
				if errors.Is(err, errItemTooLarge) {
					return false, s.tooLarge(1) // metadata that long: the event is skipped
				}
				return false, err
			}
			meta = b.Bytes()
			continue
		}
		mark := dst.Len()
		if !first {
			dst.WriteByte(',')
		}
		nameAt := dst.Len()
		lw := &limitWriter{w: dst, max: max(0, full-used())}
		if c, err = s.memberName(lw); err != nil {
			return false, err
		}
		isMeta := !lw.over && string(dst.Bytes()[nameAt:]) == `"metadata"`
		if lw.over {
			if err = s.value(c, io.Discard, -1); err == nil {
				err = errItemTooLarge
			}
		} else {
			dst.WriteByte(':')
			valueAt := dst.Len()
			err = s.value(c, dst, max(0, full-used()))
			if err == nil && isMeta {
				metaAt, metaEnd = valueAt, dst.Len()
			}
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, errItemTooLarge) {
			return false, err
		}
		if isMeta {
			return false, s.tooLarge(1) // metadata alone that long: the event is skipped
		}
		// Past half of limit: this item and the next are kept as metadata.
		cutting = true
		if metaAt >= 0 {
			meta = bytes.Clone(dst.Bytes()[metaAt:metaEnd])
		}
		dst.Truncate(mark)
	}
	if !cutting {
		dst.WriteByte('}')
		return false, nil
	}
	dst.Truncate(at)
	dst.WriteString(metadataOnlyItem)
	if meta == nil {
		dst.WriteString("{}")
	} else {
		dst.Write(meta)
	}
	dst.WriteByte('}')
	if used() >= limit {
		return true, errItemTooLarge
	}
	return true, nil
}

// memberName reads a member name whose opening quote was read, and the
// colon after it, writing the quoted name to w; it returns the first byte
// of the member's value.
func (s *itemStream) memberName(w io.ByteWriter) (byte, error) {
	if err := w.WriteByte('"'); err != nil {
		return 0, err
	}
	if err := s.copyString(w, -1); err != nil {
		return 0, err
	}
	c, err := s.space()
	if err != nil {
		return 0, err
	}
	if c != ':' {
		return 0, s.errorf("want :")
	}
	return s.space()
}

// tooLarge reads and drops the rest of depth open objects or arrays (a
// value of theirs was read whole), and returns errItemTooLarge, or the
// error that kept it from reading them.
func (s *itemStream) tooLarge(depth int) error {
	for depth > 0 {
		c, err := s.readByte()
		if err != nil {
			return err
		}
		switch c {
		case '"':
			if err := s.copyString(discardBytes{}, -1); err != nil {
				return err
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return errItemTooLarge
}

// discardBytes is io.Discard as an io.ByteWriter.
type discardBytes struct{}

func (discardBytes) WriteByte(byte) error { return nil }
