package cmdutil

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/options-record/options-record/api/escape"
	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// DefaultLagWarning is --lag-warning's default: a source later than this
// gets a note. EKS's audit log reaches CloudWatch Logs "within a few
// minutes"; five is past what a healthy feed shows.
const DefaultLagWarning = 5 * time.Minute

// lagNotes keeps the newest NewestEventsHeader the record answered with:
// how late each audit source of the cluster is.
type lagNotes struct {
	mu      sync.Mutex
	cluster string
	at      time.Time
	newest  map[string]time.Time
}

// wrap is a client-go transport wrapper reading the header of every
// answer.
func (l *lagNotes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			l.observe(resp.Header.Get(record.NewestEventsHeader))
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// observe keeps a header's value, unless an answer of a later server time
// was kept already.
func (l *lagNotes) observe(value string) {
	if value == "" {
		return
	}
	cluster, at, newest, ok := record.ParseNewestEvents(value)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.After(l.at) {
		l.cluster, l.at, l.newest = cluster, at, newest
	}
}

// print writes a note to w for each source whose newest event was older
// than threshold when the server answered (server times both: the
// caller's clock does not matter); none when threshold is 0.
func (l *lagNotes) print(w io.Writer, threshold time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if threshold <= 0 {
		return
	}
	sources := make([]string, 0, len(l.newest))
	for s := range l.newest {
		sources = append(sources, s)
	}
	slices.Sort(sources)
	for _, s := range sources {
		if age := l.at.Sub(l.newest[s]); age > threshold {
			fmt.Fprintf(w, "note: the newest event from %s for cluster %s is %s old; newer changes may not be recorded yet\n",
				escape.Line(s), escape.Line(l.cluster), duration.HumanDuration(age))
		}
	}
}

// PrintLagNotes writes to the error stream, for each audit source of the
// cluster later than --lag-warning in the record's answers, a note that
// newer changes may not be recorded yet. Standard output is unchanged.
func (f *Factory) PrintLagNotes() {
	f.lag.print(f.Streams.ErrOut, f.lagWarning)
}
