package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history/diff"
	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

type diffOptions struct {
	*options
	from, to     string
	serverFields bool
	status       bool
	color        string
}

func newDiffCommand(o *options) *cobra.Command {
	d := &diffOptions{options: o}
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
  kubectl record diff cm/app-config -n shop --from 5e0c…9f1a.8c3b…e201 --to live
  kubectl record diff deploy web -n shop --from V1 --to V2 --show-status`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return d.run(cmd, args) },
	}
	cmd.Flags().StringVar(&d.from, "from", "", "The version to compare from (default: the state before the newest change)")
	cmd.Flags().StringVar(&d.to, "to", "", "The version to compare to, or live (default: the newest version)")
	cmd.Flags().BoolVar(&d.serverFields, "show-server-fields", false, "Compare server-set metadata too (resourceVersion, generation, uid, timestamps; never managedFields)")
	cmd.Flags().BoolVar(&d.status, "show-status", false, "Compare status too")
	cmd.Flags().StringVar(&d.color, "color", "auto", "Colour the diff: auto (on a terminal), always or never")
	return cmd
}

// side is one side of a diff: a state and how to name it.
type side struct {
	label string
	state map[string]any
}

func (d *diffOptions) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	switch d.color {
	case "auto", "always", "never":
	default:
		return usageError{fmt.Errorf("--color %s: want auto, always or never", d.color)}
	}
	t, err := d.target(args, true)
	if err != nil {
		return err
	}
	var from, to side
	switch {
	case d.from == "" && d.to == "":
		c, name, err := d.newestChange(ctx, t)
		if err != nil {
			return err
		}
		if from.state, err = rawState(c.PriorState); err != nil {
			return err
		}
		if c.Verb == "delete" || c.Verb == "deletecollection" {
			to.state = nil // its state is the last one; after it, nothing
		} else if to.state, err = rawState(c.State); err != nil {
			return err
		}
		from.label = "before " + short(name, 48)
		to.label = fmt.Sprintf("%s (%s by %s, %s ago)", short(name, 48), c.Verb, actorOf(c), age(c.ChangedAt.Time))
		if from.state == nil && c.Verb != "create" {
			return &codedError{4, fmt.Errorf("the record holds no state from before the newest change %s: see kubectl record history", name)}
		}
	default:
		if d.from == "" {
			return usageError{fmt.Errorf("--to without --from: say which version to compare from")}
		}
		if from, err = d.version(ctx, t, d.from); err != nil {
			return err
		}
		switch d.to {
		case "live":
			if to, err = d.live(ctx, t); err != nil {
				return err
			}
		case "":
			c, name, err := d.options.version(ctx, t, "")
			if err != nil {
				return err
			}
			if to.state, err = rawState(c.State); err != nil {
				return err
			}
			to.label = short(name, 48) + " (newest)"
		default:
			if to, err = d.version(ctx, t, d.to); err != nil {
				return err
			}
		}
	}
	changes := diff.Diff(from.state, to.state, diff.Options{IncludeStatus: d.status, IncludeServerFields: d.serverFields})
	colored := d.color == "always" || d.color == "auto" && printers.AllowsColorOutput(d.streams.Out)
	return writeDiff(d.streams.Out, fmt.Sprintf("%s/%s", t.resource, t.name), from.label, to.label, changes, colored)
}

// newestChange is the object's newest recorded change, with its states.
func (d *diffOptions) newestChange(ctx context.Context, t *target) (*record.ChangeRecord, string, error) {
	_, _, metas, err := d.versions(ctx, t, nil, 1)
	if err != nil {
		return nil, "", err
	}
	if len(metas) == 0 {
		return nil, "", &codedError{4, fmt.Errorf("no recorded change of %s/%s (that you may see)", t.resource, t.name)}
	}
	return d.options.version(ctx, t, metas[0].Name)
}

// version is the state of a named version.
func (d *diffOptions) version(ctx context.Context, t *target, name string) (side, error) {
	c, name, err := d.options.version(ctx, t, name)
	if err != nil {
		return side{}, err
	}
	state, err := rawState(c.State)
	if err != nil {
		return side{}, err
	}
	if state == nil {
		return side{}, &codedError{4, fmt.Errorf("version %s holds no full state (a delete answered by a Status, or not restorable)", name)}
	}
	return side{label: fmt.Sprintf("%s (%s by %s, %s ago)", short(name, 48), c.Verb, actorOf(c), age(c.ChangedAt.Time)), state: state}, nil
}

// live is the object as the cluster has it now, read as the caller.
func (d *diffOptions) live(ctx context.Context, t *target) (side, error) {
	cfg, err := d.config.ToRESTConfig()
	if err != nil {
		return side{}, err
	}
	mapper, err := d.config.ToRESTMapper()
	if err != nil {
		return side{}, err
	}
	gvr, err := mapper.ResourceFor(t.resource.WithVersion(""))
	if err != nil {
		return side{}, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return side{}, err
	}
	ri := dynamic.ResourceInterface(dc.Resource(gvr))
	what := "get " + t.resource.String() + " " + t.name
	if t.namespaced {
		ns, err := d.namespace()
		if err != nil {
			return side{}, err
		}
		ri, what = dc.Resource(gvr).Namespace(ns), what+" in namespace "+ns
	}
	u, err := ri.Get(ctx, t.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return side{label: "live (absent: no such object now)"}, nil
	}
	if err != nil {
		return side{}, explain(err, what)
	}
	return side{label: "live (resourceVersion " + u.GetResourceVersion() + ")", state: u.Object}, nil
}

func rawState(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return nil, nil
	}
	data := raw.Raw
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("a recorded state is not an object: %w", err)
	}
	return obj, nil
}

// writeDiff prints changes as a unified diff per changed path: the old
// value's lines after -, the new one's after +, as YAML. Every value was
// written by some cluster user: control characters are escaped, and
// nothing from the record can end a line or drive the terminal.
func writeDiff(w io.Writer, object, fromLabel, toLabel string, changes []diff.Change, colored bool) error {
	red, green, cyan, reset := "", "", "", ""
	if colored {
		red, green, cyan, reset = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[0m"
	}
	fmt.Fprintf(w, "diff %s\n--- %s\n+++ %s\n", cell(object), cell(fromLabel), cell(toLabel))
	if len(changes) == 0 {
		fmt.Fprintln(w, "(no difference in the fields compared)")
		return nil
	}
	for _, c := range changes {
		path := c.Path
		if path == "" {
			path = "/"
		}
		fmt.Fprintf(w, "%s@@ %s (%s) @@%s\n", cyan, cell(path), c.Op, reset)
		if c.Op != "add" {
			for _, l := range valueLines(c.From) {
				fmt.Fprintf(w, "%s-%s%s\n", red, l, reset)
			}
		}
		if c.Op != "remove" {
			for _, l := range valueLines(c.To) {
				fmt.Fprintf(w, "%s+%s%s\n", green, l, reset)
			}
		}
	}
	return nil
}

// valueLines renders a value as YAML lines (a scalar as its JSON text).
func valueLines(v any) []string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // text for a terminal or a page's textContent: < stays <
	if err := enc.Encode(v); err != nil {
		return []string{cell(fmt.Sprint(v))}
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	switch v.(type) {
	case map[string]any, []any:
		y, err := manifest.JSONToYAML(data)
		if err == nil {
			data = y
		}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		out = append(out, escape.Line(l))
	}
	return out
}
