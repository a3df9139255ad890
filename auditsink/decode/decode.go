package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Reasons an event inside an otherwise good batch is skipped.
const (
	reasonMalformed = "malformed"
	reasonInvalid   = "invalid"
)

// ErrBadRequest marks a body that is not an audit.k8s.io/v1 EventList.
var ErrBadRequest = errors.New("bad request")

// earliest is before any Kubernetes audit log; an event older than this, or
// more than a day in the future, has an absurd timestamp.
var earliest = time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC)

// eventList is an EventList whose items are decoded one by one, so one item
// that does not decode does not cost the others.
type eventList struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Items      []json.RawMessage `json:"items"`
}

// EventList parses an EventList body. A body that is not JSON or not an
// audit.k8s.io/v1 EventList is an ErrBadRequest. Items that do not decode or
// are not valid events are skipped and counted by reason.
//
// The body is decoded in one pass by decodeWire (see wire.go): the events'
// strings and objects are slices of body, which must not change afterwards;
// whatever is kept past the batch must be copied. Only when that pass fails
// is the body decoded item by item, so one bad item costs the others nothing.
func EventList(body []byte, now time.Time) ([]auditv1.Event, map[string]int, error) {
	if wl, err := decodeWire(body); err == nil {
		if wl.Kind != "EventList" || wl.APIVersion != auditv1.SchemeGroupVersion.String() {
			return nil, nil, wrongKind(wl.Kind, wl.APIVersion)
		}
		events := make([]auditv1.Event, 0, len(wl.Items))
		var skipped map[string]int
		for i := range wl.Items {
			events = append(events, wl.Items[i].event())
			if err := validateEvent(&events[len(events)-1], now); err != nil {
				events = events[:len(events)-1]
				if skipped == nil {
					skipped = map[string]int{}
				}
				skipped[reasonInvalid]++
			}
		}
		return events, skipped, nil
	}
	l, err := splitEventList(body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: body is not a JSON EventList: %v", ErrBadRequest, err)
	}
	if l.Kind != "EventList" || l.APIVersion != auditv1.SchemeGroupVersion.String() {
		return nil, nil, wrongKind(l.Kind, l.APIVersion)
	}
	events := make([]auditv1.Event, 0, len(l.Items))
	var skipped map[string]int
	for _, raw := range l.Items {
		ev, reason := decodeEvent(raw, now)
		if reason != "" {
			if skipped == nil {
				skipped = map[string]int{}
			}
			skipped[reason]++
			continue
		}
		events = append(events, ev)
	}
	return events, skipped, nil
}

func wrongKind(kind, apiVersion string) error {
	return fmt.Errorf("%w: want kind EventList, apiVersion %s; got kind %q, apiVersion %q",
		ErrBadRequest, auditv1.SchemeGroupVersion, kind, apiVersion)
}

// decodeEvent decodes and validates one event. It returns a skip reason
// instead of an error: a bad event is counted, not fatal.
func decodeEvent(raw []byte, now time.Time) (auditv1.Event, string) {
	var ev auditv1.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, reasonMalformed
	}
	if !utf8.Valid(raw) {
		// encoding/json replaced the invalid UTF-8 of the strings unseen:
		// decoded again with it left in place, for the store's sanitizer
		// to replace and count (see wire.go).
		var w wireEvent
		if decodeEventKeepingInvalidUTF8(raw, &w) {
			ev = w.event()
		}
	}
	if err := validateEvent(&ev, now); err != nil {
		return ev, reasonInvalid
	}
	return ev, ""
}

func validateEvent(ev *auditv1.Event, now time.Time) error {
	switch {
	case ev.AuditID == "":
		return errors.New("no auditID")
	case ev.Stage == "":
		return errors.New("no stage")
	case ev.Verb == "":
		return errors.New("no verb")
	case ev.StageTimestamp.IsZero():
		return errors.New("no stageTimestamp")
	case ev.StageTimestamp.Time.Before(earliest) || ev.StageTimestamp.Time.After(now.Add(24*time.Hour)):
		return errors.New("stageTimestamp out of range")
	case ev.ResponseStatus != nil && (ev.ResponseStatus.Code < 0 || ev.ResponseStatus.Code > 999):
		return errors.New("response code out of range")
	}
	return nil
}
