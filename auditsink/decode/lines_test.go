package decode_test

import (
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink/decode"
	. "github.com/options-record/options-record/test/gen"
)

func TestLinesKeepWhatACutLineProves(t *testing.T) {
	ev := Event(Verb("update"), User("bob", "devs"), Name("app"),
		Request(ConfigMap("default", "app", "u1", 5, map[string]string{"k": strings.Repeat("x", 1000)})))
	ev.Annotations = map[string]string{"observe.optionsrecord.io/state": "obs-1"}
	whole := strings.TrimSuffix(string(Lines(ev)), "\n")
	logTime := Base.Add(time.Minute)
	at := func(s string) int { return strings.Index(whole, s) }
	lines := []decode.Line{
		{Text: []byte(whole)}, // whole: exact, annotations kept
		{Text: []byte(whole[:at(`"requestObject"`)+500] + decode.TruncatedMarker), Time: logTime}, // cut in the body
		{Text: []byte(whole[:at(`"user"`)+10] + decode.TruncatedMarker), Time: logTime},           // cut in who: skipped
		{Text: []byte(whole[:at(`"requestObject"`)+500])},                                         // no time at all: skipped
		{Text: []byte(`{"auditID":"a","stage":"ResponseComplete","requestURI":"/x","verb":"get","user":{},"code":20`), Time: logTime},
	}
	events, skipped, truncated := decode.Lines(lines, Base.Add(time.Hour))
	if len(events) != 3 || truncated != 2 || skipped["truncated"] != 2 {
		t.Fatalf("%d events, %d truncated kept, skipped %v; want 3, 2, truncated:2", len(events), truncated, skipped)
	}
	if events[0].Annotations["observe.optionsrecord.io/state"] != "obs-1" || events[0].RequestObject == nil {
		t.Errorf("whole line: annotations %v", events[0].Annotations)
	}
	cut := events[1]
	if cut.User.Username != "bob" || cut.ObjectRef == nil || cut.ObjectRef.Name != "app" || cut.RequestObject != nil ||
		!cut.StageTimestamp.Time.Equal(logTime) || cut.Annotations["audit.k8s.io/truncated"] != "true" ||
		cut.Annotations[decode.TimestampFromKey] != "log-service" {
		t.Errorf("cut line kept as %+v", cut)
	}
	if events[2].Verb != "get" || events[2].Annotations["audit.k8s.io/truncated"] != "true" {
		t.Errorf("a line cut in a trailing number: %+v", events[2])
	}
}
