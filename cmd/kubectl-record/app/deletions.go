package app

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// window is --user, --since and --since-time, as field selectors.
type window struct {
	user      string
	since     time.Duration
	sinceTime string
	limit     int64
}

func (w *window) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&w.user, "user", "", "Only what this user did (the authenticated username)")
	cmd.Flags().DurationVar(&w.since, "since", 0, "Only the last period, such as 2h or 30m")
	cmd.Flags().StringVar(&w.sinceTime, "since-time", "", "Only after this time (RFC 3339, such as 2026-11-25T09:00:00Z)")
	cmd.Flags().Int64Var(&w.limit, "limit", 500, "At most this many rows, newest first")
}

func (w *window) selectors() ([]string, error) {
	var s []string
	if w.user != "" {
		s = append(s, field("actor.username", w.user))
	}
	switch {
	case w.since != 0 && w.sinceTime != "":
		return nil, usageError{fmt.Errorf("--since and --since-time: give one")}
	case w.since < 0:
		return nil, usageError{fmt.Errorf("--since %s: want a positive duration", w.since)}
	case w.since > 0:
		s = append(s, field("since", "-"+w.since.String()))
	case w.sinceTime != "":
		if _, err := time.Parse(time.RFC3339, w.sinceTime); err != nil {
			return nil, usageError{fmt.Errorf("--since-time: %w", err)}
		}
		s = append(s, field("since", w.sinceTime))
	}
	if w.limit <= 0 {
		return nil, usageError{fmt.Errorf("--limit %d: want at least 1", w.limit)}
	}
	return s, nil
}

type deletionsOptions struct {
	*options
	out           *output
	window        window
	allNamespaces bool
}

func newDeletionsCommand(o *options) *cobra.Command {
	d := &deletionsOptions{options: o}
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
		ValidArgsFunction: o.completeObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return d.run(cmd, args) },
	}
	d.out = newOutput(cmd)
	d.window.addFlags(cmd)
	cmd.Flags().BoolVarP(&d.allNamespaces, "all-namespaces", "A", false, "Every namespace you may read")
	return cmd
}

func (d *deletionsOptions) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	t, err := d.target(args, false)
	if err != nil {
		return err
	}
	extra, err := d.window.selectors()
	if err != nil {
		return err
	}
	rc, err := d.record()
	if err != nil {
		return err
	}
	sel := t.selector(extra...)
	opts := metav1.ListOptions{FieldSelector: sel}
	var list runtime.Object
	var items []record.DeletionRecord
	var metas []metav1.ObjectMeta
	if t != nil && !t.namespaced {
		got, err := collect(opts, d.window.limit, func(o metav1.ListOptions) ([]record.ClusterDeletion, string, error) {
			l, err := rc.ClusterDeletions().List(ctx, o)
			if err != nil {
				return nil, "", explain(err, "list deletions of "+t.resource.String())
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
		ns, err := d.namespace()
		if err != nil {
			return err
		}
		where := "in namespace " + ns
		if d.allNamespaces {
			ns, where = "", "in any namespace"
		}
		got, err := collect(opts, d.window.limit, func(o metav1.ListOptions) ([]record.Deletion, string, error) {
			l, err := rc.Deletions(ns).List(ctx, o)
			if err != nil {
				return nil, "", explain(err, "list deletions "+where)
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
	table, wide := d.out.table()
	if !table {
		return d.out.print(d.streams.Out, list)
	}
	if len(items) == 0 {
		fmt.Fprintln(d.streams.ErrOut, "No deletions recorded (that you may see).")
		return nil
	}
	return printTable(d.streams.Out, deletionColumns, deletionRows(items, metas), d.allNamespaces && (t == nil || t.namespaced), wide)
}

// deletionColumns are the table's columns; the wide ones come last.
var deletionColumns = []column{{"RESOURCE", 0}, {"OBJECT", 0}, {"DELETED-BY", 0}, {"VERB", 0}, {"INITIATED-BY", 0}, {"DELETED", 0},
	{"STATE-VERSION", 1}, {"SOURCE-IPS", 1}, {"USER-AGENT", 1}}

// deletionRows are the table's rows: each cascade (the deletions the
// namespace controller or the garbage collector made) listed under the
// deletion that started it, or under a row naming that deletion when it
// is not in the list (a Namespace's deletion is cluster-scoped).
func deletionRows(items []record.DeletionRecord, metas []metav1.ObjectMeta) []metav1.TableRow {
	var rows []metav1.TableRow
	row := func(i int, cascade bool) {
		r, m := items[i], metas[i]
		obj := cell(r.Object.Name)
		initiated := ""
		if r.InitiatedVia != "" {
			initiated = cell(r.InitiatedBy) + " (" + r.InitiatedVia + ")"
		}
		if cascade {
			obj = "↳ " + obj
		}
		ips := ""
		for j, ip := range r.Actor.SourceIPs {
			if j > 0 {
				ips += ","
			}
			ips += cell(ip)
		}
		rows = append(rows, metav1.TableRow{
			Cells: []any{resourceCell(r.Object), obj, actorCell(r.Actor.Username, r.Actor.ImpersonatedUser), r.Verb,
				cellOrNone(initiated), age(r.DeletedAt.Time), cellOrNone(r.StateVersion), cellOrNone(ips), cell(r.Actor.UserAgent)},
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
				Cells: []any{resourceCell(*g.initiator), cell(g.initiator.Name), cell(r.InitiatedBy), "delete", "<none>", age(at),
					"<none>", "<none>", "<none>"},
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

// resourceCell is resource.group, as kubectl names types.
func resourceCell(o record.ObjectReference) string {
	if o.APIGroup == "" {
		return cell(o.Resource)
	}
	return cell(o.Resource + "." + o.APIGroup)
}

func cellOrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
