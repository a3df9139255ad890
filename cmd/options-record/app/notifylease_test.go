package app

import (
	"context"
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
func TestNotifyLeaseOutlastsTimeouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "notify.yaml")
	if err := os.WriteFile(cfg, []byte("destinations:\n  - {name: hook, type: webhook, url: \"http://h.example\", secretFile: /s, timeout: 10s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lease   time.Duration
		wantErr string
	}{
		{10 * time.Second, "--notify-lease 10s is not longer than destination hook's timeout 10s"},
		{2 * time.Second, "--notify-lease 2s is shorter than 5s"},
	} {
		err := Serve(context.Background(), ServeOptions{Notify: NotifyOptions{ConfigFile: cfg, Lease: tc.lease}, Database: DatabaseOptions{DataDir: dir}})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("lease %s: Serve() = %v, want an error with %q", tc.lease, err, tc.wantErr)
		}
	}
	// Longer than the timeout: newIngest takes it.
	o := ServeOptions{Notify: NotifyOptions{ConfigFile: cfg, Lease: 11 * time.Second}, Database: DatabaseOptions{DataDir: dir}, Cluster: "default"}
	if _, err := newIngest(o, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("lease 11s with a 10s timeout: %v", err)
	}
}
