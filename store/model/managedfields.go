package model

import (
	"bytes"
	"encoding/json"
)

// managedFieldsKey is what a state that holds managedFields contains.
var managedFieldsKey = []byte(`"managedFields"`)

// withoutManagedFields returns an object's JSON text without its
// metadata.managedFields, every other byte as it was; raw itself when it
// has none, or is not an object whose metadata is an object.
//
// managedFields are the apiserver's field-ownership bookkeeping: which
// manager (a client's name) last set which field, and when. They are
// often half an object's size, the audit policy the sink ships has the
// apiserver leave them out of events (omitManagedFields), the record's
// actors come from the events themselves, and diffs, manifests and
// restores drop them. So the record never keeps them: the same record
// whatever the policy, and a smaller one.
//
// It scans the text once, without decoding it (the write path's cost is
// a pass over the bytes): the spans of every managedFields member of
// every top-level metadata object are cut, in raw itself, which it
// returns shortened: the caller gives up raw's bytes. A text that is not
// a JSON object is returned as it is (it is validated elsewhere).
func withoutManagedFields(raw []byte) []byte {
	if !bytes.Contains(raw, managedFieldsKey) {
		return raw
	}
	s := scanner{b: raw}
	var cuts [][2]int
	ok := s.object(func(key []byte, _, valStart int) bool {
		if !keyIs(key, "metadata") || s.peek() != '{' {
			return s.value()
		}
		kept := 0 // members left before the current one
		prevEnd := -1
		return s.object(func(key []byte, memberStart, _ int) bool {
			if !s.value() {
				return false
			}
			if !keyIs(key, "managedFields") {
				kept++
				prevEnd = s.i
				return true
			}
			// Cut from the end of the previous member (with the comma
			// before this one) or, when none is left before it, from the
			// brace to the comma after it.
			start, end := memberStart, s.i
			if kept > 0 {
				start = prevEnd
			} else if j := skipSpace(raw, end); j < len(raw) && raw[j] == ',' {
				end = j + 1
			}
			if n := len(cuts); n > 0 && start < cuts[n-1][1] {
				start = cuts[n-1][1]
			}
			cuts = append(cuts, [2]int{start, end})
			prevEnd = end
			return true
		})
	})
	if !ok || len(cuts) == 0 {
		return raw
	}
	// In place: the bytes after each cut move left. The state is a slice
	// of the request's body, which nothing reads after its conversion; a
	// copy per state would hold a second copy of every kept object until
	// the batch is written (measured: peak RSS +20%).
	w := cuts[0][0]
	for k, c := range cuts {
		next := len(raw)
		if k+1 < len(cuts) {
			next = cuts[k+1][0]
		}
		w += copy(raw[w:], raw[c[1]:next])
	}
	return raw[:w]
}

// keyIs compares a key's raw text (without quotes) to name, decoding it
// only when it holds an escape.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key) == name
	}
	var k string
	return json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) == nil && k == name
}

// scanner walks JSON text without decoding it.
type scanner struct {
	b []byte
	i int
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func (s *scanner) peek() byte {
	s.i = skipSpace(s.b, s.i)
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object scans an object, calling member for each key with the key's raw
// text, where the member starts (before its key) and where its value
// starts; member must scan the value. The member's start for the first
// member is just after the brace; for the others, just after the comma.
func (s *scanner) object(member func(key []byte, memberStart, valStart int) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	memberStart := s.i
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		ks := s.i + 1
		if !s.str() {
			return false
		}
		key := s.b[ks : s.i-1]
		if s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key, memberStart, skipSpace(s.b, s.i)) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
			memberStart = s.i
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str scans a string, s.i at its opening quote.
func (s *scanner) str() bool {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return true
		}
	}
	return false
}

// value scans any value.
func (s *scanner) value() bool {
	switch c := s.peek(); c {
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for j := s.i; j < len(s.b); j++ {
			switch s.b[j] {
			case '"':
				s.i = j
				if !s.str() {
					return false
				}
				j = s.i - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i = j + 1
					return true
				}
			}
		}
		return false
	case 0:
		return false
	default: // a number, true, false, null
		j := s.i
	scalar:
		for ; j < len(s.b); j++ {
			switch s.b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				break scalar
			}
		}
		if j == s.i {
			return false
		}
		s.i = j
		return true
	}
}
