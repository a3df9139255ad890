// Command options-record records who changed or deleted which Kubernetes
// object, with its prior state, from the kube-apiserver's audit webhook, in
// PostgreSQL.
//
//	options-record serve   [flags]            the audit webhook, the restore API, the aggregated API
//	options-record import  [flags] FILE...    audit log files through the same pipeline
//	options-record sql     [flags] [QUERY]    SQL on the database in use
//	options-record policy  [flags]            the audit Policy the rules need
//
// main only parses flags into the command's options type (package
// cmd/options-record/app/options) and runs the app; docs/command-line-flags.txt
// lists every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/options-record/options-record/cmd/options-record/app"
	"github.com/options-record/options-record/cmd/options-record/app/options"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `options-record records who changed or deleted Kubernetes objects, with their prior state.

Usage:
  options-record serve  [flags]          run the audit webhook sink
  options-record import [flags] FILE...  import audit log files (JSON lines or EventLists)
  options-record sql    [flags] [QUERY]  query the record (psql when installed)
  options-record policy [flags]          print the audit Policy the rules need

Run 'options-record COMMAND -h' for a command's flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := command(ctx, args[0], args[1:], stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errUnknownCommand) {
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "options-record %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

var errUnknownCommand = errors.New("unknown command")

// command parses a command's flags into its options type and runs it.
func command(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	switch name {
	case "serve":
		o := options.NewServe()
		fs := options.FlagSet(name, o, stderr)
		if err := parse(fs, args, o); err != nil {
			return err
		}
		tuneRuntime()
		return app.Serve(ctx, o.Config(stderr))
	case "import":
		o := options.NewImport()
		fs := options.FlagSet(name, o, stderr)
		if err := parse(fs, args, o); err != nil {
			return err
		}
		var progress io.Writer
		if isTerminal(stderr) {
			progress = stderr
		}
		return app.Import(ctx, o.Config(fs.Args(), stdout, stderr, progress))
	case "sql":
		o := options.NewSQL()
		fs := options.FlagSet(name, o, stderr)
		if err := parse(fs, args, o); err != nil {
			return err
		}
		return app.SQL(ctx, o.Config(fs.Args(), os.Stdin, stdout, stderr))
	case "policy":
		o := options.NewPolicy()
		fs := options.FlagSet(name, o, stderr)
		if err := parse(fs, args, o); err != nil {
			return err
		}
		return app.Policy(ctx, o.Config(stdout, stderr))
	}
	return errUnknownCommand
}

func parse(fs *flag.FlagSet, args []string, o options.Command) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return o.Validate()
}

// tuneRuntime trades memory the sink has for CPU it lacks: the garbage
// collector runs at twice the default heap growth (GOGC=200) under a soft
// limit of 224 MiB (GOMEMLIMIT), which the bounded in-flight bytes keep it
// within. GOGC and GOMEMLIMIT in the environment win.
func tuneRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(224 << 20)
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
