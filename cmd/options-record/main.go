// Command options-record records who changed or deleted which Kubernetes
// object, with its prior state, from the kube-apiserver's audit webhook, in
// PostgreSQL.
//
//	options-record serve   [flags]            the audit webhook, the restore API, the aggregated API
//	options-record import  FILE... [flags]    audit log files through the same pipeline
//	options-record sql     [QUERY] [flags]    SQL on the database in use
//	options-record policy  [flags]            the audit Policy the rules need
//	options-record verify  [flags]            check the record against its tamper-evident log
//	options-record log-key [flags]            make the log's signing key
//	options-record admission-config [flags]   the observing webhook's configuration
//	options-record version [-o json|yaml]     the release, commit and build date
//
// main only builds the command line (cobra, with each command's flags from
// its options type in package cmd/options-record/app/options) and runs the
// app; docs/command-line-flags.txt lists every flag.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/options-record/options-record/cmd/options-record/app"
	"github.com/options-record/options-record/cmd/options-record/app/options"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run runs the command line and returns the exit code: 0, 1 for a failure,
// 2 for a usage error.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	if errors.As(err, new(usageError)) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return 2
	}
	return 1
}

// usageError is a mistake on the command line.
type usageError struct{ error }

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "options-record",
		Short:         "Record who changed or deleted Kubernetes objects, with their prior state",
		Long:          "options-record records who changed or deleted Kubernetes objects, with their prior state,\nfrom the kube-apiserver's audit webhook, in PostgreSQL.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          usageArgs(cobra.NoArgs),
		RunE:          func(cmd *cobra.Command, _ []string) error { return usageError{errors.New("a command is required")} },
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddGroup(&cobra.Group{ID: "run", Title: "Commands:"})
	for _, c := range options.Commands() {
		o := c.New()
		cmd := &cobra.Command{
			Use:     use[c.Name],
			Short:   c.Summary,
			Example: examples[c.Name],
			GroupID: "run",
			Args:    usageArgs(args[c.Name]),
			RunE: func(cmd *cobra.Command, argv []string) error {
				if err := o.Validate(); err != nil {
					return usageError{err}
				}
				return runCommand(cmd.Context(), c.Name, o, argv, stdin, stdout, stderr)
			},
		}
		sections := o.Flags()
		for _, fs := range sections.FlagSets {
			cmd.Flags().AddFlagSet(fs)
		}
		setSectionedHelp(cmd, sections)
		cmd.ValidArgsFunction = cobra.NoFileCompletions
		if c.Name == "import" {
			cmd.ValidArgsFunction = nil // files
		}
		root.AddCommand(cmd)
	}
	root.AddCommand(newVersionCommand(stdout))
	return root
}

// setSectionedHelp makes cmd's --help list its flags by section (as
// kube-apiserver and metrics-server do), after its usage and examples.
func setSectionedHelp(cmd *cobra.Command, sections cliflag.NamedFlagSets) {
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n", cmd.Short, cmd.UseLine())
		if cmd.HasExample() {
			fmt.Fprintf(w, "\nExamples:\n%s\n", cmd.Example)
		}
		cliflag.PrintSections(w, sections, 0)
		fmt.Fprintf(w, "\n  -h, --help   help for %s\n", cmd.Name())
	})
}

var use = map[string]string{
	"serve":            "serve [flags]",
	"import":           "import FILE... [flags]",
	"sql":              "sql [QUERY] [flags]",
	"policy":           "policy [flags]",
	"verify":           "verify [flags]",
	"log-key":          "log-key --name NAME --log-signing-key-file FILE",
	"admission-config": "admission-config [flags]",
}

var args = map[string]cobra.PositionalArgs{
	"serve":            cobra.NoArgs,
	"import":           cobra.MinimumNArgs(1),
	"sql":              cobra.ArbitraryArgs,
	"policy":           cobra.NoArgs,
	"verify":           cobra.NoArgs,
	"log-key":          cobra.NoArgs,
	"admission-config": cobra.NoArgs,
}

var examples = map[string]string{
	"serve": `  options-record serve --rules-file rules.yaml              # both roles, embedded PostgreSQL, no cluster
  options-record serve --roles=ingest --in-cluster           # the ingest workload of deploy/
  options-record serve --context kind-dev --api-bind-address :8444   # KUBECONFIG's context`,
	"import":  `  options-record import /var/log/kubernetes/audit.log --cluster prod --rules-file rules.yaml`,
	"sql":     `  options-record sql "SELECT deleted_by, resource, name FROM deletions ORDER BY deleted_at DESC LIMIT 5"`,
	"policy":  `  options-record policy --rules-file rules.yaml > policy.yaml`,
	"verify":  `  options-record verify --log-verifier-key-file log.pub --checkpoint-dir /mnt/checkpoints`,
	"log-key": `  options-record log-key --name record.example.com/log --log-signing-key-file log.key > log.pub`,
	"admission-config": `  options-record admission-config --in-cluster | kubectl apply -f -       # Service options-record-webhook:8444, CA from cert-manager
  options-record admission-config --rules-file rules.yaml --url https://10.0.0.5:8444 --ca-file ca.crt`,
}

// usageArgs makes a positional-argument error a usage error (exit code 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, argv []string) error {
		if err := check(cmd, argv); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// runCommand runs one command with its validated options.
func runCommand(ctx context.Context, name string, o options.Command, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch o := o.(type) {
	case *options.Serve:
		tuneRuntime()
		cfg := o.Config(stderr)
		// client-go and the generic apiserver log through klog: into the
		// same structured log.
		klog.SetSlogLogger(cfg.Logger)
		return app.Serve(ctx, cfg)
	case *options.Import:
		var progress io.Writer
		if isTerminal(stderr) {
			progress = stderr
		}
		return app.Import(ctx, o.Config(argv, stdout, stderr, progress))
	case *options.SQL:
		return app.SQL(ctx, o.Config(argv, stdin, stdout, stderr))
	case *options.Policy:
		return app.Policy(ctx, o.Config(stdout, stderr))
	case *options.Verify:
		return app.Verify(ctx, o.Config(stdout, stderr))
	case *options.LogKey:
		return app.LogKey(o.Config(stdout))
	case *options.AdmissionConfig:
		return app.AdmissionConfig(ctx, o.Config(stdout, stderr))
	}
	return fmt.Errorf("no command %q", name)
}

// tuneRuntime keeps the sink's memory near what it needs. Under `make
// bench`'s load the live heap after a collection is 31-44 MiB (the bodies
// in flight and their rows), and about 60 MiB of the process are the
// binary's own pages (RssFile). Request bodies are pooled (auditsink), so
// the collector has less to do than it had: GOGC=60 keeps the peak at
// 150-158 MiB; GOGC=75 peaked at 158-171 MiB for 3 µs less of the sink's
// CPU per event with every event kept (no difference at 10% kept). The
// soft limit (GOMEMLIMIT) of 150 MiB only binds when more bytes are in
// flight than that load sends; the bounded in-flight bytes keep the heap
// under it. GOGC and GOMEMLIMIT in the environment win.
func tuneRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(60)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(150 << 20)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
