// Package alertmanager runs the real Alertmanager for tests: the binary
// test/ambuild/build.sh builds from Alertmanager's Go module (cached under
// ~/.cache/options-record/alertmanager), started as a process on a
// listener the test bound, and queried through its v2 API.
package alertmanager

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

	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// EnvBinary names an Alertmanager binary to run instead of building one.
const EnvBinary = "OPTIONS_RECORD_ALERTMANAGER"

// Start runs an Alertmanager until the test ends and returns its base URL
// (http://127.0.0.1:port). Without the binary (and no way to build it),
// the test fails under OPTIONS_RECORD_REQUIRE_DEPS and skips otherwise.
func Start(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		out, err := exec.Command("bash", controlplane.RepoFile(t, "test/ambuild/build.sh")).Output()
		if err != nil {
			pgtest.Unavailable(t, "Alertmanager (test/ambuild/build.sh)", "make test", err)
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
	l.Close() // f keeps the socket
	// Socket activation hands it the listener as fd 3: LISTEN_PID must be
	// its own pid, which exec keeps from the shell's. No cluster port.
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
			err = fmt.Errorf("%s", resp.Status)
		}
		if i == 300 {
			t.Fatalf("Alertmanager not ready after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Alert is an alert as GET /api/v2/alerts returns it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

// Alerts returns the alerts matching the label matchers (name="value").
func Alerts(t testing.TB, base string, matchers map[string]string) []Alert {
	t.Helper()
	q := url.Values{}
	for k, v := range matchers {
		q.Add("filter", fmt.Sprintf("%s=%q", k, v))
	}
	resp, err := http.Get(base + "/api/v2/alerts?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v2/alerts: %s", resp.Status)
	}
	var alerts []Alert
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	return alerts
}
