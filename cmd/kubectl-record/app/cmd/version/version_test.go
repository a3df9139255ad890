package version

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const stampPkg = "github.com/options-record/options-record/api/version"

// TestVersionPrintsTheLinkerStamp builds kubectl-record with the
// Makefile's kind of -ldflags -X (api/version) and runs `version`, `-o json`
// and `-o yaml`, as kubectl runs a plugin: each prints what the linker was
// given, in kubectl version's shape (clientVersion.gitVersion, ...).
func TestVersionPrintsTheLinkerStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	stamp := map[string]string{"Version": "v9.8.7-test.1", "Commit": "0123456789abcdef0123456789abcdef01234567", "BuildDate": "2031-02-03T04:05:06Z"}
	var ldflags strings.Builder
	for k, v := range stamp {
		ldflags.WriteString(" -X " + stampPkg + "." + k + "=" + v)
	}
	bin := filepath.Join(t.TempDir(), "kubectl-record")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags.String(), "-o", bin, "../../../")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("kubectl-record %v: %v", args, err)
		}
		return out
	}
	text := string(run("version"))
	for _, v := range stamp {
		if !strings.Contains(text, v) {
			t.Errorf("version printed %q, which lacks %q", text, v)
		}
	}
	if !strings.HasPrefix(text, "Client Version: "+stamp["Version"]+"\n") {
		t.Errorf("version printed %q; want kubectl's first line, Client Version: %s", text, stamp["Version"])
	}
	for _, format := range []string{"json", "yaml"} {
		var got Document
		out := run("version", "-o", format)
		var err error
		if format == "json" {
			err = json.Unmarshal(out, &got)
		} else {
			err = yaml.UnmarshalStrict(out, &got)
		}
		if err != nil || got.ClientVersion == nil {
			t.Fatalf("version -o %s: %v\n%s", format, err, out)
		}
		c := got.ClientVersion
		if c.GitVersion != stamp["Version"] || c.GitCommit != stamp["Commit"] || c.BuildDate != stamp["BuildDate"] ||
			c.Major != "9" || c.Minor != "8" || c.GoVersion != runtime.Version() || c.Platform != runtime.GOOS+"/"+runtime.GOARCH {
			t.Errorf("version -o %s: %+v; want the stamp %v", format, *c, stamp)
		}
	}
}
