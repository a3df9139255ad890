package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/activity"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/deletions"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/diff"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/export"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/history"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/manifest"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/plan"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/restore"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmd/ui"
	recordversion "github.com/options-record/options-record/cmd/kubectl-record/app/cmd/version"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
)

// verbs are the plugin's commands: a new verb is one line here.
var verbs = []func(*cmdutil.Factory) *cobra.Command{
	deletions.NewCmdDeletions,
	history.NewCmdHistory,
	diff.NewCmdDiff,
	manifest.NewCmdManifest,
	restore.NewCmdRestore,
	plan.NewCmdPlan,
	activity.NewCmdActivity,
	export.NewCmdExport,
	ui.NewCmdUI,
}

// Main runs the plugin with args and returns its exit code.
func Main(args []string, streams genericiooptions.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// An error may quote what the server answered, which may quote a
	// recorded string.
	fmt.Fprintln(streams.ErrOut, "error:", escape.Line(err.Error()))
	return cmdutil.ExitCode(err)
}

// NewCommand returns the kubectl-record command tree.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	f := cmdutil.NewFactory(streams)
	root := &cobra.Command{
		Use:   "kubectl-record",
		Short: "Who changed or deleted what, what it looked like before, and put it back",
		Long: `kubectl record asks the Options Record of this cluster (the aggregated API
record.optionsrecord.io) who deleted or changed an object, shows its versions,
and restores one, as you: your RBAC decides what you see and what you may
write back.`,
		Example: `  kubectl record deletions -n shop                 # who deleted what in shop
  kubectl record history cm/app-config -n shop     # every version, across re-creations
  kubectl record manifest deploy/web -n shop       # a clean manifest of the newest version
  kubectl record restore cm/app-config -n shop     # dry run, confirm, restore as you`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// A command that read the record notes, after its output, a source
		// that may not have delivered the newest changes yet.
		// (Not while the shell completes a word: it would show there.)
		PersistentPostRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Name() != cobra.ShellCompRequestCmd && cmd.Name() != cobra.ShellCompNoDescRequestCmd {
				f.PrintLagNotes()
			}
		},
		// Run by kubectl as a plugin: help and completion say "kubectl record".
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl record"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.Usage(err) })
	f.AddFlags(root.PersistentFlags())
	root.AddGroup(&cobra.Group{ID: "incident", Title: "Incident commands:"})
	for _, verb := range verbs {
		c := verb(f)
		c.GroupID = "incident"
		root.AddCommand(c)
	}
	root.AddCommand(recordversion.NewCommand(streams))
	return root
}
