package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/cmd/options-record/app"
	"github.com/options-record/options-record/test/framework/alertmanager"
)

// hookInbox is a webhook destination that keeps the messages whose
// signature verifies, and counts those that do not.
type hookInbox struct {
	mu     sync.Mutex
	msgs   []notify.Incident
	forged int
}

func (h *hookInbox) find(kind, ns string) []notify.Incident {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []notify.Incident
	for _, m := range h.msgs {
		if m.Kind != kind {
			continue
		}
		if m.Namespace == ns || (len(m.Changes) > 0 && m.Changes[0].Namespace == ns) {
			out = append(out, m)
		}
	}
	return out
}

// TestNotificationsOnARealControlPlane: on a real kube-apiserver and
// controller manager, bob's deletion of a ConfigMap is one alert in a real
// Alertmanager and one webhook message whose signature verifies; carol's
// deletion of a namespace holding 20 ConfigMaps is one message naming her
// and counting the namespace controller's cascade.
func TestNotificationsOnARealControlPlane(t *testing.T) {
	am := alertmanager.Start(t)
	inbox := &hookInbox{}
	const secret = "e2e-hook-secret"
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		inbox.mu.Lock()
		defer inbox.mu.Unlock()
		if err := notify.Verify([]byte(secret), body, r.Header.Get(notify.HeaderSignature), time.Now(), 5*time.Minute); err != nil {
			inbox.forged++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var in notify.Incident
		if err := json.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		inbox.msgs = append(inbox.msgs, in)
	}))
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	secretPath := filepath.Join(dir, "hook-secret")
	configPath := filepath.Join(dir, "notify.yaml")
	if err := os.WriteFile(secretPath, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf("destinations:\n- {name: am, type: alertmanager, url: %q}\n- {name: hook, type: webhook, url: %q, secretFile: %q}\n",
		am, hook.URL, secretPath)
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// The window holds a namespace's deletion and the controller's cascade.
	w := startWorldWith(t, worldOptions{files: []string{"testdata/notify-rules.yaml"},
		notify: app.NotifyOptions{ConfigFile: configPath, Window: 15 * time.Second}})
	ctx := context.Background()

	t.Run("a ConfigMap deleted by bob", func(t *testing.T) {
		const ns = "e2e-notify-cm"
		w.namespace(t, ns)
		alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
			Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}))(t)
		if err := bob.CoreV1().ConfigMaps(ns).Delete(ctx, "app-config", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 90*time.Second, "bob's deletion alerted", func() error {
			if n := len(alertmanager.Alerts(t, am, map[string]string{"namespace": ns})); n == 0 {
				return fmt.Errorf("no alert")
			}
			if n := len(inbox.find(notify.KindChanges, ns)); n == 0 {
				return fmt.Errorf("no webhook message")
			}
			return nil
		})
		w.notificationsDrained(t)
		alerts := alertmanager.Alerts(t, am, map[string]string{"namespace": ns})
		if len(alerts) != 1 || alerts[0].Labels["user"] != "bob" || alerts[0].Labels["resource"] != "configmaps" ||
			alerts[0].Annotations["undo"] != "kubectl record restore configmaps/app-config -n "+ns {
			t.Errorf("alerts: %+v; want one, bob's, with the restore command", alerts)
		}
		msgs := inbox.find(notify.KindChanges, ns)
		if len(msgs) != 1 || msgs[0].Initiator == nil || msgs[0].Initiator.User != "bob" || msgs[0].Count != 1 {
			t.Errorf("webhook messages: %+v; want one, bob's", msgs)
		}
	})

	t.Run("a namespace deleted by carol with 20 objects", func(t *testing.T) {
		const ns = "e2e-notify-ns"
		w.namespace(t, ns)
		alice, carol := w.kube(t, "alice"), w.kube(t, "carol")
		for i := range 20 {
			ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)},
				Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}))(t)
		}
		w.allow(t, "", "carol-deletes-notify-namespaces", "carol", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"delete"}})
		eventually(t, 10*time.Second, "carol deletes the namespace", func() error {
			return carol.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		eventually(t, 2*time.Minute, "the namespace's deletion notified", func() error {
			msgs := inbox.find(notify.KindNamespaceDeletion, ns)
			if len(msgs) == 0 || msgs[0].ByResource["configmaps"] < 20 {
				return fmt.Errorf("messages so far: %+v", msgs)
			}
			return nil
		})
		w.notificationsDrained(t)
		msgs := inbox.find(notify.KindNamespaceDeletion, ns)
		if len(msgs) != 1 {
			t.Fatalf("%d messages for the namespace's deletion, want 1: %+v", len(msgs), msgs)
		}
		m := msgs[0]
		if m.Initiator == nil || m.Initiator.User != "carol" || m.Cascade < 20 || m.ByResource["configmaps"] < 20 {
			t.Errorf("message: initiator %+v, cascade %d, by resource %v; want carol and the 20 ConfigMaps", m.Initiator, m.Cascade, m.ByResource)
		}
		if n := len(alertmanager.Alerts(t, am, map[string]string{"namespace": ns, "incident": notify.KindNamespaceDeletion})); n != 1 {
			t.Errorf("%d alerts for the namespace's deletion, want 1", n)
		}
	})
	inbox.mu.Lock()
	defer inbox.mu.Unlock()
	if inbox.forged != 0 {
		t.Errorf("%d webhook messages whose signature did not verify", inbox.forged)
	}
}

// notificationsDrained waits until the outbox holds nothing unsent.
func (w *world) notificationsDrained(t *testing.T) {
	t.Helper()
	eventually(t, 90*time.Second, "the notification outbox drained", func() error {
		if n := w.count(t, `SELECT count(*) FROM notification_outbox WHERE message_id IS NULL`) +
			w.count(t, `SELECT count(*) FROM notification_messages WHERE sent_at IS NULL AND dropped_at IS NULL`); n != 0 {
			return fmt.Errorf("%d rows or messages unsent", n)
		}
		return nil
	})
}
