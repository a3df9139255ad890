package model

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// The observing webhook's name (ValidatingWebhookConfiguration
// webhooks[].name) and the key prefix of the audit annotations its answers
// carry: the apiserver writes them into the request's audit event as
// "<webhook name>/<key>", at every level, Metadata included.
const (
	ObservingWebhookName  = "observe.optionsrecord.io"
	ObservationKeyPrefix  = "observation"
	observationAnnotation = ObservingWebhookName + "/" + ObservationKeyPrefix
	// ObservationIDLen is the length of an observation's id: 16 random
	// bytes in lower-case hex.
	ObservationIDLen = 32
)

// Observation is an object as a validating admission review showed it just
// before a write (oldObject): untrusted until the audit event of the same
// request names it (Claims), when it becomes Version.
type Observation struct {
	ID         string // ObservationIDLen hex digits, random
	Cluster    string
	ReceivedAt time.Time
	Source     string // the review's remote host
	Operation  string // UPDATE or DELETE
	DryRun     bool
	// The request as the review named it (the audit event's objectRef
	// must name the same).
	APIGroup, Resource, Subresource, Namespace, Name string
	// Version is the observed state (origin admission, from
	// BaselineVersion: sanitized and Secret values digested as every
	// other state).
	Version Version
}

// Bytes is what the observation holds, counted against its source's bound.
func (o *Observation) Bytes() int {
	return len(o.Version.Object) + len(o.Version.ObjectExact) + 256
}

// Claims are the observation ids an audit event's annotations name
// (observe.optionsrecord.io/observation*: id). A value that is not an id is
// ignored: annotations are hostile strings like every other.
func Claims(e *Event) []string {
	if len(e.Annotations) == 0 || !bytes.Contains(e.Annotations, []byte(observationAnnotation)) {
		return nil
	}
	var ann map[string]string
	if json.Unmarshal(e.Annotations, &ann) != nil {
		return nil
	}
	var ids []string
	for k, v := range ann {
		if strings.HasPrefix(k, observationAnnotation) && IsObservationID(v) {
			ids = append(ids, v)
		}
	}
	return ids
}

// IsObservationID says whether s has the form of an observation's id.
func IsObservationID(s string) bool {
	if len(s) != ObservationIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ObservationResult counts what a write of observations did.
type ObservationResult struct {
	Stored    int // observations written, unconfirmed
	OverBound int // dropped: their source holds its bound of unconfirmed bytes
	Confirmed int // observations an audit event stored earlier named: now versions
}
