package options

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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

// TestValidate checks the options each command refuses before it starts.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		ok   bool
	}{
		{"defaults", nil, true},
		{"bad log level", []string{"--log-level", "loud"}, false},
		{"aggregated without api", []string{"--aggregated-bind-address", ":8445"}, false},
		{"aggregated with api", []string{"--api-bind-address", ":8444", "--aggregated-bind-address", ":8445"}, true},
		{"unknown role", []string{"--roles", "ingest,web"}, false},
		{"both roles", []string{"--roles", "ingest, api"}, true},
		{"api database without the reader's", []string{"--api-database-url", "postgres://api@db/r"}, false},
		{"api database and the reader's", []string{"--database-url", "postgres://reader@db/r", "--api-database-url", "postgres://api@db/r"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewServe()
			fs := FlagSet("serve", o)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
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
		"--database-url", "postgres://reader@db/r", "--api-database-url", "postgres://api@db/r"}
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
}
