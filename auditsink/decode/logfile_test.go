package decode_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/decode"
	. "github.com/options-record/options-record/test/gen"
)

// readLog decodes a whole log with next: the audit IDs of its events, the
// items skipped by reason, and the error it stopped at (nil at its end).
func readLog(next func() ([]auditv1.Event, map[string]int, error)) ([]string, map[string]int, error) {
	var ids []string
	skipped := map[string]int{}
	for {
		events, bad, err := next()
		if errors.Is(err, io.EOF) {
			return ids, skipped, nil
		}
		if err != nil {
			return ids, skipped, err
		}
		for _, ev := range events {
			ids = append(ids, string(ev.AuditID))
		}
		for r, n := range bad {
			skipped[r] += n
		}
	}
}

// TestLogDecoderReadsLinesAndEventLists: the log backend's lines and
// EventList documents, mixed in one log, give their events in order; an
// invalid item is skipped and counted, not fatal.
func TestLogDecoderReadsLinesAndEventLists(t *testing.T) {
	var log bytes.Buffer
	log.Write(Lines(Event(AuditID("a")), Event(AuditID("b"))))
	log.Write(EventList(Event(AuditID("c")), Event(AuditID("")), Event(AuditID("d"))))
	log.WriteString("\n\n")
	log.Write(Lines(Event(AuditID("e"))))
	d := decode.NewLogDecoder(&log, time.Now())
	ids, skipped, err := readLog(d.Next)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(ids, want) {
		t.Errorf("events %q, want %q", ids, want)
	}
	if skipped["invalid"] != 1 || len(skipped) != 1 {
		t.Errorf("skipped %v, want the item with no auditID as invalid", skipped)
	}
	if d.BytesRead() == 0 {
		t.Error("BytesRead is 0 after reading the log")
	}
}

// TestLogFileErrorsNameTheLine: where a log stops being one, the error
// names the file and the line, after the events before it.
func TestLogFileErrorsNameTheLine(t *testing.T) {
	good := string(Lines(Event(AuditID("a")), Event(AuditID("b"))))
	for _, tc := range []struct {
		name, tail, want string
	}{
		{"not JSON", "{\"kind\":\"Event\", oops\n", "not JSON"},
		{"not an event", "\n  {\"kind\":\"Pod\",\"apiVersion\":\"v1\"}\n", `kind "Pod" is not an audit Event or EventList`},
		{"another version", `{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1"}`, `Event of apiVersion "audit.k8s.io/v1beta1"`},
		{"not an object", "[1,2]\n", "not an audit Event or EventList"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(good+tc.tail), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := decode.OpenLogFile(path, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Size() != int64(len(good)+len(tc.tail)) {
				t.Errorf("Size %d, want %d", f.Size(), len(good)+len(tc.tail))
			}
			ids, _, err := readLog(f.Next)
			if !slices.Equal(ids, []string{"a", "b"}) {
				t.Errorf("events before the error %q, want a and b", ids)
			}
			le, ok := errors.AsType[*decode.LogError](err)
			if !ok {
				t.Fatalf("err = %v, want a *LogError", err)
			}
			// The bad value starts on line 3, or on line 4 after a blank line.
			wantLine := 3 + strings.Count(tc.tail[:len(tc.tail)-len(strings.TrimLeft(tc.tail, " \n"))], "\n")
			if le.Line != wantLine || !strings.HasPrefix(err.Error(), path+":") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (line %d), want %s:%d naming %q", err, le.Line, path, wantLine, tc.want)
			}
		})
	}
}
