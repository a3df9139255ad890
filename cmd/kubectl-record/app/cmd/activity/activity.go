package activity

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	window        cmdutil.Window
	allNamespaces bool
	wide          bool
}

// NewCmdActivity returns kubectl record activity.
func NewCmdActivity(f *cmdutil.Factory) *cobra.Command {
	a := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "activity --user USER",
		Short: "What one identity did: its changes, and the writes refused to it",
		Long: `List what USER changed, and the writes the cluster refused them (403, 409,
422...), newest first, in the namespace (-n), in every namespace you may read
(-A), and the cluster-scoped objects. Only objects you may read are shown.`,
		Example: `  kubectl record activity --user mallory -A --since 24h
  kubectl record activity --user system:serviceaccount:ci:deployer -n shop -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.run(cmd.Context()) },
	}
	a.window.AddFlags(cmd)
	cmd.Flags().BoolVarP(&a.allNamespaces, "all-namespaces", "A", false, "Every namespace you may read")
	var output string
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide: more columns")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch output {
		case "":
		case "wide":
			a.wide = true
		default:
			return cmdutil.Usagef("-o %s: activity prints a table (or -o wide); kubectl record history and deletions take every format", output)
		}
		return nil
	}
	return cmd
}

// act is one row of the activity: a change or a refused attempt.
type act struct {
	at                time.Time
	verb, subresource string
	object            record.ObjectReference
	as, agent, result string
	// name is the short name of the change or attempt (kubectl get
	// change NAME, kubectl get attempt NAME take it).
	name string
}

func (a *options) run(ctx context.Context) error {
	if a.window.User == "" {
		return cmdutil.Usagef("--user is required: whose activity")
	}
	sel, err := a.window.Selectors()
	if err != nil {
		return err
	}
	rc, err := a.Record()
	if err != nil {
		return err
	}
	ns := ""
	if !a.allNamespaces {
		if ns, err = a.Namespace(); err != nil {
			return err
		}
	}
	opts := metav1.ListOptions{FieldSelector: strings.Join(sel, ",")}
	var acts []act
	limit := a.window.Limit
	where := "in namespace " + ns
	if ns == "" {
		where = "in any namespace"
	}
	changes, err := cmdutil.Collect(opts, limit, func(o metav1.ListOptions) ([]record.Change, string, error) {
		l, err := rc.Changes(ns).List(ctx, o)
		if err != nil {
			return nil, "", cmdutil.Explain(err, "list changes "+where)
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return err
	}
	for _, c := range changes {
		acts = append(acts, changeAct(c.ChangeRecord, c.Name))
	}
	attempts, err := cmdutil.Collect(opts, limit, func(o metav1.ListOptions) ([]record.Attempt, string, error) {
		l, err := rc.Attempts(ns).List(ctx, o)
		if err != nil {
			return nil, "", cmdutil.Explain(err, "list attempts "+where)
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return err
	}
	for _, at := range attempts {
		acts = append(acts, attemptAct(at.AttemptRecord, at.Name))
	}
	// Cluster-scoped objects, when the caller may read them.
	cluster, _ := cmdutil.Collect(opts, limit, func(o metav1.ListOptions) ([]record.ClusterChange, string, error) {
		l, err := rc.ClusterChanges().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
	for _, c := range cluster {
		acts = append(acts, changeAct(c.ChangeRecord, c.Name))
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].at.After(acts[j].at) })
	if int64(len(acts)) > limit {
		acts = acts[:limit]
	}
	if len(acts) == 0 {
		fmt.Fprintf(a.Streams.ErrOut, "No activity of %s recorded (that you may see).\n", format.Cell(a.window.User))
		return nil
	}
	return format.PrintTable(a.Streams.Out, columns, tableRows(acts), false, a.wide)
}

// columns are the table's columns; the wide ones come last.
var columns = format.Columns([]string{"WHEN", "VERB", "RESOURCE", "NAMESPACE", "OBJECT", "RESULT", "NAME"}, []string{"AS", "USER-AGENT"})

// tableRows are the table rows of acts. Every recorded string is a cell:
// a refused request's subresource is whatever its sender wrote.
func tableRows(acts []act) []metav1.TableRow {
	var rows []metav1.TableRow
	for _, x := range acts {
		verb := x.verb
		if x.subresource != "" {
			verb += "/" + format.Cell(x.subresource)
		}
		rows = append(rows, metav1.TableRow{Cells: []any{format.Age(x.at), verb, format.ResourceCell(x.object), format.CellOrNone(format.Cell(x.object.Namespace)),
			format.Cell(x.object.Name), x.result, format.CellOrNone(x.name), format.CellOrNone(x.as), format.CellOrNone(x.agent)}})
	}
	return rows
}

func changeAct(c record.ChangeRecord, name string) act {
	x := act{at: c.ChangedAt.Time, verb: c.Verb, subresource: c.Subresource, object: c.Object, result: "done",
		name: shortname.OfLong(c.Object.Name, name)}
	if c.Actor != nil {
		x.as, x.agent = format.Cell(c.Actor.ImpersonatedUser), format.Cell(c.Actor.UserAgent)
		if c.Actor.ImpersonatedUser == "" {
			x.as = ""
		}
	}
	return x
}

func attemptAct(r record.AttemptRecord, name string) act {
	x := act{at: r.AttemptedAt.Time, verb: r.Verb, subresource: r.Subresource, object: r.Object, name: shortname.OfLong(r.Object.Name, name),
		result: fmt.Sprintf("refused %d %s", r.Result.Code, format.Cell(r.Result.Reason)), agent: format.Cell(r.Actor.UserAgent)}
	if r.Actor.ImpersonatedUser != "" {
		x.as = format.Cell(r.Actor.ImpersonatedUser)
	}
	return x
}
