package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink/notify"
)

// TestConfigMapDeletedByBob: bob's deletion of a ConfigMap (a real audit
// event) is one signed webhook message naming him, with the restore
// command; a redelivery of the batch queues nothing more.
func TestConfigMapDeletedByBob(t *testing.T) {
	hook := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "s3cret")}}}
	r := newRig(t, cfg, rule("prod", "", "hook"))
	del := event(t, "delete-configmap")
	r.ingest(del)
	r.ingest(del) // the apiserver's retry of the same batch
	if n := r.count(`SELECT count(*) FROM notification_outbox`); n != 1 {
		t.Fatalf("outbox rows after a batch and its redelivery: %d, want 1", n)
	}
	reg := r.start(notify.Options{})
	hook.wait(t, 1)
	r.drained(t)

	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.bodies) != 1 {
		t.Fatalf("webhook got %d messages, want 1", len(hook.bodies))
	}
	body, h := hook.bodies[0], hook.heads[0]
	if err := notify.Verify([]byte("s3cret"), body, h.Get(notify.HeaderSignature), time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if err := notify.Verify([]byte("wrong"), body, h.Get(notify.HeaderSignature), time.Now(), 5*time.Minute); err == nil {
		t.Fatal("signature verified under the wrong secret")
	}
	var in notify.Incident
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	if in.Initiator == nil || in.Initiator.User != "bob" || in.Count != 1 || in.Key == "" || h.Get(notify.HeaderKey) != in.Key {
		t.Fatalf("message: %s", body)
	}
	if want := "kubectl record restore configmaps/app-config -n prod"; len(in.Undo) != 1 || in.Undo[0] != want {
		t.Errorf("undo %q, want %q", in.Undo, want)
	}
	if got := metricValue(t, reg, "options_record_notifications_sent_total", "hook"); got != 1 {
		t.Errorf("sent_total %v, want 1", got)
	}
}

// TestNamespaceDeletionIsOneMessage: alice deletes a namespace, and the
// namespace controller's deletecollection takes 20 ConfigMaps with it: one
// message names alice and counts the cascade.
func TestNamespaceDeletionIsOneMessage(t *testing.T) {
	hook := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k")}}}
	r := newRig(t, cfg, rule("all", "", "hook"))
	cascade := event(t, "deletecollection-configmaps-namespace-controller", func(ev *auditv1.Event) {
		var items []map[string]any
		for i := range 20 {
			items = append(items, map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i), "namespace": "team-a",
				"uid": fmt.Sprintf("00000000-0000-4000-8000-0000000000%02d", i), "resourceVersion": fmt.Sprint(47000 + i),
				"creationTimestamp": "2026-11-19T12:00:00Z"}, "data": map[string]any{"k": "v"}})
		}
		b, _ := json.Marshal(map[string]any{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": map[string]any{"resourceVersion": "48412"}, "items": items})
		ev.ResponseObject = &runtime.Unknown{Raw: b, ContentType: runtime.ContentTypeJSON}
	})
	r.ingest(event(t, "delete-namespace"), cascade)
	r.start(notify.Options{})
	hook.wait(t, 1)
	r.drained(t)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.bodies) != 1 {
		t.Fatalf("%d messages, want 1 for the incident", len(hook.bodies))
	}
	var in notify.Incident
	if err := json.Unmarshal(hook.bodies[0], &in); err != nil {
		t.Fatal(err)
	}
	if in.Kind != notify.KindNamespaceDeletion || in.Namespace != "team-a" || in.Initiator == nil || in.Initiator.User != "alice" ||
		in.Count != 21 || in.Cascade != 20 || in.ByResource["configmaps"] != 20 {
		t.Fatalf("message: kind %s ns %s initiator %+v count %d cascade %d by %v", in.Kind, in.Namespace, in.Initiator, in.Count, in.Cascade, in.ByResource)
	}
	if len(in.Undo) != 2 || !strings.HasPrefix(in.Undo[1], "kubectl record plan as-of ") || !strings.HasSuffix(in.Undo[1], " -n team-a") {
		t.Errorf("undo %q", in.Undo)
	}
}

// TestHostileStringsEscapedInSlack: a name and a user agent written to
// mention everyone and link elsewhere arrive as inert text.
func TestHostileStringsEscapedInSlack(t *testing.T) {
	slack := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{{Name: "chat", Type: notify.TypeSlack, URL: slack.URL}}}
	r := newRig(t, cfg, rule("all", "", "chat"))
	const name, agent = "<!channel>", "<https://evil.example|click> *urgent* `x`"
	r.ingest(event(t, "delete-configmap", func(ev *auditv1.Event) {
		ev.ObjectRef.Name, ev.UserAgent = name, agent
		ev.User.Username = "<@U024BE7LH>&"
	}))
	r.start(notify.Options{})
	slack.wait(t, 1)
	slack.mu.Lock()
	defer slack.mu.Unlock()
	var msg struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(slack.bodies[0], &msg); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<!channel>", "<https://", "<@U024", "&`", "`x`"} {
		if strings.Contains(msg.Text, bad) {
			t.Errorf("Slack text holds %q unescaped:\n%s", bad, msg.Text)
		}
	}
	for _, want := range []string{"`&lt;!channel&gt;`", "&lt;https://evil.example|click&gt; *urgent* \u02cbx\u02cb", "`&lt;@U024BE7LH&gt;&amp;`"} {
		if !strings.Contains(msg.Text, want) {
			t.Errorf("Slack text lacks %q:\n%s", want, msg.Text)
		}
	}
}

// TestReceiverDownThenUp: a destination that fails its first deliveries
// still gets every message once it answers, each once, and the retries
// are counted.
func TestReceiverDownThenUp(t *testing.T) {
	hook := newReceiver(t)
	down := 3
	hook.fail = func() bool { down--; return down >= 0 }
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k")}}}
	r := newRig(t, cfg, rule("all", "", "hook"))
	r.ingest(event(t, "delete-configmap"), event(t, "delete-deployment-ci"))
	reg := r.start(notify.Options{})
	r.drained(t)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	keys := map[string]bool{}
	for _, h := range hook.heads {
		keys[h.Get(notify.HeaderKey)] = true
	}
	if len(hook.bodies) != 2 || len(keys) != 2 {
		t.Fatalf("delivered %d messages (%d keys), want 2 (bob's and ci's)", len(hook.bodies), len(keys))
	}
	if got := metricValue(t, reg, "options_record_notifications_retried_total", "hook"); got != 3 {
		t.Errorf("retried_total %v, want 3", got)
	}
}

// TestSenderKilledBetweenCommitAndSend: a change committed while no sender
// runs, and a message a sender leased and never sent (it died), are both
// sent by a sender started later.
func TestSenderKilledBetweenCommitAndSend(t *testing.T) {
	hook := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k")}}}
	r := newRig(t, cfg, rule("all", "", "hook"))
	ctx := context.Background()
	r.ingest(event(t, "delete-configmap"))
	// A first sender groups and leases the message, then dies.
	if n, err := r.st.GroupNotifications(ctx, 0); err != nil || n != 1 {
		t.Fatalf("grouped %d, %v", n, err)
	}
	m, err := r.st.ClaimNotification(ctx, "hook", time.Second)
	if err != nil || m == nil {
		t.Fatalf("claim: %v, %v", m, err)
	}
	if again, err := r.st.ClaimNotification(ctx, "hook", time.Second); err != nil || again != nil {
		t.Fatalf("a leased message claimed again: %v, %v", again, err)
	}
	// A change committed while no sender runs.
	r.ingest(event(t, "delete-deployment-ci"))
	r.start(notify.Options{Lease: time.Second})
	hook.wait(t, 2)
	r.drained(t)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if hook.heads[0].Get(notify.HeaderKey) != m.ID && hook.heads[1].Get(notify.HeaderKey) != m.ID {
		t.Errorf("the leased message %s was not sent under its key", m.ID)
	}
}

// TestTenantRuleRoutesOnlyItsNamespace: a tenant's rule (in team-b)
// routes team-b's deletions, never team-a's; a tenant a destination is not
// open to is told so, and routes nothing.
func TestTenantRuleRoutesOnlyItsNamespace(t *testing.T) {
	hook := newReceiver(t)
	cfg := &notify.Config{Destinations: []notify.Destination{
		{Name: "hook", Type: notify.TypeWebhook, URL: hook.URL, SecretFile: secretFile(t, "k"), Tenants: []string{"team-b"}}}}
	r := newRig(t, cfg, rule("mine", "team-b", "hook"), rule("other", "team-c", "hook"))
	for _, s := range r.statuses {
		if s.Name == "other" && (len(s.Capped) != 1 || !strings.Contains(s.Capped[0], `destination "hook"`)) {
			t.Errorf("team-c's rule: capped %q, want the refused route named", s.Capped)
		}
	}
	in := func(ns string) func(*auditv1.Event) {
		return func(ev *auditv1.Event) {
			ev.ObjectRef.Namespace, ev.RequestURI = ns, "/api/v1/namespaces/"+ns+"/configmaps/app-config"
		}
	}
	r.ingest(event(t, "delete-configmap", in("team-a")), event(t, "delete-configmap", in("team-c")), event(t, "delete-configmap", in("team-b")))
	if n := r.count(`SELECT count(*) FROM notification_outbox`); n != 1 {
		t.Fatalf("outbox rows: %d, want 1 (team-b's)", n)
	}
	if n := r.count(`SELECT count(*) FROM notification_outbox WHERE namespace = 'team-b' AND rule = 'team-b/mine'`); n != 1 {
		t.Fatal("team-b's deletion is not the one queued")
	}
}

// metricValue is a counter's value for destination dest (and, for the
// dropped counter, reason).
func metricValue(t *testing.T, reg *prometheus.Registry, name, dest string, reason ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() == "destination" && l.GetValue() != dest,
					l.GetName() == "reason" && (len(reason) == 0 || l.GetValue() != reason[0]):
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s{destination=%q, reason=%q}", name, dest, reason)
	return 0
}
