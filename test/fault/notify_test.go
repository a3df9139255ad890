package fault

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// notifyRulesYAML routes the deletions the rule records to the destination
// "hook" of --notify-config (docs/notifications.md).
const notifyRulesYAML = `apiVersion: optionsrecord.io/v1alpha1
kind: OptionsRecordController
metadata: {name: fault, namespace: options-record}
spec:
  namespaces: ["prod"]
  notify:
    - destination: hook
`

// hookReceiver is a signed-webhook destination whose first delivery hangs
// until its sender goes away; it answers every later one 200 and keeps
// the keys of those.
type hookReceiver struct {
	*httptest.Server
	mu        sync.Mutex
	requests  int
	delivered []string // X-Options-Record-Key of the deliveries answered 200
	first     chan string
	more      chan struct{}
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{first: make(chan string, 1), more: make(chan struct{}, 16)}
	release := make(chan struct{})
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := r.Header.Get("X-Options-Record-Key")
		h.mu.Lock()
		h.requests++
		n := h.requests
		h.mu.Unlock()
		if n == 1 {
			h.first <- key
			// Hold the first delivery: its sender is killed meanwhile, which
			// closes the connection.
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		h.mu.Lock()
		h.delivered = append(h.delivered, key)
		h.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		h.more <- struct{}{}
	}))
	t.Cleanup(func() { close(release); h.Close() })
	return h
}

func (h *hookReceiver) deliveries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.delivered...)
}

// TestKill9BetweenCommitAndSend kills the sink with SIGKILL after it stored
// a deletion (the audit webhook answered 200) and while it was sending the
// notification (leased, not sent). A new process on the same database sends
// it when the dead one's lease runs out, under the same key, once. The lease
// is --notify-lease 10s (the default minute would make this test wait it
// out), the destination's timeout 8s, shorter as serve requires.
func TestKill9BetweenCommitAndSend(t *testing.T) {
	c := newCluster(t)
	hook := newHookReceiver(t)
	secret := filepath.Join(c.dir, "hook-secret")
	cfg := filepath.Join(c.dir, "notify.yaml")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("destinations:\n  - name: hook\n    type: webhook\n    url: "+hook.URL+
		"\n    secretFile: "+secret+"\n    timeout: 8s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := c.newSink("notify", "", "--notify-config", cfg, "--notify-group-window", "1ms", "--notify-lease", "10s")
	if err := os.WriteFile(filepath.Join(c.dir, "rules.yaml"), []byte(notifyRulesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	s.start(c.dsn)

	del, err := os.ReadFile(filepath.Join("..", "..", "filter", "testdata", "events", "delete-configmap.json"))
	if err != nil {
		t.Fatal(err)
	}
	list := []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + string(del) + `]}`)
	if code, _, err := s.post(list); code != http.StatusOK {
		t.Fatalf("audit webhook answered %d (%v) to bob's deletion", code, err)
	}

	// The sender leased the message and is sending it: the receiver holds
	// the request.
	var key string
	select {
	case key = <-hook.first:
	case <-time.After(time.Minute): // "did not happen", not a measurement
		t.Fatalf("no delivery attempt within a minute\n%s", s.logTail())
	}
	if key == "" {
		t.Fatal("the delivery carries no X-Options-Record-Key")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn := c.conn(ctx)
	defer conn.Close(ctx)
	var leased, sent bool
	var leaseUntil time.Time
	if err := conn.QueryRow(ctx, `SELECT lease_until > now(), lease_until, sent_at IS NOT NULL FROM notification_messages WHERE id = $1`, key).
		Scan(&leased, &leaseUntil, &sent); err != nil {
		t.Fatalf("the message %s the receiver holds: %v", key, err)
	}
	if !leased || sent {
		t.Fatalf("message %s while its first delivery hangs: leased %v, sent %v; want leased and not sent", key, leased, sent)
	}

	s.kill()
	if err := conn.QueryRow(ctx, `SELECT sent_at IS NOT NULL FROM notification_messages WHERE id = $1`, key).Scan(&sent); err != nil || sent {
		t.Fatalf("after SIGKILL the message is sent %v (%v); want pending", sent, err)
	}

	// A new process on the same database: it waits out the dead process's
	// lease (--notify-lease), then sends.
	s.start(c.dsn)
	select {
	case <-hook.more:
	case <-time.After(2 * time.Minute): // the lease and a retry, with room; "did not happen"
		t.Fatalf("the message was not sent after the restart\n%s", s.logTail())
	}
	// Wait until the new process recorded the send, so that a second send
	// would have been claimed by now if it were to happen.
	for {
		if err := conn.QueryRow(ctx, `SELECT sent_at IS NOT NULL FROM notification_messages WHERE id = $1`, key).Scan(&sent); err != nil {
			t.Fatal(err)
		}
		if sent {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the send was never recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var messages int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM notification_messages`).Scan(&messages); err != nil {
		t.Fatal(err)
	}
	// The new process claimed the message only once the dead one's lease
	// had run out (both times are the database's clock).
	var afterLease bool
	if err := conn.QueryRow(ctx, `SELECT sent_at >= $2 FROM notification_messages WHERE id = $1`, key, leaseUntil).Scan(&afterLease); err != nil || !afterLease {
		t.Fatalf("message %s sent before the dead process's lease ran out at %s (%v)", key, leaseUntil, err)
	}
	if got := hook.deliveries(); len(got) != 1 || got[0] != key || messages != 1 {
		t.Fatalf("deliveries %q of %d messages; want exactly the held message %s, once", got, messages, key)
	}
	if n := s.metric(`options_record_notifications_sent_total{destination="hook"}`); n != 1 {
		t.Errorf("the new process counts %v sent, want 1", n)
	}
}
