package plan

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
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// options are the flags of the plan verbs.
type options struct {
	*cmdutil.Factory
	cluster   bool
	name      string
	resources []string
	names     []string
	user      string
	since     string
	until     string
	yes       bool
}

// NewCmdPlan returns kubectl record plan and its verbs.
func NewCmdPlan(f *cmdutil.Factory) *cobra.Command {
	p := &options{Factory: f}
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
			at, err := cmdutil.ParseTime(args[0])
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
				return cmdutil.Usagef("undo needs --user and --since")
			}
			since, err := cmdutil.ParseTime(p.since)
			if err != nil {
				return err
			}
			spec := record.RestorePlanSpec{Kind: "undo", User: p.user, Since: &metav1.Time{Time: since}}
			if p.until != "" {
				until, err := cmdutil.ParseTime(p.until)
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
			return writePlan(p.Streams.Out, args[0], st)
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
		c.ValidArgsFunction = p.completePlans
	}
	cmd.AddCommand(asOf, undo, show, execute)
	return cmd
}

func (p *options) create(ctx context.Context, spec record.RestorePlanSpec, prefix string) error {
	for _, r := range p.resources {
		gr, _, err := p.Resolve(r)
		if err != nil {
			return err
		}
		spec.Resources = append(spec.Resources, record.GroupResource{Group: gr.Group, Resource: gr.Resource})
	}
	if p.cluster && len(spec.Resources) == 0 {
		return cmdutil.Usagef("--cluster needs --resources (for example clusterroles.rbac.authorization.k8s.io)")
	}
	spec.Names = p.names
	name := p.name
	if name == "" {
		name = cmdutil.RestoreName(prefix)
	}
	st, where, err := p.CreatePlan(ctx, p.cluster, name, spec)
	if err != nil {
		return err
	}
	if err := writePlan(p.Streams.Out, name, st); err != nil {
		return err
	}
	fmt.Fprintf(p.Streams.Out, "Review it, then: kubectl record plan execute %s%s\n", name, where)
	return nil
}

func (p *options) get(ctx context.Context, name string) (*record.RestorePlanStatus, error) {
	rc, err := p.Record()
	if err != nil {
		return nil, err
	}
	if p.cluster {
		got, err := rc.ClusterRestorePlans().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, cmdutil.Explain(err, "get clusterrestoreplan "+name)
		}
		return &got.Status, nil
	}
	ns, err := p.Namespace()
	if err != nil {
		return nil, err
	}
	got, err := rc.RestorePlans(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, cmdutil.Explain(err, "get restoreplan "+name+" in namespace "+ns)
	}
	return &got.Status, nil
}

func (p *options) execute(ctx context.Context, name string) error {
	t := &cmdutil.Target{Namespaced: !p.cluster, Name: name, Resource: schema.GroupResource{Group: record.GroupName, Resource: "restoreplans"}}
	spec := record.RestoreSpec{Plan: name}
	dry, err := p.CreateRestore(ctx, t, spec, true)
	if err != nil {
		return err
	}
	out := p.Streams.Out
	fmt.Fprintf(out, "Dry run of plan %s (digest %s):\n", format.Cell(name), format.CellOrNone(format.Cell(dry.PlanDigest)))
	writeSteps(out, dry.Steps)
	if dry.Phase != "Succeeded" {
		format.DescribeRestore(out, dry)
		return cmdutil.WithExitCode(cmdutil.ExitNotRestored, fmt.Errorf("the dry run of plan %s did not succeed (%s): nothing was written", name, dry.Phase))
	}
	if !p.yes {
		f, ok := p.Streams.In.(*os.File)
		if !ok || !term.IsTerminal(int(f.Fd())) {
			return cmdutil.WithExitCode(cmdutil.ExitUsage, fmt.Errorf("not executed: no terminal to confirm on; pass --yes to execute plan %s", name))
		}
		fmt.Fprintf(out, "Execute plan %s for real, as you? [y/N] ", name)
		answer, _ := bufio.NewReader(p.Streams.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return cmdutil.WithExitCode(cmdutil.ExitUsage, fmt.Errorf("not executed"))
		}
	}
	// The real run carries the digest of what the dry run showed: a plan
	// changed since is refused, nothing written.
	spec.PlanDigest = dry.PlanDigest
	done, err := p.CreateRestore(ctx, t, spec, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Plan %s: %s\n", format.Cell(name), done.Phase)
	writeSteps(out, done.Steps)
	if done.Phase != "Succeeded" {
		return cmdutil.WithExitCode(cmdutil.ExitNotRestored, fmt.Errorf("plan %s: %s: %s", name, done.Phase, format.Cell(done.Message)))
	}
	return nil
}

// writePlan prints a plan's steps, in the order they run.
func writePlan(w io.Writer, name string, st *record.RestorePlanStatus) error {
	fmt.Fprintf(w, "Plan %s (%s):", format.Cell(name), format.CellOrNone(st.State))
	for _, a := range []string{"create", "update", "delete", "none", "skip", "refuse"} {
		if n := st.Summary[a]; n > 0 {
			fmt.Fprintf(w, " %d %s", n, a)
		}
	}
	fmt.Fprintln(w)
	if st.PlanDigest != "" {
		fmt.Fprintf(w, "  digest %s (a real run executes exactly these steps, or nothing)\n", format.Cell(st.PlanDigest))
	}
	if len(st.Steps) == 0 {
		fmt.Fprintln(w, "  nothing to do")
		return nil
	}
	cols := format.Columns([]string{"STEP", "ACTION", "RESOURCE", "OBJECT", "VERSION", "REASON", "RESULT"}, nil)
	var rows []metav1.TableRow
	for _, s := range st.Steps {
		obj := format.Cell(s.Object.Name)
		if s.Object.Namespace != "" {
			obj = format.Cell(s.Object.Namespace) + "/" + obj
		}
		rows = append(rows, metav1.TableRow{Cells: []any{fmt.Sprint(s.Index), s.Action, format.ResourceCell(s.Object), obj,
			format.CellOrNone(format.Short(s.Version, 20)), format.CellOrNone(format.Cell(s.Reason)), format.CellOrNone(s.Result)}})
	}
	return format.PrintTable(w, cols, rows, false, false)
}

// writeSteps prints the outcome of each step of an executed plan.
func writeSteps(w io.Writer, steps []record.StepResult) {
	for _, s := range steps {
		fmt.Fprintf(w, "  %s\n", format.StepLine(s))
	}
}

// completePlans completes the names of the caller's plans.
func (p *options) completePlans(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	rc, err := p.Record()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	if p.cluster {
		l, err := rc.ClusterRestorePlans().List(ctx, metav1.ListOptions{Limit: 200})
		if err == nil {
			for _, pl := range l.Items {
				names = append(names, pl.Name)
			}
		}
	} else if ns, err := p.Namespace(); err == nil {
		l, err := rc.RestorePlans(ns).List(ctx, metav1.ListOptions{Limit: 200})
		if err == nil {
			for _, pl := range l.Items {
				names = append(names, pl.Name)
			}
		}
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
