package diff

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	historydiff "github.com/options-record/options-record/api/history/diff"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	from, to     string
	serverFields bool
	status       bool
	color        string
}

// NewCmdDiff returns kubectl record diff.
func NewCmdDiff(f *cmdutil.Factory) *cobra.Command {
	d := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "diff TYPE/NAME",
		Short: "What changed between two versions, or between a version and the live object",
		Long: `Show what changed, as kubectl diff does: by default the object's newest
recorded change (the state before it, then after); with --from and --to any
two versions (from kubectl record history), or a version and the live object
(--to live: what a restore of that version would change).

List elements are matched as the apiserver matches them (containers, env and
volumes by name, ports by port...): a container inserted in the middle is one
insertion. Server-set fields (managedFields, resourceVersion, uid, timestamps)
and status are hidden unless asked.`,
		Example: `  kubectl record diff deploy/web -n shop                    # the newest change
  kubectl record diff cm/app-config -n shop --from app-config-3f9a2c1b --to live
  kubectl record diff deploy web -n shop --from web-7e21 --to web-c0ff --show-status`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: f.CompleteObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return d.run(cmd, args) },
	}
	cmd.Flags().StringVar(&d.from, "from", "", "The version to compare from, by its short name (app-config-3f9a2c1b, or a unique prefix of its digits) or long name (default: the state before the newest change)")
	cmd.Flags().StringVar(&d.to, "to", "", "The version to compare to, or live (default: the newest version)")
	_ = cmd.RegisterFlagCompletionFunc("from", f.CompleteVersions)
	_ = cmd.RegisterFlagCompletionFunc("to", func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		names, dir := f.CompleteVersions(cmd, args, toComplete)
		return append([]string{"live"}, names...), dir
	})
	cmd.Flags().BoolVar(&d.serverFields, "show-server-fields", false, "Compare server-set metadata too (resourceVersion, generation, uid, timestamps; never managedFields)")
	cmd.Flags().BoolVar(&d.status, "show-status", false, "Compare status too")
	cmd.Flags().StringVar(&d.color, "color", "auto", "Colour the diff: auto (on a terminal), always or never")
	return cmd
}

func (d *options) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	switch d.color {
	case "auto", "always", "never":
	default:
		return cmdutil.Usagef("--color %s: want auto, always or never", d.color)
	}
	t, err := d.Target(args, true)
	if err != nil {
		return err
	}
	var from, to cmdutil.Side
	switch {
	case d.from == "" && d.to == "":
		c, name, err := d.newestChange(ctx, t)
		if err != nil {
			return err
		}
		if from.State, err = cmdutil.RawState(c.PriorState); err != nil {
			return err
		}
		if c.Verb == "delete" || c.Verb == "deletecollection" {
			to.State = nil // its state is the last one; after it, nothing
		} else if to.State, err = cmdutil.RawState(c.State); err != nil {
			return err
		}
		from.Label = "before " + cmdutil.ShortName(c, name)
		to.Label = fmt.Sprintf("%s (%s by %s, %s ago)", cmdutil.ShortName(c, name), c.Verb, format.ActorOf(c), format.Age(c.ChangedAt.Time))
		if from.State == nil && c.Verb != "create" {
			return cmdutil.WithExitCode(cmdutil.ExitNotFound, fmt.Errorf("the record holds no state from before the newest change %s: see kubectl record history", name))
		}
	default:
		if d.from == "" {
			return cmdutil.Usagef("--to without --from: say which version to compare from")
		}
		if from, err = d.VersionSide(ctx, t, d.from); err != nil {
			return err
		}
		switch d.to {
		case "live":
			if to, err = d.LiveSide(ctx, t); err != nil {
				return err
			}
		case "":
			c, name, err := d.Version(ctx, t, "")
			if err != nil {
				return err
			}
			if to.State, err = cmdutil.RawState(c.State); err != nil {
				return err
			}
			to.Label = cmdutil.ShortName(c, name) + " (newest)"
		default:
			if to, err = d.VersionSide(ctx, t, d.to); err != nil {
				return err
			}
		}
	}
	changes := historydiff.Diff(from.State, to.State, historydiff.Options{IncludeStatus: d.status, IncludeServerFields: d.serverFields})
	colored := d.color == "always" || d.color == "auto" && printers.AllowsColorOutput(d.Streams.Out)
	return writeDiff(d.Streams.Out, fmt.Sprintf("%s/%s", t.Resource, t.Name), from.Label, to.Label, changes, colored)
}

// newestChange is the object's newest recorded change, with its states.
func (d *options) newestChange(ctx context.Context, t *cmdutil.Target) (*record.ChangeRecord, string, error) {
	_, _, metas, err := d.Versions(ctx, t, nil, 1)
	if err != nil {
		return nil, "", err
	}
	if len(metas) == 0 {
		return nil, "", cmdutil.WithExitCode(cmdutil.ExitNotFound, fmt.Errorf("no recorded change of %s/%s (that you may see)", t.Resource, t.Name))
	}
	return d.Version(ctx, t, metas[0].Name)
}

// writeDiff prints changes as a unified diff per changed path: the old
// value's lines after -, the new one's after +, as YAML. Every value was
// written by some cluster user: control characters are escaped, and
// nothing from the record can end a line or drive the terminal.
func writeDiff(w io.Writer, object, fromLabel, toLabel string, changes []historydiff.Change, colored bool) error {
	red, green, cyan, reset := "", "", "", ""
	if colored {
		red, green, cyan, reset = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[0m"
	}
	fmt.Fprintf(w, "diff %s\n--- %s\n+++ %s\n", format.Cell(object), format.Cell(fromLabel), format.Cell(toLabel))
	if len(changes) == 0 {
		fmt.Fprintln(w, "(no difference in the fields compared)")
		return nil
	}
	for _, c := range changes {
		path := c.Path
		if path == "" {
			path = "/"
		}
		fmt.Fprintf(w, "%s@@ %s (%s) @@%s\n", cyan, format.Cell(path), c.Op, reset)
		if c.Op != "add" {
			for _, l := range format.ValueLines(c.From) {
				fmt.Fprintf(w, "%s-%s%s\n", red, l, reset)
			}
		}
		if c.Op != "remove" {
			for _, l := range format.ValueLines(c.To) {
				fmt.Fprintf(w, "%s+%s%s\n", green, l, reset)
			}
		}
	}
	return nil
}
