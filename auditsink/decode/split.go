package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/options-record/options-record/store/model/jsonscan"
)

// splitEventList reads the envelope of an EventList — kind, apiVersion and
// the items, left undecoded — without decoding the items. encoding/json
// limits nesting to 10000 levels for a whole document, and an EventList puts
// an object three levels deeper than the apiserver saw it: decoding the body
// at once would let one deep object (which the apiserver accepted) fail the
// whole batch. Here each item is decoded on its own later, and a too deep
// one is skipped as malformed. The envelope is walked with jsonscan.Lax,
// which finds the items' extent without a nesting limit.
func splitEventList(body []byte) (eventList, error) {
	var l eventList
	i := jsonscan.Space(body, 0)
	if i == len(body) || body[i] != '{' {
		return l, errors.New("not a JSON object")
	}
	end, err := jsonscan.Lax.Walk(body, i, func(m jsonscan.Member) (int, error) {
		key, err := m.Name()
		if err != nil {
			return m.Value, fmt.Errorf("member name: %w", err)
		}
		if strings.EqualFold(key, "items") {
			var end int
			if l.Items, end, err = eventItems(body, m.Value); err != nil {
				return end, fmt.Errorf("items: %w", err)
			}
			return end, nil
		}
		end, err := jsonscan.Skip(body, m.Value)
		if err != nil {
			return end, err
		}
		v := body[m.Value:end]
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
			return end, fmt.Errorf("member %q: %w", key, err)
		}
		return end, nil
	})
	if err != nil {
		return l, err
	}
	if jsonscan.Space(body, end) != len(body) {
		return l, fmt.Errorf("offset %d: data after the EventList", end)
	}
	return l, nil
}

// eventItems returns the elements of the array at body[i] (or nil for
// null), undecoded, and the end of the array.
func eventItems(body []byte, i int) ([]json.RawMessage, int, error) {
	if i < len(body) && body[i] == 'n' {
		end, err := jsonscan.Skip(body, i)
		if err == nil && string(body[i:end]) != "null" {
			err = errors.New("want an array")
		}
		return nil, end, err
	}
	items := []json.RawMessage{}
	end, err := jsonscan.Lax.Array(body, i, func(start, end int) error {
		items = append(items, json.RawMessage(body[start:end]))
		return nil
	})
	return items, end, err
}
