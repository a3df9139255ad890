package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore/manifest"
)

// version returns one recorded change of the target with its states and
// manifest: the named version, or the newest the record can restore.
func (o *options) version(ctx context.Context, t *target, name string) (*record.ChangeRecord, string, error) {
	if name == "" {
		_, recs, metas, err := o.versions(ctx, t, nil, 500)
		if err != nil {
			return nil, "", err
		}
		for i, r := range recs {
			if r.Restorable {
				name = metas[i].Name
				break
			}
		}
		if name == "" {
			return nil, "", &codedError{4, fmt.Errorf("the record holds no full state of %s/%s (that you may see): see kubectl record history", t.resource, t.name)}
		}
	}
	rc, err := o.record()
	if err != nil {
		return nil, "", err
	}
	if !t.namespaced {
		c, err := rc.ClusterChanges().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, "", explain(err, "get version "+name)
		}
		return &c.ChangeRecord, name, nil
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, "", err
	}
	c, err := rc.Changes(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", explain(err, "get version "+name+" in namespace "+ns)
	}
	if c.Object.Resource != t.resource.Resource || c.Object.APIGroup != t.resource.Group || c.Object.Name != t.name {
		return nil, "", usageError{fmt.Errorf("version %s is of %s %s, not of %s/%s", name, resourceCell(c.Object), cell(c.Object.Name), t.resource, t.name)}
	}
	return &c.ChangeRecord, name, nil
}

type manifestOptions struct {
	*options
	at     string // --version
	format string
}

func newManifestCommand(o *options) *cobra.Command {
	m := &manifestOptions{options: o}
	cmd := &cobra.Command{
		Use:   "manifest TYPE/NAME",
		Short: "A clean manifest of a recorded version, for kubectl apply -f -",
		Long: `Print the object as the record holds it at a version (the newest it can
restore, or --version), without what the server sets (status, uid,
resourceVersion, managedFields...) and without ownerReferences to owners that
are gone: ready for kubectl apply -f -. It is checked to be exactly one
object, the recorded one: a recorded state cannot smuggle a List or another
object into what you apply.`,
		Example: `  kubectl record manifest cm/app-config -n shop
  kubectl record manifest deploy/web -n shop --version 5e0c…9f1a.8c3b…e201 | kubectl apply -f -`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: o.completeObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return m.run(cmd, args) },
	}
	cmd.Flags().StringVar(&m.at, "version", "", "The version (from kubectl record history); default: the newest the record can restore")
	cmd.Flags().StringVarP(&m.format, "output", "o", "yaml", "yaml or json")
	return cmd
}

func (m *manifestOptions) run(cmd *cobra.Command, args []string) error {
	if m.format != "yaml" && m.format != "json" {
		return usageError{fmt.Errorf("-o %s: want yaml or json", m.format)}
	}
	t, err := m.target(args, true)
	if err != nil {
		return err
	}
	c, name, err := m.version(cmd.Context(), t, m.at)
	if err != nil {
		return err
	}
	if c.Manifest == nil || len(c.Manifest.Raw) == 0 {
		return &codedError{4, fmt.Errorf("version %s cannot be restored (no full state, or Secret values recorded as digests)", name)}
	}
	var obj map[string]any
	if err := json.Unmarshal(c.Manifest.Raw, &obj); err != nil {
		return fmt.Errorf("version %s: the manifest is not an object: %w", name, err)
	}
	if err := manifest.CheckSingleObject(obj, manifest.Identity{Group: c.Object.APIGroup, Kind: c.Object.Kind,
		Namespace: c.Object.Namespace, Name: c.Object.Name}); err != nil {
		return &codedError{5, fmt.Errorf("version %s: %w", name, err)}
	}
	out := c.Manifest.Raw
	if m.format == "yaml" {
		if out, err = manifest.JSONToYAML(c.Manifest.Raw); err != nil {
			return err
		}
	} else {
		out = append(out, '\n')
	}
	_, err = m.streams.Out.Write(out)
	return err
}
