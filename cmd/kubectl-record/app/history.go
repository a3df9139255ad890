package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// versions lists the recorded changes of a target, newest first, up to
// limit: the list as the API answered it (for -o) and its records.
func (o *options) versions(ctx context.Context, t *target, extra []string, limit int64) (runtime.Object, []record.ChangeRecord, []metav1.ObjectMeta, error) {
	rc, err := o.record()
	if err != nil {
		return nil, nil, nil, err
	}
	opts := metav1.ListOptions{FieldSelector: t.selector(extra...)}
	var recs []record.ChangeRecord
	var metas []metav1.ObjectMeta
	if !t.namespaced {
		got, err := collect(opts, limit, func(o metav1.ListOptions) ([]record.ClusterChange, string, error) {
			l, err := rc.ClusterChanges().List(ctx, o)
			if err != nil {
				return nil, "", explain(err, "list the changes of "+t.resource.String())
			}
			return l.Items, l.Continue, nil
		})
		if err != nil {
			return nil, nil, nil, err
		}
		for _, i := range got {
			recs, metas = append(recs, i.ChangeRecord), append(metas, i.ObjectMeta)
		}
		return &record.ClusterChangeList{Items: got}, recs, metas, nil
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, nil, nil, err
	}
	got, err := collect(opts, limit, func(lo metav1.ListOptions) ([]record.Change, string, error) {
		l, err := rc.Changes(ns).List(ctx, lo)
		if err != nil {
			return nil, "", explain(err, "list the changes of "+t.resource.String()+" in namespace "+ns)
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, i := range got {
		recs, metas = append(recs, i.ChangeRecord), append(metas, i.ObjectMeta)
	}
	return &record.ChangeList{Items: got}, recs, metas, nil
}

type historyOptions struct {
	*options
	out    *output
	window window
}

func newHistoryCommand(o *options) *cobra.Command {
	h := &historyOptions{options: o}
	cmd := &cobra.Command{
		Use:   "history TYPE/NAME",
		Short: "Every recorded version of an object, across re-creations",
		Long: `List every recorded change of the object, newest first: when, the verb, who
made it (and whom they acted as), and the version's name, which diff, manifest
and restore take with --version. An object deleted and created again under
the same name shows each incarnation (a new UID).`,
		Example: `  kubectl record history cm/app-config -n shop
  kubectl record history deploy web -n shop --since 24h -o wide
  kubectl record history clusterrole/view -o yaml`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return h.run(cmd, args) },
	}
	h.out = newOutput(cmd)
	h.window.addFlags(cmd)
	return cmd
}

func (h *historyOptions) run(cmd *cobra.Command, args []string) error {
	t, err := h.target(args, true)
	if err != nil {
		return err
	}
	extra, err := h.window.selectors()
	if err != nil {
		return err
	}
	list, recs, metas, err := h.versions(cmd.Context(), t, extra, h.window.limit)
	if err != nil {
		return err
	}
	table, wide := h.out.table()
	if !table {
		return h.out.print(h.streams.Out, list)
	}
	if len(recs) == 0 {
		return &codedError{4, fmt.Errorf("no recorded change of %s/%s (that you may see)", t.resource, t.name)}
	}
	cols := []column{{"CHANGED", 0}, {"VERB", 0}, {"BY", 0}, {"UID", 0}, {"RESTORABLE", 0}, {"VERSION", 0},
		{"RESOURCE-VERSION", 1}, {"SUBRESOURCE", 1}, {"INITIATED-BY", 1}, {"USER-AGENT", 1}}
	var rows []metav1.TableRow
	for i, r := range recs {
		by, agent := "<baseline>", ""
		if r.Actor != nil {
			by, agent = actorCell(r.Actor.Username, r.Actor.ImpersonatedUser), cell(r.Actor.UserAgent)
		}
		verb := r.Verb
		if r.Subresource != "" {
			verb += "/" + cell(r.Subresource)
		}
		initiated := ""
		if r.InitiatedVia != "" {
			initiated = cell(r.InitiatedBy) + " (" + r.InitiatedVia + ")"
		}
		rows = append(rows, metav1.TableRow{Cells: []any{age(r.ChangedAt.Time), verb, by, short(r.Object.UID, 8),
			fmt.Sprint(r.Restorable), metas[i].Name, cellOrNone(cell(r.ResourceVersion)), cellOrNone(cell(r.Subresource)),
			cellOrNone(initiated), cellOrNone(agent)}})
	}
	return printTable(h.streams.Out, cols, rows, false, wide)
}
