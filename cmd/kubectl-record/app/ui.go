package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history/diff"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/ui"
)

type uiOptions struct {
	*options
	addr      string
	handover  string
	noBrowser bool
	link      string
	since     time.Duration
	all       bool
}

func newUICommand(o *options) *cobra.Command {
	u := &uiOptions{options: o}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "The incident's timeline in a browser: changes, diffs, restores, plans",
		Long: `Start a web page on this machine (loopback only, a random port) that shows the
namespace's changes (or, with -A, every namespace you may read) on a time
axis, one lane per object, coloured by verb, refused writes marked; an
object's versions with a side-by-side diff (lists matched by key); a restore
that shows the server-side dry run before asking; plans as of a time or
undoing a user. It reads and writes with your kubeconfig's credentials, as
the other verbs do: nothing new runs in the cluster.

The URL printed carries a one-time token and a random path: the page answers
nobody else. The browser is not given the token on its command line (which
every local user can read) but a private file that sends it on, made in a new
0700 directory (removed when the page stops) under --handover-dir: by default,
on Linux, your home (a snap browser, Ubuntu's default, reads no other
directory of yours, and no hidden one), else $TMPDIR. If the browser shows
"File not found", paste the printed URL into its address bar. Filters stay in
the page's address.`,
		Example: `  kubectl record ui -n shop
  kubectl record ui -A --no-browser`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return u.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&u.addr, "address", "127.0.0.1:0", "Loopback address to listen on")
	cmd.Flags().BoolVar(&u.noBrowser, "no-browser", false, "Print the URL only; do not open a browser")
	cmd.Flags().StringVar(&u.handover, "handover-dir", os.Getenv("KUBECTL_RECORD_HANDOVER_DIR"),
		"Where the browser's private hand-over file is made: a directory of yours that others may not write, and that the browser can read (default: $KUBECTL_RECORD_HANDOVER_DIR, else on Linux $HOME, else $TMPDIR)")
	cmd.Flags().DurationVar(&u.since, "since", 2*time.Hour, "The time window the page opens with (it has its own filter)")
	cmd.Flags().BoolVarP(&u.all, "all-namespaces", "A", false, "Open with every namespace you may read")
	cmd.Flags().StringVar(&u.link, "link", "", "Open the view of a link a colleague shared (its filters; the link's own host and port are not used)")
	return cmd
}

func (u *uiOptions) run(ctx context.Context) error {
	if _, err := u.record(); err != nil {
		return err
	}
	srv, err := ui.Start(ui.Options{Backend: &uiBackend{u.options}, Addr: u.addr, HandoverDir: u.handover})
	if err != nil {
		return err
	}
	query := "&since=" + neturl.QueryEscape(u.since.String())
	if u.all {
		query += "&all=true"
	}
	if u.link != "" {
		l, err := neturl.Parse(u.link)
		if err != nil {
			_ = srv.Close(context.Background())
			return usageError{fmt.Errorf("--link: %w", err)}
		}
		q := l.Query()
		q.Del("token")
		if len(q) > 0 {
			query = "&" + q.Encode()
		}
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(stop)
	}()
	fmt.Fprintf(u.streams.Out, "The timeline is at %s (only this URL opens it; Ctrl-C stops it)\n", srv.URL()+query)
	if !u.noBrowser {
		// The browser is started with a file of ours (0600, in a 0700
		// directory) that sends it on: the token is on no command line,
		// where every local user could read it.
		// The URL printed above stays the way in by hand: it is on the
		// terminal only, never on a command line, and its token works
		// once, whichever of the two is opened first.
		open, err := srv.Handover(query)
		if err == nil {
			err = openBrowser(open)
		}
		if err != nil {
			fmt.Fprintf(u.streams.ErrOut, "no browser opened (%v): open the URL above\n", escape.Line(err.Error()))
		} else {
			// A sandboxed browser (a snap, a flatpak) may not read the
			// file and say so in its window only: the opener succeeded.
			fmt.Fprintf(u.streams.ErrOut, "Opened %s in your browser. If the browser shows \"File not found\" "+
				"(a sandboxed browser that cannot read that directory: see --handover-dir), open the URL above: paste it into the address bar.\n",
				escape.Line(open))
		}
	}
	<-ctx.Done()
	return nil
}

// openBrowser opens url (a file:// URL, never one with a secret) in the
// desktop's browser, when there is one.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped, not waited for
	return nil
}

// uiBackend answers the page with the typed client, as the caller.
type uiBackend struct{ o *options }

// maxTimeline bounds the events of one timeline.
const maxTimeline = 10000

func (b *uiBackend) Changes(ctx context.Context, q ui.Query) (*ui.Timeline, error) {
	rc, err := b.o.record()
	if err != nil {
		return nil, err
	}
	ns := q.Namespace
	if ns == "" && !q.All {
		if ns, err = b.o.namespace(); err != nil {
			return nil, err
		}
	}
	if q.All {
		ns = ""
	}
	sel := []string{field("since", "-"+q.Since.String())}
	if q.User != "" {
		sel = append(sel, field("actor.username", q.User))
	}
	if q.Resource != "" {
		gr, _, err := b.o.resolve(q.Resource)
		if err != nil {
			return nil, err
		}
		sel = append(sel, field("object.apiGroup", gr.Group), field("object.resource", gr.Resource))
	}
	if q.Name != "" {
		sel = append(sel, field("object.name", q.Name))
	}
	limit := q.Limit
	if limit <= 0 || limit > maxTimeline {
		limit = maxTimeline
	}
	tl := &ui.Timeline{Events: []ui.Event{}, Namespace: ns}
	where := "in namespace " + ns
	if ns == "" {
		where = "in any namespace"
	}
	opts := metav1.ListOptions{FieldSelector: strings.Join(sel, ","), Limit: 500}
	for {
		page, err := rc.Changes(ns).List(ctx, opts)
		if err != nil {
			return nil, explain(err, "list changes "+where)
		}
		for _, c := range page.Items {
			tl.Events = append(tl.Events, changeEvent(c.ChangeRecord, c.Name))
		}
		if page.Continue == "" || len(tl.Events) >= limit {
			tl.Truncated = page.Continue != ""
			break
		}
		opts.Continue = page.Continue
	}
	opts.Continue = ""
	for n := 0; ; {
		page, err := rc.Attempts(ns).List(ctx, opts)
		if err != nil {
			break // refused writes are a plus: a reader of changes may not read attempts
		}
		for _, a := range page.Items {
			tl.Events = append(tl.Events, attemptEvent(a.AttemptRecord))
			n++
		}
		if page.Continue == "" || n >= limit/10 {
			break
		}
		opts.Continue = page.Continue
	}
	sort.SliceStable(tl.Events, func(i, j int) bool { return tl.Events[i].At.After(tl.Events[j].At) })
	if len(tl.Events) > limit {
		tl.Events, tl.Truncated = tl.Events[:limit], true
	}
	return tl, nil
}

func changeEvent(c record.ChangeRecord, name string) ui.Event {
	ev := ui.Event{At: c.ChangedAt.Time, Kind: "change", Verb: c.Verb, Group: c.Object.APIGroup, Resource: c.Object.Resource,
		Namespace: c.Object.Namespace, Name: c.Object.Name, UID: c.Object.UID, Version: name, Restorable: c.Restorable,
		InitiatedBy: c.InitiatedBy, InitiatedVia: c.InitiatedVia, User: "(baseline)"}
	if a := c.Actor; a != nil {
		ev.User, ev.As, ev.UserAgent = a.Username, a.ImpersonatedUser, a.UserAgent
	}
	if i := c.InitiatedObject; i != nil {
		ev.Initiator = &ui.ObjectQuery{Namespace: i.Namespace, Group: i.APIGroup, Resource: i.Resource, Name: i.Name}
	}
	return ev
}

func attemptEvent(a record.AttemptRecord) ui.Event {
	return ui.Event{At: a.AttemptedAt.Time, Kind: "attempt", Verb: a.Verb, Group: a.Object.APIGroup, Resource: a.Object.Resource,
		Namespace: a.Object.Namespace, Name: a.Object.Name, UID: a.Object.UID, User: a.Actor.Username, As: a.Actor.ImpersonatedUser,
		UserAgent: a.Actor.UserAgent, Code: a.Result.Code, Reason: a.Result.Reason}
}

// target is the page's object as a target of the other verbs, in its
// namespace.
func (b *uiBackend) target(obj ui.ObjectQuery) (*target, *options, error) {
	if obj.Resource == "" || obj.Name == "" {
		return nil, nil, &ui.Error{Status: http.StatusBadRequest, Message: "resource and name are required"}
	}
	return &target{resource: schema.GroupResource{Group: obj.Group, Resource: obj.Resource}, namespaced: obj.Namespace != "", name: obj.Name},
		b.o.inNamespace(obj.Namespace), nil
}

func (b *uiBackend) Versions(ctx context.Context, obj ui.ObjectQuery) ([]ui.Version, error) {
	t, o, err := b.target(obj)
	if err != nil {
		return nil, err
	}
	_, recs, metas, err := o.versions(ctx, t, nil, 500)
	if err != nil {
		return nil, err
	}
	out := make([]ui.Version, 0, len(recs))
	for i, r := range recs {
		v := ui.Version{Name: metas[i].Name, At: r.ChangedAt.Time, Verb: r.Verb, UID: r.Object.UID, Restorable: r.Restorable, User: "(baseline)"}
		if r.Actor != nil {
			v.User = r.Actor.Username
		}
		out = append(out, v)
	}
	return out, nil
}

func (b *uiBackend) Diff(ctx context.Context, obj ui.ObjectQuery, from, to string) (*ui.Diff, error) {
	t, o, err := b.target(obj)
	if err != nil {
		return nil, err
	}
	d := &diffOptions{options: o}
	fromSide, err := d.version(ctx, t, from)
	if err != nil {
		return nil, err
	}
	var toSide side
	if to == "live" {
		toSide, err = d.live(ctx, t)
	} else {
		toSide, err = d.version(ctx, t, to)
	}
	if err != nil {
		return nil, err
	}
	return &ui.Diff{From: fromSide.label, To: toSide.label, Changes: uiChanges(diff.Diff(fromSide.state, toSide.state, diff.Options{}))}, nil
}

func uiChanges(cs []diff.Change) []ui.DiffChange {
	out := make([]ui.DiffChange, 0, len(cs))
	for _, c := range cs {
		dc := ui.DiffChange{Op: c.Op, Path: c.Path}
		if c.Op != "add" {
			dc.Before = strings.Join(valueLines(c.From), "\n")
		}
		if c.Op != "remove" {
			dc.After = strings.Join(valueLines(c.To), "\n")
		}
		out = append(out, dc)
	}
	return out
}

func (b *uiBackend) Restore(ctx context.Context, obj ui.ObjectQuery, version, digest string, dryRun bool) (*ui.RestoreResult, error) {
	t, o, err := b.target(obj)
	if err != nil {
		return nil, err
	}
	if version == "" {
		return nil, &ui.Error{Status: http.StatusBadRequest, Message: "version is required"}
	}
	if !dryRun && digest == "" {
		// The page confirms what its dry run showed, or nothing.
		return nil, &ui.Error{Status: http.StatusBadRequest, Message: "stateDigest is required: confirm the restore its dry run showed"}
	}
	r := &restoreOptions{options: o}
	st, err := r.create(ctx, t, record.RestoreSpec{Version: version, StateDigest: digest}, dryRun)
	if err != nil {
		return nil, err
	}
	return restoreResult(st, dryRun), nil
}

func restoreResult(st *record.RestoreStatus, dryRun bool) *ui.RestoreResult {
	res := &ui.RestoreResult{Phase: st.Phase, Action: st.Action, Message: st.Message, DryRun: dryRun, PlanDigest: st.PlanDigest, StateDigest: st.StateDigest}
	for _, c := range st.Changes {
		dc := ui.DiffChange{Op: c.Op, Path: c.Path}
		if c.From != nil {
			dc.Before = strings.Join(valueLines(rawValue(c.From.Raw)), "\n")
		}
		if c.To != nil {
			dc.After = strings.Join(valueLines(rawValue(c.To.Raw)), "\n")
		}
		res.Changes = append(res.Changes, dc)
	}
	for _, s := range st.Steps {
		res.Steps = append(res.Steps, stepLine(s))
	}
	return res
}

func rawValue(raw []byte) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return v
}

func (b *uiBackend) Plan(ctx context.Context, q ui.PlanQuery) (*ui.Plan, error) {
	ns := q.Namespace
	if ns == "" {
		var err error
		if ns, err = b.o.namespace(); err != nil {
			return nil, err
		}
	}
	o := b.o.inNamespace(ns)
	spec := record.RestorePlanSpec{Kind: q.Kind}
	switch q.Kind {
	case "as-of":
		spec.At = &metav1.Time{Time: q.At}
	case "undo":
		spec.User, spec.Since = q.User, &metav1.Time{Time: q.Since}
	default:
		return nil, &ui.Error{Status: http.StatusBadRequest, Message: "kind: as-of or undo"}
	}
	name := restoreName("ui-" + q.Kind)
	st, _, err := o.createPlan(ctx, false, name, spec)
	if err != nil {
		return nil, err
	}
	p := &ui.Plan{Name: name, Steps: []ui.PlanStep{}}
	for _, s := range st.Steps {
		p.Steps = append(p.Steps, ui.PlanStep{Action: s.Action, Resource: resourceCell(s.Object), Namespace: s.Object.Namespace, Name: s.Object.Name, Reason: s.Reason})
	}
	return p, nil
}

func (b *uiBackend) ExecutePlan(ctx context.Context, namespace, name, digest string, dryRun bool) (*ui.RestoreResult, error) {
	ns := namespace
	if ns == "" {
		var err error
		if ns, err = b.o.namespace(); err != nil {
			return nil, err
		}
	}
	r := &restoreOptions{options: b.o.inNamespace(ns)}
	t := &target{namespaced: true, name: name, resource: schema.GroupResource{Group: record.GroupName, Resource: "restoreplans"}}
	st, err := r.create(ctx, t, record.RestoreSpec{Plan: name, PlanDigest: digest}, dryRun)
	if err != nil {
		return nil, err
	}
	return restoreResult(st, dryRun), nil
}
