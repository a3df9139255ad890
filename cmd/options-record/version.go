package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/version"
)

// newVersionCommand is `options-record version`: the release, commit and
// build date the Makefile stamped (api/version). -o json and -o yaml print
// the document the aggregated API serves at /version (as a Kubernetes
// component's: gitVersion, gitCommit, buildDate, ...).
func newVersionCommand(stdout io.Writer) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and build date",
		Example: "  options-record version\n  options-record version -o json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				_, err := fmt.Fprintf(stdout, "options-record %s\n", info)
				return err
			case "json":
				b, err := json.MarshalIndent(info.Kubernetes(), "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(stdout, "%s\n", b)
				return err
			case "yaml":
				b, err := yaml.Marshal(info.Kubernetes())
				if err != nil {
					return err
				}
				_, err = stdout.Write(b)
				return err
			}
			return usageError{fmt.Errorf("--output must be 'yaml' or 'json', not %q", output)}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "One of 'yaml' or 'json'")
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	return cmd
}
