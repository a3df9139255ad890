package auditsink

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// splitEventList reads the envelope of an EventList — kind, apiVersion and
// the items, left undecoded — without decoding the items. encoding/json
// limits nesting to 10000 levels for a whole document, and an EventList puts
// an object three levels deeper than the apiserver saw it: decoding the body
// at once would let one deep object (which the apiserver accepted) fail the
// whole batch. Here each item is decoded on its own later, and a too deep
// one is skipped as malformed.
func splitEventList(body []byte) (eventList, error) {
	var l eventList
	s := &jsonScanner{b: body}
	s.space()
	if !s.eat('{') {
		return l, errors.New("not a JSON object")
	}
	for n := 0; ; n++ {
		s.space()
		if s.eat('}') {
			break
		}
		if n > 0 {
			if !s.eat(',') {
				return l, s.errorf("want , or }")
			}
			s.space()
		}
		start := s.i
		if err := s.skipString(); err != nil {
			return l, err
		}
		var key string
		if err := json.Unmarshal(body[start:s.i], &key); err != nil {
			return l, fmt.Errorf("member name: %w", err)
		}
		s.space()
		if !s.eat(':') {
			return l, s.errorf("want :")
		}
		s.space()
		if strings.EqualFold(key, "items") {
			items, err := s.array()
			if err != nil {
				return l, fmt.Errorf("items: %w", err)
			}
			l.Items = items
			continue
		}
		start = s.i
		if err := s.skipValue(); err != nil {
			return l, err
		}
		v := body[start:s.i]
		var err error
		switch {
		case strings.EqualFold(key, "kind"):
			err = json.Unmarshal(v, &l.Kind)
		case strings.EqualFold(key, "apiVersion"):
			err = json.Unmarshal(v, &l.APIVersion)
		default:
			if !json.Valid(v) {
				err = errors.New("invalid value")
			}
		}
		if err != nil {
			return l, fmt.Errorf("member %q: %w", key, err)
		}
	}
	s.space()
	if s.i != len(body) {
		return l, s.errorf("data after the EventList")
	}
	return l, nil
}

// jsonScanner finds the extent of JSON values without a nesting limit. It
// checks only what it needs to find their ends: the values it returns are
// validated when decoded.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{s.i}, args...)...)
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *jsonScanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jsonScanner) skipString() error {
	if !s.eat('"') {
		return s.errorf("want a string")
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return nil
		default:
			s.i++
		}
	}
	return errors.New("unterminated string")
}

// skipValue moves past one value: a string, an object or array (however
// deep), or a literal or number.
func (s *jsonScanner) skipValue() error {
	if s.i >= len(s.b) {
		return errors.New("unexpected end of input")
	}
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if err := s.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return nil
			}
		}
		return errors.New("unexpected end of input")
	default:
		start := s.i
		for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
			s.i++
		}
		if s.i == start {
			return s.errorf("want a value")
		}
		return nil
	}
}

// array returns the elements of an array (or nil for null), undecoded.
func (s *jsonScanner) array() ([]json.RawMessage, error) {
	if strings.HasPrefix(string(s.b[s.i:min(s.i+4, len(s.b))]), "null") {
		s.i += 4
		return nil, nil
	}
	if !s.eat('[') {
		return nil, s.errorf("want an array")
	}
	items := []json.RawMessage{}
	for n := 0; ; n++ {
		s.space()
		if s.eat(']') {
			return items, nil
		}
		if n > 0 {
			if !s.eat(',') {
				return nil, s.errorf("want , or ]")
			}
			s.space()
		}
		start := s.i
		if err := s.skipValue(); err != nil {
			return nil, err
		}
		items = append(items, json.RawMessage(s.b[start:s.i]))
	}
}
