package deletions_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/options-record/options-record/cmd/kubectl-record/app"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdtesting"
)

// TestFieldSelectorValuesStayValues: a user holding "," and "=" is sent
// as one escaped value and parsed by the server (as the kube-apiserver
// parses it) as that one value: it cannot add a requirement that selects
// other deletions.
func TestFieldSelectorValuesStayValues(t *testing.T) {
	const hostile = `a,object.name=deployer\`
	server, read := cmdtesting.FieldSelectorServer(t)
	var out, errOut bytes.Buffer
	if code := app.Main([]string{"deletions", "-n", "shop", "--user", hostile, "--record-server", server, "--record-token", "t0ken"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != 0 {
		t.Fatalf("deletions: exit %d %s", code, errOut.String())
	}
	want := []string{"deletions: actor.username=" + hostile}
	if got := read(); !slices.Equal(got, want) {
		t.Errorf("the server read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
