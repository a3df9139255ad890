package notify_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/options-record/options-record/api/v1alpha1"
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

// TestRefusedAttemptRouted: mallory's refused deletion of a Secret (a real
// audit event: 403) reaches the destination whose route asks for refused
// attempts, naming her and offering no undo, and no other destination.
func TestRefusedAttemptRouted(t *testing.T) {
	security, oncall := newReceiver(t), newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "security", Type: notify.TypeWebhook, URL: security.URL, SecretFile: secretFile(t, "k")},
		{Name: "oncall", Type: notify.TypeWebhook, URL: oncall.URL, SecretFile: secretFile(t, "k")}}}
	ru := rule("all", "", "oncall")
	ru.Spec.Notify = append(ru.Spec.Notify, v1alpha1.NotifyRoute{Destination: "security", Refused: true})
	r := newRig(t, cfg, ru)
	forbidden := event(t, "delete-secret-forbidden")
	r.ingest(forbidden)
	r.ingest(forbidden) // redelivered
	if n := r.count(`SELECT count(*) FROM notification_outbox`); n != 1 {
		t.Fatalf("outbox rows: %d, want 1 (security's)", n)
	}
	r.start(notify.Options{})
	security.wait(t, 1)
	r.drained(t)
	security.mu.Lock()
	defer security.mu.Unlock()
	var in notify.Incident
	if err := json.Unmarshal(security.bodies[0], &in); err != nil {
		t.Fatal(err)
	}
	if in.Kind != notify.KindRefused || in.Initiator == nil || in.Initiator.User != "mallory" || len(in.Undo) != 0 ||
		len(in.Changes) != 1 || !in.Changes[0].Refused || in.Changes[0].Code != 403 {
		t.Errorf("message: %s", security.bodies[0])
	}
	oncall.mu.Lock()
	defer oncall.mu.Unlock()
	if len(oncall.bodies) != 0 {
		t.Errorf("oncall (no refused: true) got %d messages", len(oncall.bodies))
	}
}
