package ui

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdtesting"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	uiserver "github.com/options-record/options-record/cmd/kubectl-record/app/ui"
)

// TestFieldSelectorValuesStayValues: a recorded name or a user holding
// "," and "=" (a Role may be named "a,object.name=deployer") is sent by
// the page as one escaped value, and parsed by the server (as the
// kube-apiserver parses it) as that one value: it cannot add a
// requirement that selects another object's history.
func TestFieldSelectorValuesStayValues(t *testing.T) {
	const hostile = `a,object.name=deployer\`
	server, read := cmdtesting.FieldSelectorServer(t)
	f := cmdutil.NewFactory(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	flags := pflag.NewFlagSet("kubectl-record", pflag.ContinueOnError)
	f.AddFlags(flags)
	if err := flags.Parse([]string{"--record-server", server, "--record-token", "t0ken"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&backend{f.InNamespace("shop")}).Changes(context.Background(), uiserver.Query{Namespace: "shop", Since: 1e9, User: hostile, Name: hostile}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"changes: actor.username=" + hostile + " | object.name=" + hostile + " | since=-1s",
		"attempts: actor.username=" + hostile + " | object.name=" + hostile + " | since=-1s",
	}
	if got := read(); !slices.Equal(got, want) {
		t.Errorf("the server read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
