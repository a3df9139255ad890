package options

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/command-line-flags.txt")

const reference = "../../../../docs/command-line-flags.txt"

// TestFlagReference checks that docs/command-line-flags.txt is what the
// commands' --help prints (make verify runs it). Refresh it with
//
//	go test ./cmd/options-record/app/options -run FlagReference -update
func TestFlagReference(t *testing.T) {
	// Defaults read from the environment are documented as unset.
	t.Setenv("OPTIONS_RECORD_DATABASE_URL", "")
	t.Setenv("OPTIONS_RECORD_API_DATABASE_URL", "")
	t.Setenv("POD_NAME", "")
	var b bytes.Buffer
	b.WriteString("# options-record command-line flags\n#\n# Generated from each command's --help by\n" +
		"# go test ./cmd/options-record/app/options -run FlagReference -update\n# (make verify fails when it is stale).\n")
	for _, c := range Commands() {
		fmt.Fprintf(&b, "\n## options-record %s\n\n%s\n\n", c.Name, c.Summary)
		sections := c.New().Flags()
		for _, name := range sections.Order {
			fmt.Fprintf(&b, "### %s flags\n\n%s\n", name, sections.FlagSets[name].FlagUsagesWrapped(100))
		}
	}
	if *update {
		if err := os.WriteFile(reference, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(reference)
	if err != nil {
		t.Fatalf("%v; run this test with -update", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		p, _ := filepath.Abs(reference)
		t.Errorf("%s differs from the commands' --help; run go test ./cmd/options-record/app/options -run FlagReference -update and commit it", p)
	}
}

// TestValidate checks the cross-flag checks of serve: each refusal names
// what is wrong, and the combinations next to it pass.
func TestValidate(t *testing.T) {
	t.Parallel()
	api := []string{"--api-bind-address", ":8444"}
	cluster := []string{"--kubeconfig", "kc"}
	ca := []string{"--webhook-client-ca", "ca.crt"}
	join := func(ls ...[]string) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l...)
		}
		return out
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" = valid
	}{
		{"defaults", nil, ""},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},

		{"api database without the reader's", []string{"--api-database-url", "postgres://api@db/r"}, "--api-database-url needs --database-url"},
		{"api database and the reader's", []string{"--database-url", "postgres://reader@db/r", "--api-database-url", "postgres://api@db/r"}, ""},

		{"unknown role", []string{"--roles", "ingest,web"}, "--roles: unknown role \"web\": want ingest, api or both"},
		{"both roles", join([]string{"--roles", "ingest, api"}, api), ""},
		{"api role without an address", []string{"--roles", "api"}, "--roles=api needs --api-bind-address"},
		{"ingest role with an API address", join([]string{"--roles", "ingest"}, api), "--api-bind-address without the role api"},
		{"api role with a journal", join([]string{"--roles", "api", "--journal-dir", "j"}, api), "--journal-dir without the role ingest"},
		{"ingest role with a journal", []string{"--roles", "ingest", "--journal-dir", "j"}, ""},
		{"api role with notifications", join([]string{"--roles", "api", "--notify-config", "n.yaml"}, api), "--notify-config without the role ingest"},
		{"ingest role with notifications", []string{"--roles", "ingest", "--notify-config", "n.yaml"}, ""},
		{"notification lease under the minimum", []string{"--notify-config", "n.yaml", "--notify-lease", "4s"}, "--notify-lease 4s is shorter than 5s"},
		{"notification lease at the minimum", []string{"--notify-config", "n.yaml", "--notify-lease", "5s"}, ""},
		{"notification lease without notifications", []string{"--notify-lease", "30s"}, "--notify-lease without --notify-config"},
		{"notification lease, api role", join([]string{"--roles", "api", "--notify-lease", "30s"}, api), "--notify-lease without --notify-config"},
		{"short notification lease, api role", join([]string{"--roles", "api", "--notify-lease", "3s"}, api), "--notify-lease without --notify-config"},
		{"default notification lease, api role", join([]string{"--roles", "api"}, api), ""},
		{"default roles with an API address and a journal", join(api, []string{"--journal-dir", "j"}), ""},
		{"api role with the observing webhook", join([]string{"--roles", "api", "--admission-addr", ":8444"}, api), "--admission-addr without the role ingest"},
		{"ingest role with the observing webhook", []string{"--roles", "ingest", "--admission-addr", ":8444"}, ""},
		{"api role keeping the observer's configuration", join([]string{"--roles", "api", "--admission-webhook-config-name", "o"}, api, cluster), "--admission-webhook-config-name without the role ingest"},
		{"ingest role keeping the observer's configuration", join([]string{"--roles", "ingest", "--admission-webhook-config-name", "o"}, cluster), ""},

		{"GKE push without its service account", []string{"--gke-pubsub-audience", "https://sink.example/gke/pubsub"}, "--gke-pubsub-audience needs --gke-pubsub-service-account"},
		{"GKE push with its service account", []string{"--gke-pubsub-audience", "https://sink.example/gke/pubsub", "--gke-pubsub-service-account", "push@p.iam.gserviceaccount.com"}, ""},

		{"aggregated without api", []string{"--aggregated-bind-address", ":8445"}, "--aggregated-bind-address needs --api-bind-address"},
		{"record door without api", []string{"--record-bind-address", ":8446"}, "--record-bind-address needs --api-bind-address"},
		{"aggregated without a cluster", join(api, []string{"--aggregated-bind-address", ":8445"}), "--aggregated-bind-address needs a cluster"},
		{"record door without a cluster", join(api, []string{"--record-bind-address", ":8446"}), "--record-bind-address needs a cluster"},
		{"aggregated and record door with a cluster", join(api, cluster, []string{"--aggregated-bind-address", ":8445", "--record-bind-address", ":8446"}), ""},
		{"aggregated in cluster", join(api, []string{"--in-cluster", "--aggregated-bind-address", ":8445"}), ""},
		{"aggregated with a context", join(api, []string{"--context", "kind-dev", "--aggregated-bind-address", ":8445"}), ""},
		{"api token with a cluster", join(api, cluster, []string{"--api-token-file", "tok"}), "--api-token-file is for the standalone mode"},
		{"api token standalone", join(api, []string{"--api-token-file", "tok"}), ""},

		{"client CA alone", ca, "--webhook-client-ca without a name allow-list"},
		{"client CA and a token, no name", join(ca, []string{"--webhook-token-file", "tok"}), "--webhook-client-ca without a name allow-list"},
		{"client CA and names", join(ca, []string{"--webhook-client-cn", "kube-apiserver"}), ""},
		{"client CA and a clients file", join(ca, []string{"--webhook-clients-file", "clients.yaml"}), ""},
		{"any certificate, said explicitly", join(ca, []string{"--webhook-allow-any-client-cert"}), ""},
		{"any certificate and names", join(ca, []string{"--webhook-allow-any-client-cert", "--webhook-client-cn", "a"}), "contradicts the names"},
		{"any certificate and a clients file", join(ca, []string{"--webhook-allow-any-client-cert", "--webhook-clients-file", "c.yaml"}), "contradicts the names"},
		{"any certificate without a CA", []string{"--webhook-allow-any-client-cert"}, "--webhook-allow-any-client-cert needs --webhook-client-ca"},
		{"client CA alone, ingest role", join(ca, []string{"--roles", "ingest"}), "--webhook-client-ca without a name allow-list"},
		{"client CA alone, api role (no webhook)", join(ca, api, []string{"--roles", "api"}), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := NewServe()
			if err := FlagSet("serve", o).Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want it valid", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// TestServeConfig checks that flags reach the app's configuration: the API
// and the aggregated API only when their addresses are set, the lists split.
func TestServeConfig(t *testing.T) {
	o := NewServe()
	fs := FlagSet("serve", o)
	args := []string{"--api-bind-address", ":8444", "--api-audiences", "a, b", "--aggregated-bind-address", ":8445",
		"--aggregated-requestheader-allowed-names", "front-proxy-client", "--kubeconfig", "kc", "--roles", "api",
		"--webhook-client-cn", "x", "--webhook-client-cn", "y", "--tenant-secret-data",
		"--database-url", "postgres://reader@db/r", "--api-database-url", "postgres://api@db/r",
		"--resync", "1m", "--status-interval", "2s", "--baseline=false", "--baseline-max-objects", "7", "--identity", "sink-0"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c := o.Config(&bytes.Buffer{})
	if c.API == nil || c.API.Aggregated == nil || c.Kube == nil {
		t.Fatalf("API, Aggregated and Kube must be set: %+v", c)
	}
	if got := fmt.Sprint(c.API.Audiences, c.API.Aggregated.RequestHeaderAllowedNames, c.Roles, c.ClientCNs, c.Rules.TenantSecretData); got != "[a b] [front-proxy-client] [api] [x y] true" {
		t.Errorf("config = %s", got)
	}
	if s := c.Kube.Sync; s.Resync != time.Minute || s.StatusInterval != 2*time.Second || s.Baseline || s.BaselineMaxObjects != 7 || s.Identity != "sink-0" {
		t.Errorf("rule syncer options: %+v", s)
	}
	if c.Database.URL != "postgres://reader@db/r" || c.Database.APIURL != "postgres://api@db/r" {
		t.Errorf("database URLs: %q and the API's %q", c.Database.URL, c.Database.APIURL)
	}
	if c.API.MaxInFlight != 16 || c.MaxBodyBytes != 0 || c.ChunkBytes != 16<<20 || c.Rules.MaxRetention.Hours() != 2160 {
		t.Errorf("defaults lost: %d %d %d %v", c.API.MaxInFlight, c.MaxBodyBytes, c.ChunkBytes, c.Rules.MaxRetention)
	}
	bare := NewServe()
	if err := FlagSet("serve", bare).Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c := bare.Config(&bytes.Buffer{}); c.API != nil || c.Kube != nil {
		t.Errorf("no API or cluster without their flags: API %v, Kube %v", c.API, c.Kube)
	}
	// An observation waits for its audit event, which a managed cluster's
	// log service delivers minutes late (docs/managed-clusters.md, Lag).
	if ttl := bare.Config(&bytes.Buffer{}).Admission.TTL; ttl != 30*time.Minute {
		t.Errorf("--admission-observation-ttl defaults to %v, want 30m: longer than a managed source's delivery lag", ttl)
	}
}

// TestVerifyMinRetention: verify's --min-retention reaches its
// configuration, defaults to store.MinRetention, and may not be shorter.
func TestVerifyMinRetention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		wantErr string
	}{
		{nil, time.Hour, ""},
		{[]string{"--min-retention", "48h"}, 48 * time.Hour, ""},
		{[]string{"--min-retention", "30m"}, 0, "--min-retention 30m0s is shorter than 1h0m0s"},
	} {
		o := NewVerify()
		if err := FlagSet("verify", o).Parse(append([]string{"--log-verifier-key", "k"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: Validate() = %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: Validate() = %v, want an error with %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "":
			if got := o.Config(&bytes.Buffer{}, &bytes.Buffer{}).MinRetention; got != tc.want {
				t.Errorf("%v: MinRetention = %v, want %v", tc.args, got, tc.want)
			}
		}
	}
}
