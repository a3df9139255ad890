package decode

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// A provider's log service (CloudWatch Logs for EKS, Azure Monitor for AKS)
// forwards the kube-apiserver's audit log backend line by line: each line,
// one audit Event as JSON text, becomes one log record, wrapped in the
// provider's own envelope. Lines decodes those texts with the decoder of
// the webhook's EventLists, so that the events are the same whichever way
// they came.

// Line is one audit log line as a log service forwarded it.
type Line struct {
	// Text is the line: one audit.k8s.io/v1 Event as JSON text, or a
	// prefix of one that the log service cut (see Lines).
	Text []byte
	// Time is the log service's timestamp of the line (zero if unknown):
	// used only for a cut line that lost its own timestamps.
	Time time.Time
}

// Reasons a line is skipped.
const (
	// reasonTruncated skips a cut line that does not say who did what
	// (see salvage).
	reasonTruncated = "truncated"
)

// TruncatedMarker is the suffix CloudWatch Logs (and the agents that feed
// it) append to a log event cut at its size limit.
const TruncatedMarker = "[Truncated...]"

// Annotations a salvaged line is marked with: audit.k8s.io/truncated, as
// for an event the webhook kept without its bodies, and, when the line lost
// its own timestamps, where its stageTimestamp came from.
const (
	truncatedKey      = "audit.k8s.io/truncated"
	TimestampFromKey  = "options-record.io/stage-timestamp-from"
	timestampFromLogs = "log-service"
)

// Lines decodes audit log lines as EventList decodes an EventList's items:
// the events, and the lines skipped, by reason. A line that is not JSON
// text was cut by the log service (at CloudWatch Logs' 256 KiB, for
// example, ending in TruncatedMarker); it is kept as what it still proves
// when it can be (see salvage) and counted in truncated, or skipped as
// "truncated". A body AKS replaced with the string
// "skipped-too-big-size-object" is dropped, the event marked
// audit.k8s.io/truncated and counted in truncated. The events' strings and objects are slices of a buffer
// Lines makes: the lines may change afterwards.
func Lines(lines []Line, now time.Time) LinesResult {
	var r LinesResult
	r.Events, r.Skipped, r.Truncated, r.Unusable = decodeLines(lines, now)
	return r
}

// LinesResult is what Lines made of its lines.
type LinesResult struct {
	Events []auditv1.Event
	// Skipped counts the lines skipped, by reason.
	Skipped map[string]int
	// Truncated counts the lines kept without what the log service cut
	// or left out, marked audit.k8s.io/truncated.
	Truncated int
	// Unusable are the indexes of the lines cut so short that they no
	// longer say who did what (counted in Skipped as "truncated"): the
	// caller logs them, so that a request padded to push its identity out
	// of the log service's limit is seen.
	Unusable []int
}

func decodeLines(lines []Line, now time.Time) (events []auditv1.Event, skipped map[string]int, truncated int, unusable []int) {
	var body bytes.Buffer
	body.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`)
	n := 0
	for i, l := range lines {
		text := bytes.TrimSpace(l.Text)
		if json.Valid(text) && bytes.Contains(text, []byte(skippedBody)) {
			if dropped, ok := dropSkippedBodies(text); ok {
				text = dropped
				truncated++
			}
		} else if !json.Valid(text) {
			salvaged, ok := salvage(text, l.Time)
			if !ok {
				if skipped == nil {
					skipped = map[string]int{}
				}
				skipped[reasonTruncated]++
				unusable = append(unusable, i)
				continue
			}
			text = salvaged
			truncated++
		}
		if n > 0 {
			body.WriteByte(',')
		}
		body.Write(text)
		n++
	}
	body.WriteString(`]}`)
	if n == 0 {
		return nil, skipped, truncated, unusable
	}
	events, bad, err := EventList(body.Bytes(), now)
	if err != nil {
		// Every item is JSON text, so the envelope is always an EventList.
		if skipped == nil {
			skipped = map[string]int{}
		}
		skipped[reasonMalformed] += n
		return nil, skipped, 0, unusable
	}
	for r, c := range bad {
		if skipped == nil {
			skipped = map[string]int{}
		}
		skipped[r] += c
	}
	return events, skipped, truncated, unusable
}

// Start is the first bytes of a line, for a log message: a line is
// hostile, and long.
func Start(text []byte) string {
	const n = 300
	if len(text) > n {
		text = text[:n]
	}
	return strings.ToValidUTF8(string(text), "\uFFFD")
}

// skippedBody is what AKS writes in place of a request or response body
// it does not export (its documentation of the AKSAudit table).
const skippedBody = "skipped-too-big-size-object"

// dropSkippedBodies removes the bodies AKS replaced with skippedBody (a
// string where an object belongs) and marks the event
// audit.k8s.io/truncated; it reports whether it removed any.
func dropSkippedBodies(text []byte) ([]byte, bool) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(text, &members); err != nil {
		return nil, false
	}
	dropped := false
	for _, k := range []string{"requestObject", "responseObject"} {
		var s string
		if v, ok := members[k]; ok && json.Unmarshal(v, &s) == nil && s == skippedBody {
			delete(members, k)
			dropped = true
		}
	}
	if !dropped {
		return nil, false
	}
	annotations := map[string]string{}
	if raw, ok := members["annotations"]; ok {
		if err := json.Unmarshal(raw, &annotations); err != nil {
			return nil, false
		}
	}
	annotations[truncatedKey] = "true"
	ann, err := json.Marshal(annotations)
	if err != nil {
		return nil, false
	}
	members["annotations"] = ann
	out, err := json.Marshal(members)
	return out, err == nil
}

// salvage turns a cut audit Event into one that holds what the cut left
// whole, or reports that it does not say who did what. An Event's members
// are written in a fixed order (kind, apiVersion, level, auditID, stage,
// requestURI, verb, user, impersonatedUser, sourceIPs, userAgent,
// objectRef, responseStatus, requestObject, responseObject,
// requestReceivedTimestamp, stageTimestamp, annotations), so a cut, which
// lands in a long body, leaves who, what and the answer whole. The members
// read whole are kept as they are; a member the cut went through, and all
// after it, are lost. The event is kept only if it still has its auditID,
// stage, requestURI, verb, user and responseStatus (without it, a denied
// request would read as a success), and a stageTimestamp: its own, or else the log
// service's time of the line (marked TimestampFromKey: "log-service"). It
// is marked audit.k8s.io/truncated; its own annotations, written last, are
// kept only if the cut came after them.
func salvage(text []byte, logTime time.Time) ([]byte, bool) {
	text = bytes.TrimSuffix(text, []byte(TruncatedMarker))
	dec := json.NewDecoder(bytes.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, ok := tok.(string)
		if !ok {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if dec.InputOffset() == int64(len(text)) && !bytes.ContainsAny(v[len(v)-1:], `"}]`) {
			// A number or literal the cut may have shortened: 20 of 200.
			break
		}
		if _, dup := members[key]; dup {
			// Two values for one member: which one the apiserver meant is
			// not for a cut line to say.
			return nil, false
		}
		members[key] = v
	}
	for _, need := range []string{"auditID", "stage", "requestURI", "verb", "user", "responseStatus"} {
		if _, ok := members[need]; !ok {
			return nil, false
		}
	}
	annotations := map[string]string{}
	if raw, ok := members["annotations"]; ok {
		if err := json.Unmarshal(raw, &annotations); err != nil {
			return nil, false
		}
	}
	annotations[truncatedKey] = "true"
	if _, ok := members["stageTimestamp"]; !ok {
		if logTime.IsZero() {
			return nil, false
		}
		ts, _ := json.Marshal(logTime.UTC().Format(time.RFC3339Nano))
		members["stageTimestamp"] = ts
		annotations[TimestampFromKey] = timestampFromLogs
	}
	ann, err := json.Marshal(annotations)
	if err != nil {
		return nil, false
	}
	members["annotations"] = ann
	out, err := json.Marshal(members)
	if err != nil {
		return nil, false
	}
	return out, true
}
