package history

import (
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	out    *cmdutil.PrintFlags
	window cmdutil.Window
}

// NewCmdHistory returns kubectl record history.
func NewCmdHistory(f *cmdutil.Factory) *cobra.Command {
	h := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "history TYPE/NAME",
		Short: "Every recorded version of an object, across re-creations",
		Long: `List every recorded change of the object, newest first: when, the verb, who
made it (and whom they acted as; the garbage collector and the namespace
controller as <garbage-collector> and <namespace-controller>, a user name
that begins with < quoted), and the version's short name, which diff
(--from, --to), manifest and restore take with --version (-o wide adds the
full user name and the long name, which they take too). An object deleted
and created again under the same name shows each incarnation (a new UID).`,
		Example: `  kubectl record history cm/app-config -n shop
  kubectl record history deploy web -n shop --since 24h -o wide
  kubectl record history clusterrole/view -o yaml`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: f.CompleteObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return h.run(cmd, args) },
	}
	h.out = cmdutil.NewPrintFlags(cmd)
	h.window.AddFlags(cmd)
	return cmd
}

func (h *options) run(cmd *cobra.Command, args []string) error {
	t, err := h.Target(args, true)
	if err != nil {
		return err
	}
	extra, err := h.window.Selectors()
	if err != nil {
		return err
	}
	list, recs, metas, err := h.Versions(cmd.Context(), t, extra, h.window.Limit)
	if err != nil {
		return err
	}
	table, wide := h.out.Table()
	if !table {
		return h.out.Print(h.Streams.Out, list)
	}
	if len(recs) == 0 {
		return cmdutil.WithExitCode(cmdutil.ExitNotFound, fmt.Errorf("no recorded change of %s/%s (that you may see)", t.Resource, t.Name))
	}
	return format.PrintTable(h.Streams.Out, columns, tableRows(recs, metas), false, wide)
}

// columns are the table's columns; the wide ones come last. BY names the
// garbage collector and the namespace controller by their words
// (format.DeleterCell, the rule of the deletions' tables), so that a
// cascade's delete fits 120 columns; -o wide adds USER, the full name.
var columns = format.Columns([]string{"CHANGED", "VERB", "BY", "UID", "RESTORABLE", "VERSION"},
	[]string{"RESOURCE-VERSION", "SUBRESOURCE", "INITIATED-BY", "USER", "USER-AGENT", "LONG-NAME"})

// tableRows are the table's rows, one a recorded version.
func tableRows(recs []record.ChangeRecord, metas []metav1.ObjectMeta) []metav1.TableRow {
	var rows []metav1.TableRow
	for i, r := range recs {
		by, user, agent := "<baseline>", "", ""
		if r.Actor != nil {
			by, user, agent = format.DeleterCell(r.Actor.Username, r.Actor.ImpersonatedUser), format.ActorCell(r.Actor.Username, r.Actor.ImpersonatedUser), format.Cell(r.Actor.UserAgent)
		}
		verb := r.Verb
		if r.Subresource != "" {
			verb += "/" + format.Cell(r.Subresource)
		}
		initiated := ""
		if r.InitiatedVia != "" {
			initiated = format.Cell(r.InitiatedBy) + " (" + r.InitiatedVia + ")"
		}
		rows = append(rows, metav1.TableRow{Cells: []any{format.Age(r.ChangedAt.Time), verb, by, format.Short(r.Object.UID, 8),
			fmt.Sprint(r.Restorable), cmdutil.ShortName(&recs[i], metas[i].Name), format.CellOrNone(format.Cell(r.ResourceVersion)), format.CellOrNone(format.Cell(r.Subresource)),
			format.CellOrNone(initiated), format.CellOrNone(user), format.CellOrNone(agent), format.Cell(metas[i].Name)}})
	}
	return rows
}
