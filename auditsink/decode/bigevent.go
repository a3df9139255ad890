package decode

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/options-record/options-record/store/model/jsonscan"
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
// kept whole. Cutting rewrites the items copied whole into a copy, while
// the cut item's metadata is held aside: for a moment the event holds less
// than three times limit (itemStream.held, in tests), and it never grows
// past limit, even before its metadata is written.

// metadataOnlyItem opens an item cut to its metadata.
const metadataOnlyItem = `{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":`

// truncatedAnnotation marks an event kept without some of what the
// apiserver wrote, as the kube-apiserver's own truncating backend marks
// the events whose bodies it dropped (k8s.io/apiserver's
// plugin/pkg/audit/truncate).
const (
	truncatedAnnotation = `"audit.k8s.io/truncated":"true"`
	// markRoom is what the mark may add to an event.
	markRoom = int64(len(`"annotations":{` + truncatedAnnotation + `},`))
)

// Every envelope is kept, whatever its length: who did what, and when,
// must survive an event too long to keep whole. A client chooses the
// Audit-ID, the query string and the user agent, which the apiserver
// writes before the verb and the objects: a window of bytes would let it
// pad them until a mutation is skipped. So event walks the event's
// members in order, holding at most limit bytes of it:
//   - the bodies (requestObject, responseObject) are copied while the event
//     fits; one that does not is dropped (a deletecollection's List is cut
//     instead, see above), and dropped first when a later member needs room;
//   - any other member's strings longer than maxMetaString are shortened
//     to a prefix and the digest of all of it (as the store shortens long
//     names, so distinct values stay distinct); a member longer than an
//     eighth of limit, or for which there is no room, is dropped;
//   - an event that lost anything is marked audit.k8s.io/truncated, in its
//     annotations.
// An event that fits, with no string that long, is copied as it is.

// maxMetaString is the longest string kept in an event's members other
// than its bodies: above any Audit-ID, URI or user agent a client sends in
// earnest, far below what it may send.
const maxMetaString = 64 << 10

// metaStringCap is maxMetaString, smaller for a small limit.
func metaStringCap(limit int64) int { return int(min(maxMetaString, max(limit/32, 96))) }

// span is where a member lies in the buffer, its trailing comma included.
type span = jsonscan.Span

// event copies one event, a JSON object whose opening brace was read, to
// dst, under limit whatever its length (see above). It returns how many of
// a deletecollection's List items it kept as their metadata only, and
// whether it left anything out (the event is then marked).
func (s *itemStream) event(dst *bytes.Buffer, limit int64) (cut int, marked bool, err error) {
	start := dst.Len()
	room := func() int64 { return limit - markRoom - 1 - int64(dst.Len()-start) }
	strCap, memberCap := metaStringCap(limit), max(limit/8, 256)
	dst.WriteByte('{')
	var (
		collection bool   // the event's verb is deletecollection
		bodies     []span // bodies copied, which a later member may evict
		list       = -1   // bodies' index of a deletecollection's List
		ann        = span{Start: -1, End: -1}
		scratch    bytes.Buffer
		name       bytes.Buffer
	)
	// evict drops the bodies copied, a deletecollection's List too if all
	// is true; what follows them moves up.
	evict := func(all bool) {
		var keep, drop []span
		for i, b := range bodies {
			if i == list && !all {
				keep = append(keep, b)
			} else {
				drop = append(drop, b)
			}
		}
		if len(drop) == 0 {
			return
		}
		removeSpans(dst, drop)
		moved := func(pos int) int {
			for _, d := range drop {
				if d.Start < pos {
					pos -= d.End - d.Start
				}
			}
			return pos
		}
		if ann.Start >= 0 {
			ann = span{Start: moved(ann.Start), End: moved(ann.End)}
		}
		bodies, list = nil, -1
		if len(keep) == 1 {
			bodies, list = []span{{Start: moved(keep[0].Start), End: moved(keep[0].End)}}, 0
		}
		marked = true
	}
	for first := true; ; first = false {
		name.Reset()
		nw := &limitWriter{w: &name, max: 256}
		c, end, err := s.member(first, nw, "event")
		if err != nil {
			return 0, false, err
		}
		if end {
			break
		}
		if nw.over { // no member of an event's: dropped
			if err := s.value(c, io.Discard, -1); err != nil {
				return 0, false, err
			}
			marked = true
			continue
		}
		at := dst.Len()
		switch n := name.String(); n {
		case `"requestObject"`, `"responseObject"`:
			dst.Write(name.Bytes())
			dst.WriteByte(':')
			isList := n == `"responseObject"` && collection && c == '{'
			if isList {
				var k int
				k, err = s.list(dst, start, limit-markRoom)
				cut += k
				marked = marked || k > 0
			} else {
				err = s.value(c, dst, max(0, room()))
			}
			if errors.Is(err, errItemTooLarge) {
				dst.Truncate(at)
				marked = true
				continue
			}
			if err != nil {
				return 0, false, err
			}
			dst.WriteByte(',')
			if isList {
				list = len(bodies)
			}
			bodies = append(bodies, span{Start: at, End: dst.Len()})
		default:
			scratch.Reset()
			shortened, err := s.boundedValue(c, &scratch, strCap, int(memberCap))
			s.holding(dst.Len() - start + scratch.Len())
			if errors.Is(err, errItemTooLarge) {
				marked = true
				continue
			}
			if err != nil {
				return 0, false, err
			}
			marked = marked || shortened
			need := int64(name.Len() + 2 + scratch.Len())
			if need > room() {
				evict(essential[n])
			}
			if need > room() {
				marked = true
				continue
			}
			at = dst.Len() // after what evict dropped
			dst.Write(name.Bytes())
			dst.WriteByte(':')
			dst.Write(scratch.Bytes())
			dst.WriteByte(',')
			switch n {
			case `"verb"`:
				collection = scratch.String() == `"deletecollection"`
			case `"annotations"`:
				ann = span{Start: at, End: dst.Len()} // the last, as the decoder takes
			}
		}
	}
	if marked {
		// The mark goes into the annotations (markRoom keeps room for it).
		if ann.Start < 0 {
			dst.WriteString(`"annotations":{` + truncatedAnnotation + `},`)
		} else {
			b := dst.Bytes()
			value := markTruncated(b[ann.Start+len(`"annotations":`) : ann.End-1])
			rest := bytes.Clone(b[ann.End:])
			s.holding(dst.Len() - start + len(value) + len(rest))
			dst.Truncate(ann.Start)
			dst.WriteString(`"annotations":`)
			dst.Write(value)
			dst.WriteByte(',')
			dst.Write(rest)
		}
	}
	if b := dst.Bytes(); b[len(b)-1] == ',' {
		dst.Truncate(dst.Len() - 1)
	}
	dst.WriteByte('}')
	return cut, marked, nil
}

// essential are the members that say who did what, and when: a body is
// dropped, the List of a deletecollection too, before one of them is.
var essential = map[string]bool{
	`"auditID"`: true, `"stage"`: true, `"verb"`: true, `"user"`: true, `"impersonatedUser"`: true,
	`"objectRef"`: true, `"requestReceivedTimestamp"`: true, `"stageTimestamp"`: true, `"responseStatus"`: true,
}

// markTruncated returns annotations (a JSON value; nil: none) with the
// truncation mark, last so that it wins over a key of the same name.
func markTruncated(ann []byte) []byte {
	ann = bytes.TrimSpace(ann)
	if len(ann) < 2 || ann[0] != '{' {
		return []byte(`{` + truncatedAnnotation + `}`)
	}
	inner := bytes.TrimSpace(ann[1 : len(ann)-1])
	if len(inner) == 0 {
		return []byte(`{` + truncatedAnnotation + `}`)
	}
	out := make([]byte, 0, len(ann)+len(truncatedAnnotation)+1)
	out = append(out, ann[:len(ann)-1]...)
	out = append(out, ',')
	out = append(out, truncatedAnnotation...)
	return append(out, '}')
}

// removeSpans removes spans (in order, not overlapping) from dst.
func removeSpans(dst *bytes.Buffer, spans []span) {
	dst.Truncate(len(jsonscan.Cut(dst.Bytes(), spans)))
}

// boundedValue copies one JSON value that starts with c to w, its strings
// longer than maxStr shortened (see boundedString). A value longer than
// max is read to its end and dropped (errItemTooLarge, w as it was). It
// holds at most max + maxStr bytes whatever the value's length.
func (s *itemStream) boundedValue(c byte, w *bytes.Buffer, maxStr, max int) (shortened bool, err error) {
	start := w.Len()
	if c != '"' && c != '{' && c != '[' {
		if err := s.value(c, w, int64(max)); err != nil {
			w.Truncate(start)
			return false, err
		}
		return false, nil
	}
	var e jsonscan.Extent
	e.Step(c)
	w.WriteByte(c)
	return s.bounded(&e, w, start, maxStr, max)
}

// boundedString copies the rest of a string whose opening quote was read,
// closing quote included. One longer than max bytes is cut to a prefix
// that ends on a character boundary outside an escape, followed by
// "…sha256:" and 16 hex digits of the digest of its whole text as sent:
// distinct values stay distinct, and the reader sees it was shortened.
func (s *itemStream) boundedString(w *bytes.Buffer, max int) (shortened bool, err error) {
	var e jsonscan.Extent
	e.Step('"')
	return s.bounded(&e, w, w.Len(), max, -1)
}

// bounded copies the rest of the value e follows (its first byte read and
// written at start in w): its strings as boundedString does and, for an
// object or array, no more than max bytes (see boundedValue).
func (s *itemStream) bounded(e *jsonscan.Extent, w *bytes.Buffer, start, maxStr, max int) (shortened bool, err error) {
	container := !e.InString()
	str := shortener{w: w, max: maxStr}
	if !container {
		str.open()
	}
	for {
		if container && !e.InString() && w.Len()-start > max {
			w.Truncate(start)
			return false, s.skipRest(e)
		}
		c, err := s.readByte()
		if err != nil {
			return false, err
		}
		f := e.Step(c)
		switch {
		case f&jsonscan.Text != 0:
			str.text(c, f&jsonscan.Boundary != 0)
		case f&jsonscan.Close != 0:
			shortened = str.close() || shortened
		default:
			w.WriteByte(c)
			if f&jsonscan.Open != 0 {
				str.open()
			}
		}
		if f&jsonscan.Done != 0 {
			break
		}
	}
	if container && w.Len()-start > max {
		w.Truncate(start)
		return false, errItemTooLarge
	}
	return shortened, nil
}

// shortener copies a string's text to w, keeping at most max bytes of it
// (see boundedString).
type shortener struct {
	w         *bytes.Buffer
	max       int
	start     int       // where the text begins in w
	n         int       // bytes of the text read
	safe      int       // where a cut may be made
	h         hash.Hash // of the whole text, once it is known to be long
	shortened bool
	one       [1]byte
}

// cutSuffix is what a shortened string ends with.
const cutSuffix = len("…sha256:") + 16

// open starts a string, its opening quote written.
func (t *shortener) open() {
	t.start, t.n, t.safe, t.h, t.shortened = t.w.Len(), 0, t.w.Len(), nil, false
}

// text takes a byte of the string's text; boundary: a cut may be made
// before it.
func (t *shortener) text(c byte, boundary bool) {
	t.one[0] = c
	if t.h != nil {
		t.h.Write(t.one[:])
	}
	t.n++
	if t.shortened {
		return
	}
	if t.n > t.max {
		t.shortened = true
		t.h = sha256.New()
		t.h.Write(t.w.Bytes()[t.start:]) // what was copied of it
		t.h.Write(t.one[:])
		return
	}
	if boundary && t.n-1 <= t.max-cutSuffix {
		t.safe = t.w.Len()
	}
	t.w.WriteByte(c)
}

// close ends the string, writing its closing quote, and reports whether it
// was shortened.
func (t *shortener) close() bool {
	if t.shortened {
		t.w.Truncate(t.safe)
		fmt.Fprintf(t.w, "…sha256:%x", t.h.Sum(nil)[:8])
	}
	t.w.WriteByte('"')
	return t.shortened
}

// list copies the List (its opening brace read) a deletecollection
// answered, within an event that began at start in dst.
func (s *itemStream) list(dst *bytes.Buffer, start int, limit int64) (cut int, err error) {
	used := func() int64 { return int64(dst.Len() - start) }
	dst.WriteByte('{')
	for first := true; ; first = false {
		if !first {
			dst.WriteByte(',') // taken back at the end
		}
		nameAt := dst.Len()
		lw := &limitWriter{w: dst, max: max(0, limit-used())}
		c, end, err := s.member(first, lw, "list")
		if err != nil {
			return cut, err
		}
		if end {
			if !first {
				dst.Truncate(nameAt - 1)
			}
			dst.WriteByte('}')
			return cut, nil
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
		c, end, err := s.element(first, "items")
		if err != nil {
			return cut, err
		}
		if end {
			dst.WriteByte(']')
			return cut, nil
		}
		if !first {
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
			cut += s.compact(dst, start, late, len(it.meta))
			late = nil
		}
		cut++
		// The item's metadata is written only where it fits: the event
		// never grows past full, even for a moment.
		need := int64(len(metadataOnlyItem) + max(len(it.meta), 2) + 1)
		if used()+need >= full && len(early) > 0 {
			// Still no room: the first half goes to metadata too.
			cut += s.compact(dst, start, early, len(it.meta))
			early = nil
		}
		if used()+need >= full {
			return cut, s.tooLarge(1)
		}
		writeMetadataOnly(dst, it.meta)
		s.holding(int(used()) + len(it.meta))
	}
}

// fullItem is where an item copied whole lies in the buffer, and its
// metadata's value (metaStart < 0: none).
type fullItem struct {
	start, end, metaStart, metaEnd int
}

// compact rewrites the items of whole (in order, the last ones of dst but
// for what follows them) as their metadata only, and returns how many.
// The event began at start in dst; aside bytes are held beside it.
func (s *itemStream) compact(dst *bytes.Buffer, start int, whole []fullItem, aside int) int {
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
	s.holding(dst.Len() - start + tail.Len() + aside)
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
		var name bytes.Buffer
		nw := &limitWriter{w: &name, max: 1 << 10}
		c, end, err := s.member(first, nw, "item")
		if err != nil {
			return it, err
		}
		if end {
			break
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
			s.holding(int(used()) + b.Len())
			if !cutting && used()+int64(name.Len()+b.Len()+2) < limit {
				if wrote {
					dst.WriteByte(',')
				}
				dst.Write(name.Bytes())
				dst.WriteByte(':')
				it.metaStart = dst.Len()
				dst.Write(b.Bytes())
				it.metaEnd, wrote = dst.Len(), true
				s.holding(int(used()) + b.Len())
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
	e := jsonscan.Within(depth)
	return s.skipRest(&e)
}

// skipRest reads and drops the rest of the value e follows, and returns
// errItemTooLarge, or the error that kept it from reading it.
func (s *itemStream) skipRest(e *jsonscan.Extent) error {
	if err := s.feed(e, nil); err != nil {
		return err
	}
	return errItemTooLarge
}
