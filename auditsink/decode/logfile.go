package decode

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// An audit log file, as the kube-apiserver's log backend writes it (one
// Event per line), or EventList documents (as the webhook receives them),
// or both, is decoded value by value: the adapter that puts `options-record
// import` in front of the one pipeline.

// logDecoder decodes the top-level JSON values of an audit log.
type logDecoder struct {
	in  *countingReader
	dec *json.Decoder
	now time.Time
}

// newLogDecoder decodes the audit log r; now bounds its events'
// timestamps, as for EventList.
func newLogDecoder(r io.Reader, now time.Time) *logDecoder {
	in := &countingReader{r: bufio.NewReaderSize(r, 1<<20)}
	return &logDecoder{in: in, dec: json.NewDecoder(in), now: now}
}

// Next decodes the log's next value, an Event or an EventList: its events,
// and the counts of its items skipped, by reason. It returns io.EOF after
// the last value, and a *LogError where the log is not JSON or a value is
// not an audit.k8s.io/v1 Event or EventList.
func (d *logDecoder) Next() ([]auditv1.Event, map[string]int, error) {
	// Where the value starts (after blanks): where an error is reported.
	start := d.dec.InputOffset()
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, io.EOF
		}
		return nil, nil, &LogError{Offset: start, Err: fmt.Errorf("not JSON: %w", err)}
	}
	events, skipped, err := decodeLogValue(raw, d.now)
	if err != nil {
		return nil, nil, &LogError{Offset: start, Err: err}
	}
	return events, skipped, nil
}

// BytesRead is how much of the log was read so far (for a progress bar).
func (d *logDecoder) BytesRead() int64 { return d.in.n }

// LogError is where an audit log stops being one.
type LogError struct {
	Path   string // the file, if known
	Line   int    // its line, if known
	Offset int64  // the byte offset of the value (or the blanks before it)
	Err    error
}

func (e *LogError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("offset %d: %v", e.Offset, e.Err)
}

func (e *LogError) Unwrap() error { return e.Err }

// LogFile is an audit log file open for decoding.
type LogFile struct {
	*logDecoder
	f    *os.File
	path string
	size int64
}

// OpenLogFile opens the audit log at path; now is as for EventList.
func OpenLogFile(path string, now time.Time) (*LogFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return &LogFile{logDecoder: newLogDecoder(f, now), f: f, path: path, size: size}, nil
}

// Next decodes the log's next value, an Event or an EventList: its events,
// and the counts of its items skipped, by reason. It returns io.EOF after
// the last value, and a *LogError naming the file and the line where the
// log is not JSON or a value is not an audit.k8s.io/v1 Event or EventList.
func (l *LogFile) Next() ([]auditv1.Event, map[string]int, error) {
	events, skipped, err := l.logDecoder.Next()
	if le, ok := errors.AsType[*LogError](err); ok {
		le.Path = l.path
		le.Line = lineAt(io.NewSectionReader(l.f, 0, math.MaxInt64), le.Offset)
	}
	return events, skipped, err
}

// Size is the file's size when it was opened (0 if unknown).
func (l *LogFile) Size() int64 { return l.size }

// Close closes the file.
func (l *LogFile) Close() error { return l.f.Close() }

// decodeLogValue decodes one top-level JSON value of an audit log: an
// Event (log backend) or an EventList.
func decodeLogValue(raw []byte, now time.Time) ([]auditv1.Event, map[string]int, error) {
	var head struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, nil, fmt.Errorf("not an audit Event or EventList: %w", err)
	}
	switch head.Kind {
	case "EventList":
		return EventList(raw, now)
	case "Event":
		if head.APIVersion != auditv1.SchemeGroupVersion.String() {
			return nil, nil, fmt.Errorf("Event of apiVersion %q, want %s", head.APIVersion, auditv1.SchemeGroupVersion)
		}
		list := append(append([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`), raw...), "]}"...)
		return EventList(list, now)
	default:
		return nil, nil, fmt.Errorf("kind %q is not an audit Event or EventList", head.Kind)
	}
}

// lineAt finds the line of the first non-blank byte at or after a byte
// offset of r (where a value starts), for error messages only.
func lineAt(r io.Reader, off int64) int {
	br := bufio.NewReader(r)
	line := 1
	for i := int64(0); ; i++ {
		b, err := br.ReadByte()
		if err != nil {
			return line
		}
		if i >= off && b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return line
		}
		if b == '\n' {
			line++
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
