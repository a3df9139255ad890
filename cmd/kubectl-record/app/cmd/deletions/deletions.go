package deletions

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

type options struct {
	*cmdutil.Factory
	out           *cmdutil.PrintFlags
	window        cmdutil.Window
	allNamespaces bool
}

// NewCmdDeletions returns kubectl record deletions.
func NewCmdDeletions(f *cmdutil.Factory) *cobra.Command {
	d := &options{Factory: f}
	cmd := &cobra.Command{
		Use:   "deletions [TYPE[/NAME]]",
		Short: "Who deleted what, when, as whom",
		Long: `List the recorded deletions, newest first: the object, who deleted it (and whom
they acted as), when, and for a cascade (a namespace's or an owner's deletion)
who started it, listed under the first deletion of that cascade. TYPE is any
type kubectl knows (cm, deploy, deployment.apps, ns); a cluster-scoped TYPE
lists the cluster's deletions.`,
		Example: `  kubectl record deletions -n shop
  kubectl record deletions cm -n shop --since 2h
  kubectl record deletions deploy/web -n shop -o yaml
  kubectl record deletions -A --user mallory
  kubectl record deletions ns                      # deleted namespaces`,
		Args:              cobra.MaximumNArgs(2),
		ValidArgsFunction: f.CompleteObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return d.run(cmd, args) },
	}
	d.out = cmdutil.NewPrintFlags(cmd)
	d.window.AddFlags(cmd)
	cmd.Flags().BoolVarP(&d.allNamespaces, "all-namespaces", "A", false, "Every namespace you may read")
	return cmd
}

func (d *options) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	t, err := d.Target(args, false)
	if err != nil {
		return err
	}
	extra, err := d.window.Selectors()
	if err != nil {
		return err
	}
	rc, err := d.Record()
	if err != nil {
		return err
	}
	sel := t.Selector(extra...)
	opts := metav1.ListOptions{FieldSelector: sel}
	var list runtime.Object
	var items []record.DeletionRecord
	var metas []metav1.ObjectMeta
	if t != nil && !t.Namespaced {
		got, err := cmdutil.Collect(opts, d.window.Limit, func(o metav1.ListOptions) ([]record.ClusterDeletion, string, error) {
			l, err := rc.ClusterDeletions().List(ctx, o)
			if err != nil {
				return nil, "", cmdutil.Explain(err, "list deletions of "+t.Resource.String())
			}
			return l.Items, l.Continue, nil
		})
		if err != nil {
			return err
		}
		for _, i := range got {
			items, metas = append(items, i.DeletionRecord), append(metas, i.ObjectMeta)
		}
		list = &record.ClusterDeletionList{Items: got}
	} else {
		ns, err := d.Namespace()
		if err != nil {
			return err
		}
		where := "in namespace " + ns
		if d.allNamespaces {
			ns, where = "", "in any namespace"
		}
		got, err := cmdutil.Collect(opts, d.window.Limit, func(o metav1.ListOptions) ([]record.Deletion, string, error) {
			l, err := rc.Deletions(ns).List(ctx, o)
			if err != nil {
				return nil, "", cmdutil.Explain(err, "list deletions "+where)
			}
			return l.Items, l.Continue, nil
		})
		if err != nil {
			return err
		}
		for _, i := range got {
			items, metas = append(items, i.DeletionRecord), append(metas, i.ObjectMeta)
		}
		list = &record.DeletionList{Items: got}
	}
	table, wide := d.out.Table()
	if !table {
		return d.out.Print(d.Streams.Out, list)
	}
	if len(items) == 0 {
		fmt.Fprintln(d.Streams.ErrOut, "No deletions recorded (that you may see).")
		return nil
	}
	return format.PrintTable(d.Streams.Out, columns, tableRows(items, metas), d.allNamespaces && (t == nil || t.Namespaced), wide)
}

// columns are the table's columns; the wide ones come last. The default
// ones lead with the object, who and when, and fit 120 columns with the
// cluster's controllers as deleters (format.DeleterCell); -o wide adds
// the verb and the deleter's full user name.
var columns = format.Columns([]string{"RESOURCE", "OBJECT", "DELETED-BY", "DELETED", "INITIATED-BY"},
	[]string{"VERB", "DELETER", "STATE-VERSION", "SOURCE-IPS", "USER-AGENT"})

// tableRows are the table's rows: each cascade (the deletions the
// namespace controller or the garbage collector made) listed under the
// deletion that started it, or under a row naming that deletion when it
// is not in the list (a Namespace's deletion is cluster-scoped).
func tableRows(items []record.DeletionRecord, metas []metav1.ObjectMeta) []metav1.TableRow {
	var rows []metav1.TableRow
	row := func(i int, cascade bool) {
		r, m := items[i], metas[i]
		obj := format.Cell(r.Object.Name)
		initiated := ""
		if r.InitiatedVia != "" {
			initiated = format.Cell(r.InitiatedBy) + " (" + r.InitiatedVia + ")"
		}
		if cascade {
			obj = "↳ " + obj
		}
		ips := ""
		for j, ip := range r.Actor.SourceIPs {
			if j > 0 {
				ips += ","
			}
			ips += format.Cell(ip)
		}
		rows = append(rows, metav1.TableRow{
			Cells: []any{format.ResourceCell(r.Object), obj, format.DeleterCell(r.Actor.Username, r.Actor.ImpersonatedUser), format.Age(r.DeletedAt.Time),
				format.CellOrNone(initiated), r.Verb, format.ActorCell(r.Actor.Username, r.Actor.ImpersonatedUser), stateCell(r),
				format.CellOrNone(ips), format.Cell(r.Actor.UserAgent)},
			Object: runtime.RawExtension{Object: &record.Deletion{ObjectMeta: m}},
		})
	}
	for _, g := range cascadeGroups(items) {
		if g.head >= 0 {
			row(g.head, false)
		} else if g.initiator != nil {
			r := items[g.members[0]]
			var at time.Time
			if r.InitiatedAt != nil {
				at = r.InitiatedAt.Time
			}
			rows = append(rows, metav1.TableRow{
				Cells: []any{format.ResourceCell(*g.initiator), format.Cell(g.initiator.Name), format.DeleterCell(r.InitiatedBy, ""), format.Age(at), "<none>",
					"delete", format.Cell(r.InitiatedBy), "<none>", "<none>", "<none>"},
				Object: runtime.RawExtension{Object: &record.Deletion{ObjectMeta: metav1.ObjectMeta{Namespace: g.initiator.Namespace}}},
			})
		}
		for _, i := range g.members {
			row(i, true)
		}
	}
	return rows
}

// cascadeGroup is a deletion (head; -1 when it is not in the list) and the
// cascade it started (members).
type cascadeGroup struct {
	head      int
	initiator *record.ObjectReference
	members   []int
}

// cascadeGroups orders the deletions newest first, each cascade under the
// deletion that started it: the listed deletion of the initiating object,
// else, at the place of the cascade's newest row, under a row naming that
// object. Cascade rows whose initiator the caller may not see (redacted)
// are grouped by who started them.
func cascadeGroups(items []record.DeletionRecord) []cascadeGroup {
	key := func(o record.ObjectReference) string {
		return o.APIGroup + "\x00" + o.Resource + "\x00" + o.Namespace + "\x00" + o.Name
	}
	groupOf := func(r record.DeletionRecord) (string, *record.ObjectReference) {
		if r.InitiatedObject != nil {
			return key(*r.InitiatedObject), r.InitiatedObject
		}
		return "\x01" + r.InitiatedBy + "\x00" + r.InitiatedVia, nil
	}
	listed := map[string]int{} // the newest listed deletion of each object
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].InitiatedVia == "" {
			listed[key(items[i].Object)] = i
		}
	}
	under := map[int][]int{}      // head -> its cascade
	orphans := map[string][]int{} // a cascade whose initiator is not listed
	for i, r := range items {
		if r.InitiatedVia == "" {
			continue
		}
		k, ref := groupOf(r)
		if h, ok := listed[k]; ok && ref != nil {
			under[h] = append(under[h], i)
			continue
		}
		orphans[k] = append(orphans[k], i)
	}
	var out []cascadeGroup
	done := map[string]bool{}
	for i, r := range items {
		if r.InitiatedVia == "" {
			out = append(out, cascadeGroup{head: i, members: under[i]})
			continue
		}
		k, ref := groupOf(r)
		if _, ok := listed[k]; ok && ref != nil {
			continue // under its head
		}
		if !done[k] {
			done[k] = true
			out = append(out, cascadeGroup{head: -1, initiator: ref, members: orphans[k]})
		}
	}
	return out
}

// stateCell names the version holding the deleted object's last state, or
// says the record does not know it (a delete logged at Metadata).
func stateCell(r record.DeletionRecord) string {
	if r.StateUnknown {
		return "<unknown>"
	}
	return format.CellOrNone(shortname.OfLong(r.Object.Name, r.StateVersion))
}
