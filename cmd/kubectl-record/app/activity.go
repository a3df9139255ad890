package app

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

type activityOptions struct {
	*options
	window        window
	allNamespaces bool
	wide          bool
}

func newActivityCommand(o *options) *cobra.Command {
	a := &activityOptions{options: o}
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
	a.window.addFlags(cmd)
	cmd.Flags().BoolVarP(&a.allNamespaces, "all-namespaces", "A", false, "Every namespace you may read")
	var format string
	cmd.Flags().StringVarP(&format, "output", "o", "", "wide: more columns")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch format {
		case "":
		case "wide":
			a.wide = true
		default:
			return usageError{fmt.Errorf("-o %s: activity prints a table (or -o wide); kubectl record history and deletions take every format", format)}
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
}

func (a *activityOptions) run(ctx context.Context) error {
	if a.window.user == "" {
		return usageError{fmt.Errorf("--user is required: whose activity")}
	}
	sel, err := a.window.selectors()
	if err != nil {
		return err
	}
	rc, err := a.record()
	if err != nil {
		return err
	}
	ns := ""
	if !a.allNamespaces {
		if ns, err = a.namespace(); err != nil {
			return err
		}
	}
	opts := metav1.ListOptions{FieldSelector: strings.Join(sel, ",")}
	var acts []act
	limit := a.window.limit
	where := "in namespace " + ns
	if ns == "" {
		where = "in any namespace"
	}
	changes, err := collect(opts, limit, func(o metav1.ListOptions) ([]record.Change, string, error) {
		l, err := rc.Changes(ns).List(ctx, o)
		if err != nil {
			return nil, "", explain(err, "list changes "+where)
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return err
	}
	for _, c := range changes {
		acts = append(acts, changeAct(c.ChangeRecord))
	}
	attempts, err := collect(opts, limit, func(o metav1.ListOptions) ([]record.Attempt, string, error) {
		l, err := rc.Attempts(ns).List(ctx, o)
		if err != nil {
			return nil, "", explain(err, "list attempts "+where)
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return err
	}
	for _, at := range attempts {
		acts = append(acts, attemptAct(at.AttemptRecord))
	}
	// Cluster-scoped objects, when the caller may read them.
	cluster, _ := collect(opts, limit, func(o metav1.ListOptions) ([]record.ClusterChange, string, error) {
		l, err := rc.ClusterChanges().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
	for _, c := range cluster {
		acts = append(acts, changeAct(c.ChangeRecord))
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].at.After(acts[j].at) })
	if int64(len(acts)) > limit {
		acts = acts[:limit]
	}
	if len(acts) == 0 {
		fmt.Fprintf(a.streams.ErrOut, "No activity of %s recorded (that you may see).\n", cell(a.window.user))
		return nil
	}
	return printTable(a.streams.Out, activityColumns, activityRows(acts), false, a.wide)
}

var activityColumns = []column{{"WHEN", 0}, {"VERB", 0}, {"RESOURCE", 0}, {"NAMESPACE", 0}, {"OBJECT", 0}, {"RESULT", 0}, {"AS", 1}, {"USER-AGENT", 1}}

// activityRows are the table rows of acts. Every recorded string is a cell:
// a refused request's subresource is whatever its sender wrote.
func activityRows(acts []act) []metav1.TableRow {
	var rows []metav1.TableRow
	for _, x := range acts {
		verb := x.verb
		if x.subresource != "" {
			verb += "/" + cell(x.subresource)
		}
		rows = append(rows, metav1.TableRow{Cells: []any{age(x.at), verb, resourceCell(x.object), cellOrNone(cell(x.object.Namespace)),
			cell(x.object.Name), x.result, cellOrNone(x.as), cellOrNone(x.agent)}})
	}
	return rows
}

func changeAct(c record.ChangeRecord) act {
	x := act{at: c.ChangedAt.Time, verb: c.Verb, subresource: c.Subresource, object: c.Object, result: "done"}
	if c.Actor != nil {
		x.as, x.agent = cell(c.Actor.ImpersonatedUser), cell(c.Actor.UserAgent)
		if c.Actor.ImpersonatedUser == "" {
			x.as = ""
		}
	}
	return x
}

func attemptAct(r record.AttemptRecord) act {
	x := act{at: r.AttemptedAt.Time, verb: r.Verb, subresource: r.Subresource, object: r.Object,
		result: fmt.Sprintf("refused %d %s", r.Result.Code, cell(r.Result.Reason)), agent: cell(r.Actor.UserAgent)}
	if r.Actor.ImpersonatedUser != "" {
		x.as = cell(r.Actor.ImpersonatedUser)
	}
	return x
}
