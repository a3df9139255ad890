package decode_test

import (
	"fmt"
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
		// A padded User-Agent pushes the answer out: a denied request
		// would read as done, so it is skipped (and reported).
		{Text: []byte(whole[:at(`"userAgent"`)+20] + decode.TruncatedMarker), Time: logTime},
		{Text: []byte(`{"auditID":"a","stage":"ResponseComplete","requestURI":"/x","verb":"get","user":{},"responseStatus":{"code":200},"code":20`), Time: logTime},
	}
	res := decode.Lines(lines, Base.Add(time.Hour))
	events := res.Events
	if len(events) != 3 || res.Truncated != 2 || res.Skipped["truncated"] != 3 || fmt.Sprint(res.Unusable) != "[2 3 4]" {
		t.Fatalf("%d events, %d truncated kept, skipped %v, unusable %v; want 3, 2, truncated:3, [2 3 4]", len(events), res.Truncated, res.Skipped, res.Unusable)
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

// FuzzLines cuts audit log lines anywhere, as a log service does at its
// size limit: Lines never panics, keeps at most the one event, and marks
// one it kept from a cut line as truncated, its who and verb those of the
// line.
func FuzzLines(f *testing.F) {
	ev := Event(Verb("delete"), User("bob", "devs"), Name("app"), Code(200),
		Request(ConfigMap("default", "app", "u1", 5, map[string]string{"k": strings.Repeat("x", 300)})))
	ev.Annotations = map[string]string{"observe.optionsrecord.io/state": "obs-1"}
	whole := strings.TrimSuffix(string(Lines(ev)), "\n")
	for _, cut := range []int{len(whole), len(whole) / 2, 40, 0} {
		f.Add(whole, cut, true)
	}
	f.Add(`{"auditID":"a","stage":"ResponseComplete","requestURI":"/x","verb":"get","user":{},"responseStatus":{"code":20`, 200, false)
	f.Fuzz(func(t *testing.T, line string, cut int, marker bool) {
		if cut < 0 || cut > len(line) {
			return
		}
		text := line[:cut]
		if marker {
			text += decode.TruncatedMarker
		}
		res := decode.Lines([]decode.Line{{Text: []byte(text), Time: Base}}, Base.Add(time.Hour))
		if len(res.Events) > 1 {
			t.Fatalf("%d events from one line", len(res.Events))
		}
		if len(res.Events) == 1 && res.Truncated == 1 {
			e := res.Events[0]
			if e.Annotations["audit.k8s.io/truncated"] != "true" || e.AuditID == "" || e.Verb == "" || e.ResponseStatus == nil {
				t.Fatalf("a cut line kept as %+v", e)
			}
		}
	})
}
