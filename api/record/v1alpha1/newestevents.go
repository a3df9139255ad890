package v1alpha1

import (
	"encoding/json"
	"regexp"
	"time"
)

// NewestEventsHeader is the response header on lists of the record's read
// resources (deletions, changes, attempts and their cluster-scoped twins)
// that says how far each audit source has delivered for the cluster
// served: a JSON object {"cluster": name, "at": the server's time,
// "newestEvents": {source: the stageTimestamp of the newest event stored
// from it}}. A change younger than a source's newest event may not have
// arrived yet (kubectl record's lag note). It is absent when the server
// knows no source's progress.
const NewestEventsHeader = "Options-Record-Newest-Events"

// sourceName is what a source is called (webhook, firehose, pubsub,
// eventhubs); another name is left out of the header and of its reading.
var sourceName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// FormatNewestEvents is the NewestEventsHeader value for cluster at the
// server's time at; "" when newest has no well-named source.
func FormatNewestEvents(cluster string, at time.Time, newest map[string]time.Time) string {
	// No named type: the API's generators (deepcopy, OpenAPI) see none.
	v := struct {
		Cluster      string               `json:"cluster"`
		At           time.Time            `json:"at"`
		NewestEvents map[string]time.Time `json:"newestEvents"`
	}{cluster, at.UTC(), map[string]time.Time{}}
	for s, t := range newest {
		if sourceName.MatchString(s) {
			v.NewestEvents[s] = t.UTC()
		}
	}
	if len(v.NewestEvents) == 0 {
		return ""
	}
	b, err := json.Marshal(v) // escapes every control character: one header line
	if err != nil {
		return ""
	}
	return string(b)
}

// ParseNewestEvents reads a NewestEventsHeader value: the cluster, the
// server's time and each well-named source's newest event; ok is false
// for a value that is not one.
func ParseNewestEvents(value string) (cluster string, at time.Time, newest map[string]time.Time, ok bool) {
	var v struct {
		Cluster      string               `json:"cluster"`
		At           time.Time            `json:"at"`
		NewestEvents map[string]time.Time `json:"newestEvents"`
	}
	if err := json.Unmarshal([]byte(value), &v); err != nil || v.At.IsZero() {
		return "", time.Time{}, nil, false
	}
	newest = map[string]time.Time{}
	for s, t := range v.NewestEvents {
		if sourceName.MatchString(s) {
			newest[s] = t
		}
	}
	return v.Cluster, v.At, newest, len(newest) > 0
}
