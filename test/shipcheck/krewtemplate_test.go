package shipcheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// TestKrewTemplateMatchesBuild: .krew.yaml, the template krew-release-bot
// fills in on a release, rendered as the bot renders it (the tag, and
// addURIAndSha writing each archive's uri and sha256), is the manifest
// hack/plugin/build.sh writes: the same fields, one platform for each of
// make plugin's, and for the platform built here the same entry, sha256
// included.
func TestKrewTemplateMatchesBuild(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	out := t.TempDir()
	build := exec.Command("bash", filepath.Join(root, "hack", "plugin", "build.sh"))
	build.Env = append(os.Environ(), "OUT="+out, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "VERSION=v0.1.0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/plugin/build.sh: %v\n%s", err, b)
	}
	data, err := os.ReadFile(filepath.Join(out, "record.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var built krewPlugin
	if err := yaml.UnmarshalStrict(data, &built); err != nil {
		t.Fatalf("record.yaml: %v", err)
	}
	shas := map[string]string{}
	for _, p := range built.Spec.Platforms {
		shas[p.URI] = p.Sha256
	}

	tmpl, err := template.New(".krew.yaml").Funcs(template.FuncMap{
		// As krew-release-bot's: the URL is a template of the tag; the
		// sha256 line carries its own four spaces.
		"addURIAndSha": func(url, tag string) (string, error) {
			var b bytes.Buffer
			inner, err := template.New("url").Parse(url)
			if err != nil {
				return "", err
			}
			if err := inner.Execute(&b, struct{ TagName string }{tag}); err != nil {
				return "", err
			}
			sha, ok := shas[b.String()]
			if !ok {
				sha = strings.Repeat("0", 64) // a platform not built here
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", b.String(), sha), nil
		},
	}).ParseFiles(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rendered bytes.Buffer
	if err := tmpl.Execute(&rendered, struct{ TagName string }{"v0.1.0"}); err != nil {
		t.Fatal(err)
	}
	var fromTemplate krewPlugin
	if err := yaml.UnmarshalStrict(rendered.Bytes(), &fromTemplate); err != nil {
		t.Fatalf("the rendered .krew.yaml: %v\n%s", err, rendered.Bytes())
	}

	a, b := fromTemplate, built
	a.Spec.Platforms, b.Spec.Platforms = nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Errorf(".krew.yaml renders\n%+v\nbuild.sh writes\n%+v", a, b)
	}
	var platforms []string
	for _, p := range fromTemplate.Spec.Platforms {
		platforms = append(platforms, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"])
		for _, q := range built.Spec.Platforms {
			if reflect.DeepEqual(p.Selector, q.Selector) && !reflect.DeepEqual(p, q) {
				t.Errorf("%s: .krew.yaml renders\n%+v\nbuild.sh writes\n%+v", platforms[len(platforms)-1], p, q)
			}
		}
	}
	if got := strings.Join(platforms, " "); got != "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64" {
		t.Errorf(".krew.yaml's platforms: %s; want make plugin's", got)
	}
	if len(built.Spec.Platforms) != 1 || shas[built.Spec.Platforms[0].URI] == "" {
		t.Fatalf("build.sh wrote platforms %+v", built.Spec.Platforms)
	}
}
