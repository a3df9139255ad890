package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/yaml"
)

// stamp is what the Makefile's VERSION_LDFLAGS passes to the linker, with
// values no default could produce.
const stampPkg = "github.com/options-record/options-record/api/version"

var stamp = map[string]string{"Version": "v9.8.7-test.1", "Commit": "0123456789abcdef0123456789abcdef01234567", "BuildDate": "2031-02-03T04:05:06Z"}

func ldflags() string {
	var b strings.Builder
	for k, v := range stamp {
		b.WriteString(" -X " + stampPkg + "." + k + "=" + v)
	}
	return b.String()
}

// TestVersionPrintsTheLinkerStamp builds options-record as the Makefile does
// (-ldflags -X of api/version) and runs `version`, `-o json` and `-o yaml`:
// each prints what the linker was given.
func TestVersionPrintsTheLinkerStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "options-record")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags(), "-o", bin, ".")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("%s %v: %v", bin, args, err)
		}
		return out
	}
	text := string(run("version"))
	for _, v := range stamp {
		if !strings.Contains(text, v) {
			t.Errorf("version printed %q, which lacks %q", text, v)
		}
	}
	want := apimachineryversion.Info{Major: "9", Minor: "8", GitVersion: stamp["Version"], GitCommit: stamp["Commit"], GitTreeState: "clean",
		BuildDate: stamp["BuildDate"], GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	for _, format := range []string{"json", "yaml"} {
		var got apimachineryversion.Info
		out := run("version", "-o", format)
		var err error
		if format == "json" {
			err = json.Unmarshal(out, &got)
		} else {
			err = yaml.UnmarshalStrict(out, &got)
		}
		if err != nil {
			t.Fatalf("version -o %s: %v\n%s", format, err, out)
		}
		if got != want {
			t.Errorf("version -o %s:\n%+v\nwant\n%+v", format, got, want)
		}
	}
	if out, err := exec.Command(bin, "version", "-o", "xml").CombinedOutput(); err == nil || cmdExit(err) != 2 || !strings.Contains(string(out), "--output") {
		t.Errorf("version -o xml: %v %s; want a usage error (exit 2)", err, out)
	}
}

func cmdExit(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
