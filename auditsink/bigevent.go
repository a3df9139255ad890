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
// deleted what, so the stream keeps it, cut when it must be: its List's
// items in full up to half of MaxEventBytes, the others as their metadata
// only (PartialObjectMetadata items, which the model records as deletions
// without a state: their last state is the one recorded before), and the
// first half too if the rest's metadata needs its room. One that fits is
// kept whole. Cutting rewrites the items copied whole, holding at most an
// event's length more for a moment.

// metadataOnlyItem opens an item cut to its metadata.
const metadataOnlyItem = `{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":`

// deleteCollectionAhead tells whether the event whose opening brace was
// just read may be a deletecollection: the kube-apiserver writes the verb
// before the objects. Other events are copied as they are (value): event
// parses more strictly, and a malformed event must cost only itself, at
// the decoder.
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

// items copies the items array (its opening bracket read) of a List, in
// full while the event fits under limit. When an item would go over it,
// that item and the next are kept as their metadata, and so are the items
// already copied past half of limit (compact): the first half keeps its
// states, the rest of the List its deletions.
func (s *itemStream) items(dst *bytes.Buffer, start int, limit int64) (cut int, err error) {
	used := func() int64 { return int64(dst.Len() - start) }
	// What follows the items in the event (the List's end, the
	// timestamps, the annotations) needs room too.
	full := limit - max(limit/16, 64)
	var early, late []fullItem // items copied whole before and past half of limit
	cutting := false
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
			if errors.Is(err, errItemTooLarge) {
				return cut, s.tooLarge(1)
			}
			if err != nil {
				return cut, err
			}
			continue
		}
		at := dst.Len()
		it, err := s.item(dst, start, full, cutting)
		if errors.Is(err, errItemTooLarge) {
			return cut, s.tooLarge(1)
		}
		if err != nil {
			return cut, err
		}
		if !it.cut {
			w := fullItem{start: at, end: dst.Len(), metaStart: it.metaStart, metaEnd: it.metaEnd}
			if int64(at-start) >= limit/2 {
				late = append(late, w)
			} else {
				early = append(early, w)
			}
			continue
		}
		if !cutting {
			cutting = true
			cut += compact(dst, late)
			late = nil
		}
		cut++
		writeMetadataOnly(dst, it.meta)
		if used() >= full && len(early) > 0 {
			// Still no room: the first half goes to metadata too.
			cut += compact(dst, early)
			early = nil
		}
		if used() >= full {
			return cut, s.tooLarge(1)
		}
	}
}

// fullItem is where an item copied whole lies in the buffer, and its
// metadata's value (metaStart < 0: none).
type fullItem struct {
	start, end, metaStart, metaEnd int
}

// compact rewrites the items of whole (in order, the last ones of dst but
// for what follows them) as their metadata only, and returns how many.
func compact(dst *bytes.Buffer, whole []fullItem) int {
	if len(whole) == 0 {
		return 0
	}
	b := dst.Bytes()
	var tail bytes.Buffer
	pos := whole[0].start
	for _, w := range whole {
		tail.Write(b[pos:w.start]) // the separators
		var meta []byte
		if w.metaStart >= 0 {
			meta = b[w.metaStart:w.metaEnd]
		}
		writeMetadataOnly(&tail, meta)
		pos = w.end
	}
	tail.Write(b[pos:])
	dst.Truncate(whole[0].start)
	dst.Write(tail.Bytes())
	return len(whole)
}

// writeMetadataOnly writes an item of the given metadata (nil: none).
func writeMetadataOnly(dst *bytes.Buffer, meta []byte) {
	dst.WriteString(metadataOnlyItem)
	if meta == nil {
		dst.WriteString("{}")
	} else {
		dst.Write(meta)
	}
	dst.WriteByte('}')
}

// copiedItem is what item copied: an item whole (where its metadata's
// value lies in the buffer), or, cut, the metadata to keep of it.
type copiedItem struct {
	cut                bool
	meta               []byte // cut: the metadata's JSON (nil: none)
	metaStart, metaEnd int    // whole: the metadata's value in the buffer, or -1
}

// item copies one item (its opening brace read): whole if the event stays
// under limit and cutting is false; else it reads the item and returns
// its metadata, leaving dst as it was, for the caller to write.
func (s *itemStream) item(dst *bytes.Buffer, start int, limit int64, cutting bool) (copiedItem, error) {
	used := func() int64 { return int64(dst.Len() - start) }
	at := dst.Len()
	it := copiedItem{metaStart: -1, metaEnd: -1}
	if !cutting {
		dst.WriteByte('{')
	}
	wrote := false // a member was written (a comma goes before the next)
	for first := true; ; first = false {
		c, err := s.space()
		if err != nil {
			return it, err
		}
		if c == '}' {
			break
		}
		if !first {
			if c != ',' {
				return it, s.errorf("item: want , or }")
			}
			if c, err = s.space(); err != nil {
				return it, err
			}
		}
		if c != '"' {
			return it, s.errorf("item: want a member name")
		}
		var name bytes.Buffer
		nw := &limitWriter{w: &name, max: 1 << 10}
		if c, err = s.memberName(nw); err != nil {
			return it, err
		}
		if !nw.over && name.String() == `"metadata"` {
			// Read aside first: kept whatever becomes of the item.
			var b bytes.Buffer
			if err := s.value(c, &b, max(0, limit-int64(len(metadataOnlyItem))-1)); err != nil {
				if errors.Is(err, errItemTooLarge) {
					return it, s.tooLarge(1) // metadata that long: the event is skipped
				}
				return it, err
			}
			if !cutting && used()+int64(name.Len()+b.Len()+2) < limit {
				if wrote {
					dst.WriteByte(',')
				}
				dst.Write(name.Bytes())
				dst.WriteByte(':')
				it.metaStart = dst.Len()
				dst.Write(b.Bytes())
				it.metaEnd, wrote = dst.Len(), true
				continue
			}
			it.meta, cutting = b.Bytes(), true
			continue
		}
		if cutting {
			if err := s.value(c, io.Discard, -1); err != nil {
				return it, err
			}
			continue
		}
		mark := dst.Len()
		if wrote {
			dst.WriteByte(',')
		}
		if nw.over || used()+int64(name.Len()+1) >= limit {
			err = s.value(c, io.Discard, -1)
			if err == nil {
				err = errItemTooLarge
			}
		} else {
			dst.Write(name.Bytes())
			dst.WriteByte(':')
			err = s.value(c, dst, max(0, limit-used()))
		}
		if err == nil {
			wrote = true
			continue
		}
		if !errors.Is(err, errItemTooLarge) {
			return it, err
		}
		// Over limit: this item is kept as its metadata, read on.
		cutting = true
		if it.metaStart >= 0 {
			it.meta = bytes.Clone(dst.Bytes()[it.metaStart:it.metaEnd])
		}
		dst.Truncate(mark)
	}
	if cutting {
		it.cut, it.metaStart, it.metaEnd = true, -1, -1
		dst.Truncate(at)
		return it, nil
	}
	dst.WriteByte('}')
	return it, nil
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
