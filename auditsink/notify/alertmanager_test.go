package notify_test

import (
	"strings"
	"testing"

	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/test/framework/alertmanager"
)

// TestConfigMapDeletedByBobAlertmanager: bob's deletion of a ConfigMap is
// one alert in a real Alertmanager, queried through its v2 API, labelled to
// route and silence on and carrying the restore command.
func TestConfigMapDeletedByBobAlertmanager(t *testing.T) {
	am := alertmanager.Start(t)
	cfg := &notify.Config{Destinations: []notify.Destination{{Name: "am", Type: notify.TypeAlertmanager, URL: am}}}
	r := newRig(t, cfg, rule("prod", "", "am"))
	r.ingest(event(t, "delete-configmap"))
	reg := r.start(notify.Options{})
	r.drained(t)
	if got := metricValue(t, reg, "options_record_notifications_sent_total", "am"); got != 1 {
		t.Fatalf("sent_total %v, want 1", got)
	}
	alerts := alertmanager.Alerts(t, am, map[string]string{"alertname": notify.AlertName})
	if len(alerts) != 1 {
		t.Fatalf("%d alerts, want 1: %+v", len(alerts), alerts)
	}
	a := alerts[0]
	if a.Labels["user"] != "bob" || a.Labels["namespace"] != "prod" || a.Labels["resource"] != "configmaps" ||
		a.Labels["cluster"] != "default" || a.Labels["notification_key"] == "" || a.Status.State != "active" {
		t.Errorf("alert: %+v", a)
	}
	if a.Annotations["undo"] != "kubectl record restore configmaps/app-config -n prod" || !strings.Contains(a.Annotations["initiator"], "10.0.0.15") {
		t.Errorf("annotations: %+v", a.Annotations)
	}
}
