package notify_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/options-record/options-record/auditsink/notify"
)

// TestCascadeAfterItsNamespaceMessage: when the namespace controller's
// cascade is grouped after the namespace's own deletion was sent, its
// message still names the user who deleted the namespace (from the
// record, as the deletions view attributes it).
func TestCascadeAfterItsNamespaceMessage(t *testing.T) {
	hook := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k")}}}
	r := newRig(t, cfg, rule("all", "", "hook"))
	r.ingest(event(t, "delete-namespace"))
	if n, err := r.st.GroupNotifications(context.Background(), 0); err != nil || n != 1 {
		t.Fatalf("grouped %d, %v; want the namespace's deletion alone", n, err)
	}
	r.ingest(event(t, "deletecollection-configmaps-namespace-controller"))
	r.start(notify.Options{})
	hook.wait(t, 2)
	r.drained(t)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	for i, b := range hook.bodies {
		var in notify.Incident
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		if in.Kind != notify.KindNamespaceDeletion || in.Initiator == nil || in.Initiator.User != "alice" {
			t.Errorf("message %d: kind %s, initiator %+v; want alice's namespace deletion", i, in.Kind, in.Initiator)
		}
	}
}

// TestRateLimitDrops: over a destination's rate, messages are dropped and
// counted, not sent.
func TestRateLimitDrops(t *testing.T) {
	hook := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k"), Rate: 1e-6, Burst: 1}}}
	r := newRig(t, cfg, rule("all", "", "hook"))
	// Two users' deletions: two incidents.
	r.ingest(event(t, "delete-configmap"), event(t, "delete-deployment-ci"))
	reg := r.start(notify.Options{})
	r.drained(t)
	if got := metricValue(t, reg, "options_record_notifications_sent_total", "hook"); got != 1 {
		t.Errorf("sent %v, want 1 (the burst)", got)
	}
	if got := metricValue(t, reg, "options_record_notifications_dropped_total", "hook", "rate_limited"); got != 1 {
		t.Errorf("dropped %v, want 1", got)
	}
	if n := r.count(`SELECT count(*) FROM notification_messages WHERE dropped_reason = 'rate_limited'`); n != 1 {
		t.Errorf("%d messages dropped as rate_limited, want 1", n)
	}
}
