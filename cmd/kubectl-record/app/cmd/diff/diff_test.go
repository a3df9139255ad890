package diff

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	historydiff "github.com/options-record/options-record/api/history/diff"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdtesting"
)

// TestDiffOutput: the keyed diff of a Deployment whose container was
// inserted in the middle, and a change whose values hold control
// characters, as the terminal shows them (testdata/diff*.golden).
func TestDiffOutput(t *testing.T) {
	load := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "api", "history", "diff", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	var out bytes.Buffer
	changes := historydiff.Diff(load("deployment-before.yaml"), load("deployment-after.yaml"), historydiff.Options{})
	if err := writeDiff(&out, "deployments.apps/web", "v1 (update by bob, 2m ago)", "live (resourceVersion 57)", changes, false); err != nil {
		t.Fatal(err)
	}
	cmdtesting.Golden(t, "diff-deployment.golden", out.Bytes())

	out.Reset()
	hostile := historydiff.Diff(map[string]any{"data": map[string]any{"motd": "hello"}},
		map[string]any{"data": map[string]any{"motd": "line1\nline2\x1b[2J", "evil\u202e": "x\ry"}}, historydiff.Options{})
	if err := writeDiff(&out, "configmaps/a\nb", "from", "to\x1b]0;title\x07", hostile, true); err != nil {
		t.Fatal(err)
	}
	cmdtesting.Golden(t, "diff-hostile.golden", out.Bytes())
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.ContainsAny(strings.NewReplacer("\x1b[31m", "", "\x1b[32m", "", "\x1b[36m", "", "\x1b[0m", "").Replace(l), "\x1b\r\x07") {
			t.Errorf("a control character reaches the terminal: %q", l)
		}
	}
}
