package notify_test

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/store"
)

// slowClaim is the store whose first claim returns late (its reads of the
// message's changes were slow), eating into the lease before the send.
type slowClaim struct {
	*store.Store
	once    sync.Once
	delay   time.Duration
	claimed chan struct{}
}

func (q *slowClaim) ClaimNotification(ctx context.Context, dest string, lease time.Duration) (*store.NotificationMessage, error) {
	m, err := q.Store.ClaimNotification(ctx, dest, lease)
	if m != nil {
		q.once.Do(func() {
			close(q.claimed)
			time.Sleep(q.delay)
		})
	}
	return m, err
}

// TestSendCutOffBeforeItsLeaseEnds: a destination that answers just
// within its timeout, after a claim whose reads took part of the lease,
// gets the message once. The send is cut off before the lease runs out
// (less the margin kept for recording the outcome), so no second replica
// claims the message while the first is still sending it.
func TestSendCutOffBeforeItsLeaseEnds(t *testing.T) {
	const (
		timeout  = 2 * time.Second
		answerIn = timeout - 200*time.Millisecond // the destination's pace: timeout − ε
		lease    = timeout + 500*time.Millisecond // longer than the timeout
		margin   = 300 * time.Millisecond
		slow     = time.Second // the first claim's reads
	)
	var mu sync.Mutex
	delivered := 0
	ended := make(chan struct{}, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		defer func() { ended <- struct{}{} }()
		select {
		case <-time.After(answerIn):
			mu.Lock()
			delivered++
			mu.Unlock()
		case <-req.Context().Done(): // the sender gave up: not delivered
		}
	}))
	t.Cleanup(hook.Close)
	cfg := &notify.Config{Destinations: []notify.Destination{{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL,
		SecretFile: secretFile(t, "k"), Timeout: notify.Duration{Duration: timeout}}}}
	r := newRig(t, cfg, rule("all", "", "hook"))
	r.ingest(event(t, "delete-configmap"))

	run := func(q notify.Queue) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			notify.New(q, notify.Options{Config: cfg, Window: time.Millisecond, Poll: 20 * time.Millisecond,
				Lease: lease, LeaseMargin: margin, Registerer: prometheus.NewRegistry(),
				Backoff: wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1, Steps: math.MaxInt32}}).Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	first := &slowClaim{Store: r.st, delay: slow, claimed: make(chan struct{})}
	run(first)
	select {
	case <-first.claimed:
	case <-time.After(time.Minute):
		t.Fatal("no claim in a minute")
	}
	run(r.st) // a second replica
	// Two sends end: the first replica's (cut off, or delivered) and the
	// one after it (the second replica's, or the first's again).
	for range 2 {
		select {
		case <-ended:
		case <-time.After(time.Minute):
			t.Fatal("waited a minute for two sends to end")
		}
	}
	r.drained(t)
	mu.Lock()
	defer mu.Unlock()
	if delivered != 1 {
		t.Errorf("the destination got the message %d times, want once", delivered)
	}
}
