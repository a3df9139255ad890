package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

type exportOptions struct {
	*options
	asOf      string
	dir       string
	resources []string
}

func newExportCommand(o *options) *cobra.Command {
	e := &exportOptions{options: o}
	cmd := &cobra.Command{
		Use:   "export -n NAMESPACE -o DIR",
		Short: "Write the namespace as it was at a time: one clean manifest per object",
		Long: `Write every recorded object of the namespace as it was at a time (default:
now) into DIR, one clean YAML manifest per object (status, uid,
resourceVersion, managedFields... removed; ownerReferences to owners that are
gone dropped), that kubectl apply -f DIR accepts: the file backup operators
know, served from the record. Only objects you may read are written; objects
whose state the record cannot restore (Secret values recorded as digests, no
full state) are listed and skipped. DIR is created if needed; existing files
are never overwritten.`,
		Example: `  kubectl record export -n shop -o shop-now/
  kubectl record export -n shop --as-of 2026-11-25T09:00:00Z -o shop-before-the-outage/
  kubectl apply --dry-run=server -f shop-before-the-outage/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return e.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&e.asOf, "as-of", "", "The time (RFC 3339, or 2h for two hours ago); default: now")
	cmd.Flags().StringVarP(&e.dir, "output", "o", "", "The directory to write into (required)")
	cmd.Flags().StringSliceVar(&e.resources, "resources", nil, "Only these types (cm, deployments.apps...), comma-separated")
	return cmd
}

func (e *exportOptions) run(ctx context.Context) error {
	if e.dir == "" {
		return usageError{errors.New("-o DIR is required: the directory to write the manifests into")}
	}
	at := now()
	if e.asOf != "" {
		var err error
		if at, err = parseTime(e.asOf); err != nil {
			return err
		}
	}
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	var only []*target
	for _, r := range e.resources {
		gr, namespaced, err := e.resolve(r)
		if err != nil {
			return err
		}
		if !namespaced {
			return usageError{fmt.Errorf("%s is cluster-scoped: export writes a namespace's objects", gr)}
		}
		only = append(only, &target{resource: gr, namespaced: true})
	}
	if len(only) == 0 {
		only = []*target{nil}
	}
	rc, err := e.record()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return err
	}
	var written, skipped int
	for _, t := range only {
		opts := metav1.ListOptions{FieldSelector: t.selector("asOf=" + at.UTC().Format(time.RFC3339Nano)), Limit: 100}
		for {
			page, err := rc.Changes(ns).List(ctx, opts)
			if err != nil {
				return explain(err, "list the objects of namespace "+ns+" as of "+at.UTC().Format(time.RFC3339))
			}
			for _, c := range page.Items {
				file, err := e.write(ctx, ns, &c)
				if err != nil {
					return err
				}
				if file == "" {
					skipped++
					continue
				}
				written++
			}
			if page.Continue == "" {
				break
			}
			opts.Continue = page.Continue
		}
	}
	fmt.Fprintf(e.streams.Out, "Exported %d objects of namespace %s as of %s into %s", written, cell(ns), at.UTC().Format(time.RFC3339), cell(e.dir))
	if skipped > 0 {
		fmt.Fprintf(e.streams.Out, " (%d skipped: see above)", skipped)
	}
	fmt.Fprintln(e.streams.Out)
	return nil
}

// write writes one object's manifest as of its version; "" when skipped.
func (e *exportOptions) write(ctx context.Context, ns string, c *record.Change) (string, error) {
	what := resourceCell(c.Object) + "/" + cell(c.Object.Name)
	if !c.Restorable {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: the record holds no restorable state of it (Secret values as digests, or no full state)\n", what)
		return "", nil
	}
	rc, err := e.record()
	if err != nil {
		return "", err
	}
	full, err := rc.Changes(ns).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return "", explain(err, "get version "+c.Name+" in namespace "+ns)
	}
	if full.Manifest == nil || len(full.Manifest.Raw) == 0 {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: no manifest\n", what)
		return "", nil
	}
	var obj map[string]any
	if err := json.Unmarshal(full.Manifest.Raw, &obj); err != nil {
		return "", fmt.Errorf("%s: the manifest is not an object: %w", what, err)
	}
	if err := manifest.CheckSingleObject(obj, manifest.Identity{Group: full.Object.APIGroup, Kind: full.Object.Kind,
		Namespace: full.Object.Namespace, Name: full.Object.Name}); err != nil {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: %s\n", what, cell(err.Error()))
		return "", nil
	}
	name, err := manifestFile(full.Object)
	if err != nil {
		fmt.Fprintf(e.streams.ErrOut, "skipped %s: %s\n", what, cell(err.Error()))
		return "", nil
	}
	y, err := manifest.JSONToYAML(full.Manifest.Raw)
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("%w (export never overwrites a file: use an empty directory)", err)
	}
	if _, err := f.Write(y); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// manifestFile names an object's file: resource[.group]_name.yaml. The
// names were written by cluster users: one that could leave the directory
// or hide a file is refused.
func manifestFile(o record.ObjectReference) (string, error) {
	base := o.Resource
	if o.APIGroup != "" {
		base += "." + o.APIGroup
	}
	base += "_" + o.Name + ".yaml"
	if o.Resource == "" || o.Name == "" || o.Name == "." || o.Name == ".." || strings.HasPrefix(base, ".") ||
		strings.ContainsAny(base, "/\\\x00") || strings.ContainsFunc(base, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("no safe file name for %q", o.Name)
	}
	return base, nil
}
