package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestPackageChart packages the repository's chart for a release no
// default could produce and loads the archive back with Helm's loader: it
// is options-record-X.Y.Z.tgz, says version X.Y.Z and appVersion vX.Y.Z,
// its values name the release image by digest (values.yaml keeps its
// comments), it renders with every container pinned (packageChart checks
// that), and the same commit gives the same bytes.
func TestPackageChart(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const version = "v0.1.0-chart.1"
	created := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var archives [][]byte
	for range 2 {
		out := t.TempDir()
		path, err := packageChart(root, out, "registry.example/me/options-record", version, testDigest, created)
		if err != nil {
			t.Fatalf("packageChart: %v", err)
		}
		if filepath.Base(path) != "options-record-0.1.0-chart.1.tgz" {
			t.Errorf("packaged as %s", filepath.Base(path))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, b)
		c, err := loader.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Metadata.Version != "0.1.0-chart.1" || c.Metadata.AppVersion != version {
			t.Errorf("version %q appVersion %q", c.Metadata.Version, c.Metadata.AppVersion)
		}
		img, _ := c.Values["image"].(map[string]any)
		if img["digest"] != testDigest || img["repository"] != "registry.example/me/options-record" || img["tag"] != "" {
			t.Errorf("values image: %v", img)
		}
		for _, f := range c.Raw {
			if f.Name == "values.yaml" && !strings.Contains(string(f.Data), "# sha256:...: pins the image") {
				t.Errorf("the packaged values.yaml lost its comments:\n%s", f.Data)
			}
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Errorf("two packagings of one commit differ")
	}
}

// TestCheckChartRefusesUnpinned: the chart of a git checkout, whose
// image.digest is empty, does not pass as a release's.
func TestCheckChartRefusesUnpinned(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	c, err := loader.Load(filepath.Join(root, ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkChart(filepath.Join(root, ChartDir), "ghcr.io/options-record/options-record", c.Metadata.AppVersion, testDigest); err == nil {
		t.Fatal("checkChart passed the unstamped chart")
	} else {
		t.Log(err)
	}
}
