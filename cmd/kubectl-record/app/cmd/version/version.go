// Package version is `kubectl record version`: the plugin's release, commit
// and build date (api/version, stamped by the Makefile), as `kubectl
// version` prints them: text, or -o json / -o yaml with the same fields
// (clientVersion: gitVersion, gitCommit, buildDate, ...).
package version

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	buildversion "github.com/options-record/options-record/api/version"
)

// Document is what -o json and -o yaml print, as kubectl version does.
type Document struct {
	ClientVersion *apimachineryversion.Info `json:"clientVersion"`
}

// NewCommand returns the version verb.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit and build date",
		Example: `  kubectl record version
  kubectl record version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Write(streams.Out, output, buildversion.Get())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "One of 'yaml' or 'json'")
	return cmd
}

// Write prints info as format: "" (text), "json" or "yaml".
func Write(w io.Writer, format string, info buildversion.Info) error {
	doc := Document{ClientVersion: info.Kubernetes()}
	switch format {
	case "":
		_, err := fmt.Fprintf(w, "Client Version: %s\nCommit: %s\nBuild Date: %s\n", doc.ClientVersion.GitVersion, or(info.Commit), or(info.BuildDate))
		return err
	case "json":
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("--output must be 'yaml' or 'json', not %q", format)
}

func or(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
