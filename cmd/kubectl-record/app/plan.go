package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// planOptions are the flags of the plan verbs.
type planOptions struct {
	*options
	cluster   bool
	name      string
	resources []string
	names     []string
	user      string
	since     string
	until     string
	yes       bool
}

func newPlanCommand(o *options) *cobra.Command {
	p := &planOptions{options: o}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan a restore of many objects: as of a time, or undoing one user",
		Long: `A plan lists, step by step, what a restore of many objects would do, for you to
review before anything is written: "as-of" puts a namespace's (or, with
--cluster, the cluster's) recorded objects back as they were at a time; "undo"
reverts what one user changed in a time range. Plans are yours: only you see
and execute them. "plan execute" runs one as a server-side dry run, asks, then
runs it for real, as you, carrying the dry run's digest: if the plan's steps or
a recorded state they restore changed since the dry run, the real run is
refused and nothing is written.`,
		Example: `  kubectl record plan as-of 2026-11-25T09:00:00Z -n shop
  kubectl record plan as-of 2h -n shop --resources configmaps,deployments.apps
  kubectl record plan undo --user mallory --since 3h -n shop
  kubectl record plan show undo-mallory-3f2a -n shop
  kubectl record plan execute undo-mallory-3f2a -n shop`,
	}
	asOf := &cobra.Command{
		Use:   "as-of TIME",
		Short: "Plan to put the recorded objects back as they were at TIME (RFC 3339, or 2h for two hours ago)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseTime(args[0])
			if err != nil {
				return err
			}
			return p.create(cmd.Context(), record.RestorePlanSpec{Kind: "as-of", At: &metav1.Time{Time: at}}, "as-of")
		},
	}
	undo := &cobra.Command{
		Use:   "undo --user USER --since TIME",
		Short: "Plan to revert what USER changed since TIME",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.user == "" || p.since == "" {
				return usageError{fmt.Errorf("undo needs --user and --since")}
			}
			since, err := parseTime(p.since)
			if err != nil {
				return err
			}
			spec := record.RestorePlanSpec{Kind: "undo", User: p.user, Since: &metav1.Time{Time: since}}
			if p.until != "" {
				until, err := parseTime(p.until)
				if err != nil {
					return err
				}
				spec.Until = &metav1.Time{Time: until}
			}
			return p.create(cmd.Context(), spec, "undo-"+p.user)
		},
	}
	undo.Flags().StringVar(&p.user, "user", "", "The user whose changes to revert (the authenticated username)")
	undo.Flags().StringVar(&p.since, "since", "", "From this time (RFC 3339, or 3h for three hours ago)")
	undo.Flags().StringVar(&p.until, "until", "", "Until this time (default: now)")
	for _, c := range []*cobra.Command{asOf, undo} {
		c.Flags().BoolVar(&p.cluster, "cluster", false, "Plan cluster-scoped objects (needs --resources)")
		c.Flags().StringVar(&p.name, "name", "", "The plan's name (default: generated)")
		c.Flags().StringSliceVar(&p.resources, "resources", nil, "Only these types (cm, deployments.apps...), comma-separated")
		c.Flags().StringSliceVar(&p.names, "names", nil, "Only objects of these names, comma-separated")
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show one of your plans, step by step",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := p.get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return writePlan(p.streams.Out, args[0], st)
		},
	}
	execute := &cobra.Command{
		Use:   "execute NAME",
		Short: "Execute one of your plans: a dry run shown, a confirmation, then for real, as you",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return p.execute(cmd.Context(), args[0]) },
	}
	execute.Flags().BoolVarP(&p.yes, "yes", "y", false, "Execute without asking (after the dry run is shown)")
	for _, c := range []*cobra.Command{show, execute} {
		c.Flags().BoolVar(&p.cluster, "cluster", false, "A plan of cluster-scoped objects")
		c.ValidArgsFunction = o.completePlans(&p.cluster)
	}
	cmd.AddCommand(asOf, undo, show, execute)
	return cmd
}

// parseTime reads an RFC 3339 time, or a duration before now (2h, -2h).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(strings.TrimPrefix(s, "-"))
	if err != nil || d <= 0 {
		return time.Time{}, usageError{fmt.Errorf("%q: want an RFC 3339 time (2026-11-25T09:00:00Z) or a duration before now (2h)", s)}
	}
	return now().Add(-d), nil
}

func (p *planOptions) create(ctx context.Context, spec record.RestorePlanSpec, prefix string) error {
	for _, r := range p.resources {
		gr, _, err := p.resolve(r)
		if err != nil {
			return err
		}
		spec.Resources = append(spec.Resources, record.GroupResource{Group: gr.Group, Resource: gr.Resource})
	}
	if p.cluster && len(spec.Resources) == 0 {
		return usageError{fmt.Errorf("--cluster needs --resources (for example clusterroles.rbac.authorization.k8s.io)")}
	}
	spec.Names = p.names
	name := p.name
	if name == "" {
		name = restoreName(prefix)
	}
	st, where, err := p.options.createPlan(ctx, p.cluster, name, spec)
	if err != nil {
		return err
	}
	if err := writePlan(p.streams.Out, name, st); err != nil {
		return err
	}
	fmt.Fprintf(p.streams.Out, "Review it, then: kubectl record plan execute %s%s\n", name, where)
	return nil
}

// createPlan creates a plan (cluster-scoped, or in the namespace) and
// returns its steps, and the flags that name where it is.
func (o *options) createPlan(ctx context.Context, cluster bool, name string, spec record.RestorePlanSpec) (*record.RestorePlanStatus, string, error) {
	rc, err := o.record()
	if err != nil {
		return nil, "", err
	}
	if cluster {
		got, err := rc.ClusterRestorePlans().Create(ctx, &record.ClusterRestorePlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return nil, "", explain(err, "create clusterrestoreplans")
		}
		return &got.Status, " --cluster", nil
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, "", err
	}
	got, err := rc.RestorePlans(ns).Create(ctx, &record.RestorePlan{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", explain(err, "create restoreplans in namespace "+ns)
	}
	return &got.Status, " -n " + ns, nil
}

func (p *planOptions) get(ctx context.Context, name string) (*record.RestorePlanStatus, error) {
	rc, err := p.record()
	if err != nil {
		return nil, err
	}
	if p.cluster {
		got, err := rc.ClusterRestorePlans().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, explain(err, "get clusterrestoreplan "+name)
		}
		return &got.Status, nil
	}
	ns, err := p.namespace()
	if err != nil {
		return nil, err
	}
	got, err := rc.RestorePlans(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, explain(err, "get restoreplan "+name+" in namespace "+ns)
	}
	return &got.Status, nil
}

func (p *planOptions) execute(ctx context.Context, name string) error {
	r := &restoreOptions{options: p.options}
	t := &target{namespaced: !p.cluster, name: name, resource: schema.GroupResource{Group: record.GroupName, Resource: "restoreplans"}}
	spec := record.RestoreSpec{Plan: name}
	dry, err := r.create(ctx, t, spec, true)
	if err != nil {
		return err
	}
	out := p.streams.Out
	fmt.Fprintf(out, "Dry run of plan %s (digest %s):\n", cell(name), cellOrNone(cell(dry.PlanDigest)))
	writeSteps(out, dry.Steps)
	if dry.Phase != "Succeeded" {
		describe(out, dry)
		return &codedError{5, fmt.Errorf("the dry run of plan %s did not succeed (%s): nothing was written", name, dry.Phase)}
	}
	if !p.yes {
		f, ok := p.streams.In.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return &codedError{2, fmt.Errorf("not executed: no terminal to confirm on; pass --yes to execute plan %s", name)}
		}
		fmt.Fprintf(out, "Execute plan %s for real, as you? [y/N] ", name)
		answer, _ := bufio.NewReader(p.streams.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return &codedError{2, fmt.Errorf("not executed")}
		}
	}
	// The real run carries the digest of what the dry run showed: a plan
	// changed since is refused, nothing written.
	spec.PlanDigest = dry.PlanDigest
	done, err := r.create(ctx, t, spec, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Plan %s: %s\n", cell(name), done.Phase)
	writeSteps(out, done.Steps)
	if done.Phase != "Succeeded" {
		return &codedError{5, fmt.Errorf("plan %s: %s: %s", name, done.Phase, cell(done.Message))}
	}
	return nil
}

// writePlan prints a plan's steps, in the order they run.
func writePlan(w io.Writer, name string, st *record.RestorePlanStatus) error {
	fmt.Fprintf(w, "Plan %s (%s):", cell(name), cellOrNone(st.State))
	for _, a := range []string{"create", "update", "delete", "none", "skip", "refuse"} {
		if n := st.Summary[a]; n > 0 {
			fmt.Fprintf(w, " %d %s", n, a)
		}
	}
	fmt.Fprintln(w)
	if st.PlanDigest != "" {
		fmt.Fprintf(w, "  digest %s (a real run executes exactly these steps, or nothing)\n", cell(st.PlanDigest))
	}
	if len(st.Steps) == 0 {
		fmt.Fprintln(w, "  nothing to do")
		return nil
	}
	cols := []column{{"STEP", 0}, {"ACTION", 0}, {"RESOURCE", 0}, {"OBJECT", 0}, {"VERSION", 0}, {"REASON", 0}, {"RESULT", 0}}
	var rows []metav1.TableRow
	for _, s := range st.Steps {
		obj := cell(s.Object.Name)
		if s.Object.Namespace != "" {
			obj = cell(s.Object.Namespace) + "/" + obj
		}
		rows = append(rows, metav1.TableRow{Cells: []any{fmt.Sprint(s.Index), s.Action, resourceCell(s.Object), obj,
			cellOrNone(short(s.Version, 20)), cellOrNone(cell(s.Reason)), cellOrNone(s.Result)}})
	}
	return printTable(w, cols, rows, false, false)
}

// writeSteps prints the outcome of each step of an executed plan.
func writeSteps(w io.Writer, steps []record.StepResult) {
	for _, s := range steps {
		fmt.Fprintf(w, "  %s\n", stepLine(s))
	}
}

func stepLine(s record.StepResult) string {
	obj := resourceCell(s.Object) + " " + cell(s.Object.Name)
	if s.Object.Namespace != "" {
		obj = resourceCell(s.Object) + " " + cell(s.Object.Namespace) + "/" + cell(s.Object.Name)
	}
	line := fmt.Sprintf("%d. %s %s: %s", s.Index, s.Action, obj, cellOrNone(s.Result))
	if s.Message != "" {
		line += " (" + cell(s.Message) + ")"
	}
	return line
}
