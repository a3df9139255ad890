package cmdutil

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestLagNotes: the header of the record's answers, read by the client's
// transport, gives a note on stderr for each source later than the
// threshold, measured in the server's time; none for a fresh source, a
// threshold of 0 or a header that is not one. The cluster's name is
// escaped.
func TestLagNotes(t *testing.T) {
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	header := record.FormatNewestEvents("prod\x1b[2Jx", at, map[string]time.Time{
		"firehose": at.Add(-12 * time.Minute), "webhook": at.Add(-10 * time.Second), "pubsub": at.Add(-7 * time.Minute),
		"BAD name\n": at.Add(-time.Hour),
	})
	tests := []struct {
		name      string
		header    string
		threshold time.Duration
		want      string
	}{
		{"late sources", header, DefaultLagWarning,
			"note: the newest event from firehose for cluster prod\\x1b[2Jx is 12m old; newer changes may not be recorded yet\n" +
				"note: the newest event from pubsub for cluster prod\\x1b[2Jx is 7m old; newer changes may not be recorded yet\n"},
		{"a higher threshold", header, 10 * time.Minute,
			"note: the newest event from firehose for cluster prod\\x1b[2Jx is 12m old; newer changes may not be recorded yet\n"},
		{"off", header, 0, ""},
		{"no header", "", DefaultLagWarning, ""},
		{"not one", `{"cluster":"c","newestEvents":{"firehose":"2000-01-01T00:00:00Z"}}`, DefaultLagWarning, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tt.header != "" {
					w.Header().Set(record.NewestEventsHeader, tt.header)
				}
			}))
			defer srv.Close()
			l := &lagNotes{}
			resp, err := (&http.Client{Transport: l.wrap(http.DefaultTransport)}).Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var out bytes.Buffer
			l.print(&out, tt.threshold)
			if out.String() != tt.want {
				t.Errorf("notes:\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}
