package manifest

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	restoremanifest "github.com/options-record/options-record/api/restore/manifest"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdutil"
)

type options struct {
	*cmdutil.Factory
	at     string // --version
	format string
}

// NewCmdManifest returns kubectl record manifest.
func NewCmdManifest(f *cmdutil.Factory) *cobra.Command {
	m := &options{Factory: f}
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
  kubectl record manifest deploy/web -n shop --version web-3f9a2c1b | kubectl apply -f -`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: f.CompleteObjects,
		RunE:              func(cmd *cobra.Command, args []string) error { return m.run(cmd, args) },
	}
	cmd.Flags().StringVar(&m.at, "version", "", "The version (from kubectl record history): its short name (web-3f9a2c1b, or a unique prefix of its digits) or long name; default: the newest the record can restore")
	_ = cmd.RegisterFlagCompletionFunc("version", f.CompleteVersions)
	cmd.Flags().StringVarP(&m.format, "output", "o", "yaml", "yaml or json")
	return cmd
}

func (m *options) run(cmd *cobra.Command, args []string) error {
	if m.format != "yaml" && m.format != "json" {
		return cmdutil.Usagef("-o %s: want yaml or json", m.format)
	}
	t, err := m.Target(args, true)
	if err != nil {
		return err
	}
	c, long, err := m.Version(cmd.Context(), t, m.at)
	if err != nil {
		return err
	}
	name := cmdutil.ShortName(c, long)
	if c.Manifest == nil || len(c.Manifest.Raw) == 0 {
		return cmdutil.WithExitCode(cmdutil.ExitNotFound, fmt.Errorf("version %s cannot be restored (no full state, or Secret values recorded as digests)", name))
	}
	var obj map[string]any
	if err := json.Unmarshal(c.Manifest.Raw, &obj); err != nil {
		return fmt.Errorf("version %s: the manifest is not an object: %w", name, err)
	}
	if err := restoremanifest.CheckSingleObject(obj, restoremanifest.Identity{Group: c.Object.APIGroup, Kind: c.Object.Kind,
		Namespace: c.Object.Namespace, Name: c.Object.Name}); err != nil {
		return cmdutil.WithExitCode(cmdutil.ExitNotRestored, fmt.Errorf("version %s: %w", name, err))
	}
	out := c.Manifest.Raw
	if m.format == "yaml" {
		if out, err = restoremanifest.JSONToYAML(c.Manifest.Raw); err != nil {
			return err
		}
	} else {
		out = append(out, '\n')
	}
	_, err = m.Streams.Out.Write(out)
	return err
}
