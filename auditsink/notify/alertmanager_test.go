package notify_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/store/pgtest"
)

// alertmanager starts the real Alertmanager (built from its Go module by
// test/ambuild/build.sh, cached) on a listener this test bound, and
// returns its base URL.
func alertmanager(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("OPTIONS_RECORD_ALERTMANAGER")
	if bin == "" {
		out, err := exec.Command("bash", filepath.Join("..", "..", "test", "ambuild", "build.sh")).Output()
		if err != nil {
			pgtest.Unavailable(t, "Alertmanager", "make test", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		bin = lines[len(lines)-1]
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(conf, []byte("route: {receiver: none}\nreceivers: [{name: none}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// Socket activation hands it the listener (fd 3): LISTEN_PID must be
	// its own pid, which exec keeps from the shell's.
	cmd := exec.Command("sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, bin,
		"--config.file="+conf, "--storage.path="+filepath.Join(dir, "data"), "--web.systemd-socket",
		"--cluster.listen-address=", "--log.level=warn")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		pgtest.Unavailable(t, "Alertmanager", "make test", err)
	}
	f.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if i == 300 {
			t.Fatalf("Alertmanager not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestConfigMapDeletedByBobAlertmanager: bob's deletion of a ConfigMap is
// one alert in a real Alertmanager, queried through its v2 API, labelled to
// route and silence on and carrying the restore command.
func TestConfigMapDeletedByBobAlertmanager(t *testing.T) {
	am := alertmanager(t)
	cfg := &notify.Config{Destinations: []notify.Destination{{Name: "am", Type: notify.TypeAlertmanager, URL: am}}}
	r := newRig(t, cfg, rule("prod", "", "am"))
	r.ingest(event(t, "delete-configmap"))
	reg := r.start(notify.Options{})
	r.drained(t)
	if got := metricValue(t, reg, "options_record_notifications_sent_total", "am"); got != 1 {
		t.Fatalf("sent_total %v, want 1", got)
	}
	q := url.Values{"filter": {fmt.Sprintf("alertname=%q", notify.AlertName)}}
	resp, err := http.Get(am + "/api/v2/alerts?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		Status      struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
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
