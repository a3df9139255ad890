package options

import (
	"io"

	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/options-record/options-record/cmd/options-record/app"
)

// Import are the flags of `options-record import`.
type Import struct {
	Common
	Rules
	BatchSize int
}

// NewImport returns the options of import with their defaults.
func NewImport() *Import { return &Import{} }

// Flags defines import's flags, in sections.
func (o *Import) Flags() (fss cliflag.NamedFlagSets) {
	o.Common.addFlags(fss.FlagSet("common"))
	o.Rules.addFlags(fss.FlagSet("rules"))
	fss.FlagSet("import").IntVar(&o.BatchSize, "batch-size", 400, "events stored per transaction")
	return fss
}

// Validate checks the flags.
func (o *Import) Validate() error { return o.Common.validate() }

// Config is the app's configuration: files are the arguments, the summary
// goes to out, logs (and, when progress is not nil, a progress bar) to logs.
func (o *Import) Config(files []string, out, logs, progress io.Writer) app.ImportOptions {
	return app.ImportOptions{
		Database: o.database(), Rules: o.rules(), Cluster: o.Cluster, BatchSize: o.BatchSize,
		SecretDigestKeyFile: o.SecretDigestKeyFile, Files: files, Out: out, Progress: progress,
		Logger: o.Logger(logs),
	}
}

// SQL are the flags of `options-record sql`.
type SQL struct {
	Common
}

// NewSQL returns the options of sql with their defaults.
func NewSQL() *SQL { return &SQL{} }

// Flags defines sql's flags, in sections.
func (o *SQL) Flags() (fss cliflag.NamedFlagSets) {
	o.Common.addFlags(fss.FlagSet("common"))
	return fss
}

// Validate checks the flags.
func (o *SQL) Validate() error { return o.Common.validate() }

// Config is the app's configuration: the query is the arguments joined.
func (o *SQL) Config(args []string, stdin io.Reader, out, errOut io.Writer) app.SQLOptions {
	return app.SQLOptions{
		Database: o.database(), Query: strings.Join(args, " "),
		Stdin: stdin, Out: out, Err: errOut, Logger: o.Logger(errOut),
	}
}

// Policy are the flags of `options-record policy`.
type Policy struct {
	Common
	Rules
	InCluster  bool
	Kubeconfig string
}

// NewPolicy returns the options of policy with their defaults.
func NewPolicy() *Policy { return &Policy{} }

// Flags defines policy's flags, in sections.
func (o *Policy) Flags() (fss cliflag.NamedFlagSets) {
	o.Common.addFlags(fss.FlagSet("common"))
	o.Rules.addFlags(fss.FlagSet("rules"))
	fs := fss.FlagSet("cluster")
	fs.BoolVar(&o.InCluster, "in-cluster", false, "add the OptionsRecordController objects of the cluster the command runs in")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "add the OptionsRecordController objects of this kubeconfig's cluster")
	return fss
}

// Validate checks the flags.
func (o *Policy) Validate() error { return o.Common.validate() }

// Config is the app's configuration, printing the policy to out.
func (o *Policy) Config(out, logs io.Writer) app.PolicyOptions {
	c := app.PolicyOptions{Rules: o.rules(), Out: out, Logger: o.Logger(logs)}
	if o.InCluster || o.Kubeconfig != "" {
		c.Kube = &app.KubeOptions{Kubeconfig: o.Kubeconfig}
	}
	return c
}

// Command is one command's options.
type Command interface {
	Flags() cliflag.NamedFlagSets
	Validate() error
}

// Commands are the commands, by name, with new options of each: what main
// dispatches on and what docs/command-line-flags.txt lists.
func Commands() []NamedCommand {
	return []NamedCommand{
		{"serve", "run the audit webhook sink (and the restore API, the aggregated API)", func() Command { return NewServe() }},
		{"import", "import audit log files (JSON lines or EventLists) through the same pipeline", func() Command { return NewImport() }},
		{"sql", "query the record (psql when installed; a QUERY argument, or interactive)", func() Command { return NewSQL() }},
		{"policy", "print the audit Policy the rules need", func() Command { return NewPolicy() }},
	}
}

// NamedCommand is a command's name, summary and options constructor.
type NamedCommand struct {
	Name, Summary string
	New           func() Command
}

// FlagSet returns a command's flags, all sections in one set, as the command line takes them
// (pflag, as kubectl: --name=value or --name value, anywhere among the
// arguments).
func FlagSet(name string, o Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	for _, section := range o.Flags().FlagSets {
		fs.AddFlagSet(section)
	}
	return fs
}
