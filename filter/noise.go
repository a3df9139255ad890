package filter

// Noise detection: does a write change anything but status-like fields?
//
// The answer must never be "yes, only noise" for a write that changed
// something else, or a crafted request could hide a real change. So the
// scanner below is an allow-list over strictly valid JSON: anything it does
// not fully understand (YAML, escaped keys, unknown operations, deep nesting,
// server-side apply bodies) counts as a real change.

// statusKey is the one top-level key of a merge or strategic merge patch
// that never makes the patch a real change; "metadata" may appear too, with
// only the keys statusOnlyMetadata allows. "apiVersion" and "kind" are
// deliberately not allowed: they mark a server-side apply body, and an apply
// that omits fields its manager owned removes those fields.
const statusKey = "status"

// statusOnlyMetadata reports whether a metadata key in a merge patch is
// server-managed, or only identifies the object or sets a precondition.
// generation is not among them: a client cannot set it, and a change of it
// means the spec changed.
func statusOnlyMetadata(key []byte) bool {
	switch string(key) {
	case "managedFields", "resourceVersion", "creationTimestamp", "selfLink",
		"uid", "name", "namespace":
		return true
	}
	return false
}

// statusOnlyPointerMetadata is the same for the second segment of a JSON
// patch path under /metadata. Identity fields are absent: a JSON patch that
// replaces them is an attempted change, not a precondition.
func statusOnlyPointerMetadata(seg []byte) bool {
	switch string(seg) {
	case "managedFields", "resourceVersion", "creationTimestamp", "selfLink":
		return true
	}
	return false
}

// maxNoiseDepth bounds the nesting the scanner follows; deeper bodies count
// as real changes.
const maxNoiseDepth = 200

// patchIsStatusOnly reports whether a PATCH body (the raw requestObject of a
// patch audit event: a JSON merge patch, a strategic merge patch or a JSON
// patch array) touches only status, managed fields, the resource version and
// similar server-managed fields. An empty patch ({} or []) is a no-op and
// counts as status-only.
func patchIsStatusOnly(body []byte) bool {
	s := scanner{b: body}
	s.ws()
	var ok bool
	switch s.peek() {
	case '{':
		ok = s.mergePatchIsStatusOnly()
	case '[':
		ok = s.jsonPatchIsStatusOnly()
	default:
		return false
	}
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func (s *scanner) mergePatchIsStatusOnly() bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case statusKey:
			return s.value(1)
		case "metadata":
			if s.peek() != '{' {
				return false
			}
			return s.object(func(key []byte) bool {
				return statusOnlyMetadata(key) && s.value(2)
			})
		}
		return false
	})
}

func (s *scanner) jsonPatchIsStatusOnly() bool {
	s.i++ // '['
	s.ws()
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if s.peek() != '{' || !s.jsonPatchOpIsStatusOnly() {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) jsonPatchOpIsStatusOnly() bool {
	var op, path, from []byte
	var haveOp, havePath, haveFrom bool
	ok := s.object(func(key []byte) bool {
		var dst *[]byte
		var seen *bool
		switch string(key) {
		case "op":
			dst, seen = &op, &haveOp
		case "path":
			dst, seen = &path, &havePath
		case "from":
			dst, seen = &from, &haveFrom
		default:
			return s.value(2)
		}
		if *seen || s.peek() != '"' {
			return false
		}
		v, escaped, ok := s.str()
		if !ok || escaped {
			return false
		}
		*dst, *seen = v, true
		return true
	})
	if !ok || !haveOp {
		return false
	}
	switch string(op) {
	case "test":
		return true
	case "add", "remove", "replace", "copy":
		return havePath && pointerIsStatusOnly(path)
	case "move":
		return havePath && haveFrom && pointerIsStatusOnly(path) && pointerIsStatusOnly(from)
	}
	return false
}

// pointerIsStatusOnly reports whether a JSON pointer (RFC 6901) addresses
// status or a server-managed metadata field, or something inside them.
// Segments are compared unescaped-as-is: a "~0" or "~1" in them never
// matches, which errs on the side of a real change.
func pointerIsStatusOnly(p []byte) bool {
	first, rest, ok := nextSegment(p)
	if !ok {
		return false
	}
	switch string(first) {
	case statusKey:
		return true
	case "metadata":
		second, _, ok := nextSegment(rest)
		return ok && statusOnlyPointerMetadata(second)
	}
	return false
}

// nextSegment splits "/seg/rest" into "seg" and "/rest".
func nextSegment(p []byte) (seg, rest []byte, ok bool) {
	if len(p) == 0 || p[0] != '/' {
		return nil, nil, false
	}
	p = p[1:]
	for i, c := range p {
		if c == '/' {
			return p[:i], p[i:], true
		}
	}
	return p, nil, true
}

// scanner is a minimal, allocation-free, strictly validating JSON reader.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads an object whose '{' is at s.i. For each member it reads the
// key and the ':' and calls member with the value at s.i; member must consume
// the value and return false to reject the object. Keys that contain escapes
// are rejected, since they could spell an allowed key differently.
func (s *scanner) object(member func(key []byte) bool) bool {
	s.i++ // '{'
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, escaped, ok := s.str()
		if !ok || escaped {
			return false
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// value skips one JSON value at s.i, validating it.
func (s *scanner) value(depth int) bool {
	if depth > maxNoiseDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) bool { return s.value(depth + 1) })
	case c == '[':
		s.i++
		s.ws()
		if s.peek() == ']' {
			s.i++
			return true
		}
		for {
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
				s.ws()
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *scanner) literal(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// str reads a string whose '"' is at s.i and returns its raw contents and
// whether they contain escapes.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	s.i++ // '"'
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return nil, false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				s.i += 5
			default:
				return nil, false, false
			}
		default:
			s.i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
