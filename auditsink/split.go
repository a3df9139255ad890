package auditsink

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
	end, err := jsonscan.Lax.Object(body, i, func(m jsonscan.Member) error {
		key, err := m.Name()
		if err != nil {
			return fmt.Errorf("member name: %w", err)
		}
		v := body[m.Value:m.End]
		switch {
		case strings.EqualFold(key, "items"):
			l.Items, err = eventItems(body, m)
			if err != nil {
				return fmt.Errorf("items: %w", err)
			}
			return nil
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
			return fmt.Errorf("member %q: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return l, err
	}
	if jsonscan.Space(body, end) != len(body) {
		return l, fmt.Errorf("offset %d: data after the EventList", end)
	}
	return l, nil
}

// eventItems returns the elements of the array m holds (or nil for null),
// undecoded.
func eventItems(body []byte, m jsonscan.Member) ([]json.RawMessage, error) {
	if string(body[m.Value:m.End]) == "null" {
		return nil, nil
	}
	items := []json.RawMessage{}
	_, err := jsonscan.Lax.Array(body, m.Value, func(start, end int) error {
		items = append(items, json.RawMessage(body[start:end]))
		return nil
	})
	return items, err
}
