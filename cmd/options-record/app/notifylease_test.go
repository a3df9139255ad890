package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotifyLeaseOutlastsTimeouts checks that serve refuses a notification
// lease that a send may outlast (another replica would send the message
// alongside it), before it opens anything, and takes one that it may not.
// It runs Serve's checks (Validate, then newIngest, which load the
// destinations) and nothing that opens a database: a check that regressed
// fails here instead of starting one.
func TestNotifyLeaseOutlastsTimeouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "notify.yaml")
	if err := os.WriteFile(cfg, []byte("destinations:\n  - {name: hook, type: webhook, url: \"http://h.example\", secretFile: /s, timeout: 10s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(lease time.Duration) error {
		o := ServeOptions{Notify: NotifyOptions{ConfigFile: cfg, Lease: lease}, Database: DatabaseOptions{DataDir: dir}, Cluster: "default"}
		if err := o.Validate(); err != nil {
			return err
		}
		_, err := newIngest(o, slog.New(slog.DiscardHandler))
		return err
	}
	for _, tc := range []struct {
		lease   time.Duration
		wantErr string
	}{
		{10 * time.Second, "--notify-lease 10s does not outlast destination hook's timeout 10s by 2s"},
		{11 * time.Second, "--notify-lease 11s does not outlast destination hook's timeout 10s by 2s"},
		{2 * time.Second, "--notify-lease 2s is shorter than 5s"},
	} {
		if err := check(tc.lease); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("lease %s: %v, want an error with %q", tc.lease, err, tc.wantErr)
		}
	}
	// Longer than the timeout and the margin: taken.
	if err := check(12 * time.Second); err != nil {
		t.Errorf("lease 12s with a 10s timeout: %v", err)
	}
}
