package shipcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest this test reads.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewInstallsThePlugin: `make plugin`'s script builds the archive of
// this machine's platform and the krew manifest naming it; the manifest's
// fields are those krew needs and its sha256 is the archive's; and krew
// itself (built from its module, hack/tools/krew) installs the plugin
// from them, as an operator would, and refuses an archive that is not the
// one the manifest names.
func TestKrewInstallsThePlugin(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	out := t.TempDir()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	build := exec.Command("bash", filepath.Join(root, "hack", "plugin", "build.sh"))
	build.Env = append(os.Environ(), "OUT="+out, "PLATFORMS="+platform, "VERSION=v0.1.0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/plugin/build.sh: %v\n%s", err, b)
	}
	manifest := filepath.Join(out, "record.yaml")
	archive := filepath.Join(out, "kubectl-record_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")

	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("record.yaml: %v\n%s", err, data)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "record" ||
		!regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(p.Spec.Version) || p.Spec.ShortDescription == "" ||
		len(p.Spec.ShortDescription) > 50 || p.Spec.Description == "" || !strings.HasPrefix(p.Spec.Homepage, "https://") {
		t.Errorf("manifest fields: %+v", p)
	}
	sum, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(sum)
	if len(p.Spec.Platforms) != 1 {
		t.Fatalf("platforms: %+v, want the one built", p.Spec.Platforms)
	}
	pl := p.Spec.Platforms[0]
	if pl.Sha256 != hex.EncodeToString(h[:]) || pl.Bin != "kubectl-record" ||
		pl.Selector.MatchLabels["os"] != runtime.GOOS || pl.Selector.MatchLabels["arch"] != runtime.GOARCH ||
		!strings.HasSuffix(pl.URI, "/v0.1.0/"+filepath.Base(archive)) {
		t.Errorf("platform %+v, archive sha256 %x", pl, h)
	}
	// The Makefile's default builds the four platforms krew users have.
	mk, err := os.ReadFile(filepath.Join(root, "hack", "make", "plugin.mk"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64") {
		t.Error("make plugin does not build linux and darwin, amd64 and arm64")
	}

	krew := filepath.Join(t.TempDir(), "krew")
	kb := exec.Command("go", "build", "-modfile=hack/tools/krew/go.mod", "-o", krew, "sigs.k8s.io/krew/cmd/krew")
	kb.Dir = root
	if b, err := kb.CombinedOutput(); err != nil {
		t.Fatalf("build krew: %v\n%s", err, b)
	}
	install := func(archive string) (string, string, error) {
		krewRoot := t.TempDir()
		cmd := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archive)
		cmd.Env = append(os.Environ(), "KREW_ROOT="+krewRoot, "HOME="+t.TempDir())
		b, err := cmd.CombinedOutput()
		return krewRoot, string(b), err
	}

	// Another archive than the manifest names is refused.
	tampered := filepath.Join(t.TempDir(), filepath.Base(archive))
	if err := os.WriteFile(tampered, append(sum, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, b, err := install(tampered); err == nil || !strings.Contains(b, "checksum does not match") {
		t.Errorf("krew installed an archive whose sha256 differs: %v\n%s", err, b)
	}

	krewRoot, b, err := install(archive)
	if err != nil {
		t.Fatalf("krew install: %v\n%s", err, b)
	}
	help, err := exec.Command(filepath.Join(krewRoot, "bin", "kubectl-record"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "kubectl record deletions") {
		t.Errorf("the installed plugin: %v\n%s", err, help)
	}
}
