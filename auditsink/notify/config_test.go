package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	write := func(s string) string {
		p := filepath.Join(t.TempDir(), "notify.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadConfig(write(`
destinations:
- {name: am, type: alertmanager, url: "http://am:9093", tenants: ["team-*"], timeout: 3s}
- {name: hook, type: webhook, url: "https://h.example/x", secretFile: /s}
- {name: chat, type: slack, urlFile: /u, rate: 0.5, burst: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	am := c.Destinations[0]
	if am.Timeout.Duration != 3*time.Second || am.Rate != DefaultRate || am.Burst != DefaultBurst || am.ResolveAfter.Duration != DefaultResolveAfter {
		t.Errorf("defaults: %+v", am)
	}
	for _, tt := range []struct {
		dest, ns string
		trusted  bool
		want     bool
	}{
		{"am", "team-a", false, true}, {"am", "prod", false, false}, {"hook", "prod", false, false},
		{"hook", "options-record", true, true}, {"nope", "options-record", true, false},
	} {
		if got := c.Allowed(tt.dest, tt.ns, tt.trusted); got != tt.want {
			t.Errorf("Allowed(%s, %s, %v) = %v, want %v", tt.dest, tt.ns, tt.trusted, got, tt.want)
		}
	}
	for _, bad := range []struct{ yaml, want string }{
		{`destinations: [{name: x, type: pager, url: "http://a"}]`, "type"},
		{`destinations: [{name: x, type: webhook, url: "http://a"}]`, "secretFile"},
		{`destinations: [{name: x, type: slack}]`, "url or urlFile"},
		{`destinations: [{name: x, type: slack, url: "file:///etc/passwd"}]`, "http or https"},
		{`destinations: [{name: X, type: slack, url: "http://a"}]`, "DNS label"},
		{`destinations: [{name: x, type: slack, url: "http://a"}, {name: x, type: slack, url: "http://b"}]`, "twice"},
		{`destinations: [{name: x, type: slack, url: "http://a", secret: y}]`, "unknown field"},
	} {
		if _, err := LoadConfig(write(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error about %q", bad.yaml, err, bad.want)
		}
	}
}
