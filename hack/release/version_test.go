package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSourceVersion: a release refuses a tree whose chart or kustomize
// image tag names another version, so a tag cannot ship a stale one.
func TestCheckSourceVersion(t *testing.T) {
	tree := func(chartVersion, appVersion, newTag string) string {
		root := t.TempDir()
		for name, data := range map[string]string{
			ChartDir + "/Chart.yaml": "apiVersion: v2\nname: options-record\nversion: " + chartVersion + "\nappVersion: " + appVersion + "\n",
			ImageComponent:           "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n  - name: options-record\n    newName: ghcr.io/options-record/options-record\n    newTag: " + newTag + "\n",
		} {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	for name, tc := range map[string]struct {
		root, fail string
	}{
		"bumped":           {root: tree("0.2.0", "v0.2.0", "v0.2.0")},
		"stale appVersion": {root: tree("0.2.0", "v0.1.0", "v0.2.0"), fail: "appVersion"},
		"stale version":    {root: tree("0.1.0", "v0.2.0", "v0.2.0"), fail: "Chart.yaml: version"},
		"stale newTag":     {root: tree("0.2.0", "v0.2.0", "v0.1.0"), fail: "newTag"},
		"everything stale": {root: tree("0.1.0", "v0.1.0", "v0.1.0"), fail: "newTag"},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkSourceVersion(tc.root, "v0.2.0")
			switch {
			case tc.fail == "" && err != nil:
				t.Fatal(err)
			case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
				t.Fatalf("checkSourceVersion: %v; want an error naming %s", err, tc.fail)
			}
		})
	}
	// The repository's own files parse.
	if err := checkSourceVersion("../..", "v0.0.0-never"); err == nil || !strings.Contains(err.Error(), "v0.0.0-never") {
		t.Errorf("the repository's tree: %v", err)
	}
}
