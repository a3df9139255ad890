package restore

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	at    string // --version
	yes   bool
	force bool
}

// NewCmdRestore returns kubectl record restore.
func NewCmdRestore(f *cmdutil.Factory) *cobra.Command {
	r := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "restore TYPE/NAME",
		Short: "Put a recorded version back, as you, after a dry run",
		Long: `Restore the object to a recorded version (the newest the record can restore,
which for a deleted object is its last state, or --version). The restore runs
first as a server-side dry run: what it would do (create or update) and what it
would change in the live object are shown, and you are asked to confirm. Then it
runs for real, as you, restoring the recorded state the dry run showed (pinned by
its digest: if the record was changed in between, nothing is written): your RBAC
decides the write, and the cluster's audit log names you. Without a terminal it refuses unless --yes is given.

If the live object changed since the record's newest version, the restore is
refused (nothing is written): review with kubectl record history, then pass
--force to overwrite.`,
		Example: `  kubectl record restore cm/app-config -n shop
  kubectl record restore deploy/web -n shop --version web-3f9a2c1b --yes`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: f.CompleteObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return r.run(cmd, args) },
	}
	cmd.Flags().StringVar(&r.at, "version", "", "The version (from kubectl record history): its short name (web-3f9a2c1b, or a unique prefix of its digits) or long name; default: the newest the record can restore")
	_ = cmd.RegisterFlagCompletionFunc("version", f.CompleteVersions)
	cmd.Flags().BoolVarP(&r.yes, "yes", "y", false, "Restore without asking (after the dry run is shown)")
	cmd.Flags().BoolVar(&r.force, "force", false, "Restore even if the live object changed since the record's newest version")
	return cmd
}

func (r *options) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	t, err := r.Target(args, true)
	if err != nil {
		return err
	}
	c, version, err := r.Version(ctx, t, r.at)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s/%s", t.Resource, format.Cell(c.Object.Name))
	if c.Object.Namespace != "" {
		what += " in namespace " + format.Cell(c.Object.Namespace)
	}
	spec := record.RestoreSpec{Version: version, Force: r.force}
	dry, err := r.CreateRestore(ctx, t, spec, true)
	if err != nil {
		return err
	}
	out := r.Streams.Out
	fmt.Fprintf(out, "Dry run: restoring %s to version %s (%s by %s, %s ago)\n", what, cmdutil.ShortName(c, version), c.Verb, format.ActorOf(c), format.Age(c.ChangedAt.Time))
	format.DescribeRestore(out, dry)
	if dry.StateDigest != "" {
		fmt.Fprintf(out, "  recorded state: %s\n", format.Cell(dry.StateDigest))
	}
	if dry.Phase != "Succeeded" {
		return refusal(dry, t)
	}
	if dry.Action == "none" {
		fmt.Fprintln(out, "The live object already holds that state: nothing to do.")
		return nil
	}
	if !r.yes {
		f, ok := r.Streams.In.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return cmdutil.WithExitCode(cmdutil.ExitUsage, fmt.Errorf("not restored: no terminal to confirm on; pass --yes to restore %s", what))
		}
		fmt.Fprintf(out, "Restore %s for real, as you? [y/N] ", what)
		answer, _ := bufio.NewReader(r.Streams.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return cmdutil.WithExitCode(cmdutil.ExitUsage, fmt.Errorf("not restored"))
		}
	}
	// What the dry run showed, or nothing: the recorded state is pinned by
	// its digest.
	spec.StateDigest = dry.StateDigest
	done, err := r.CreateRestore(ctx, t, spec, false)
	if err != nil {
		return err
	}
	if done.Phase != "Succeeded" {
		format.DescribeRestore(out, done)
		return refusal(done, t)
	}
	fmt.Fprintf(out, "Restored %s: %s, resourceVersion %s (restore %s).\n", what, done.Action, done.ResourceVersion, done.RestoreID)
	return nil
}

// refusal is the error of a restore that was refused or failed.
func refusal(s *record.RestoreStatus, t *cmdutil.Target) error {
	if s.Code == 409 {
		return cmdutil.WithExitCode(cmdutil.ExitNotRestored, fmt.Errorf("not restored: the live object changed since the record's newest version; review with `kubectl record history %s/%s`, then restore with --force to overwrite it", t.Resource, t.Name))
	}
	return cmdutil.WithExitCode(cmdutil.ExitNotRestored, fmt.Errorf("not restored (%s, %d): %s", s.Phase, s.Code, format.Cell(s.Message)))
}
