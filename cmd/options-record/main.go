// Command options-record records who changed or deleted which Kubernetes
// object, with its prior state, from the kube-apiserver's audit webhook, in
// PostgreSQL.
//
//	options-record serve   [flags]            the audit webhook (and later the restore API)
//	options-record import  [flags] FILE...    audit log files through the same pipeline
//	options-record sql     [flags] [QUERY]    SQL on the database in use
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/options-record/options-record/cmd/options-record/app"
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
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stderr)
	case "import":
		err = importCmd(ctx, args[1:], stdout, stderr)
	case "sql":
		err = sqlCmd(ctx, args[1:], stdout, stderr)
	case "policy":
		err = policyCmd(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "options-record %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// common are the flags every command shares.
type common struct {
	dataDir, databaseURL, logLevel, namespace, cluster string
	rulesFiles                                         stringList
	secretDigestKeyFile                                string
}

func (c *common) register(fs *flag.FlagSet, withRules bool) {
	fs.StringVar(&c.dataDir, "data-dir", ".options-record", "directory of the embedded PostgreSQL and generated credentials")
	fs.StringVar(&c.databaseURL, "database-url", os.Getenv("OPTIONS_RECORD_DATABASE_URL"), "PostgreSQL connection string; empty starts the embedded PostgreSQL in --data-dir (env OPTIONS_RECORD_DATABASE_URL)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	if withRules {
		fs.Var(&c.rulesFiles, "rules-file", "YAML file of OptionsRecordController objects (repeatable)")
		fs.StringVar(&c.namespace, "namespace", "options-record", "the sink's own namespace: rules there may select any namespace")
		fs.StringVar(&c.cluster, "cluster", "default", "cluster name recorded for events from the configured token or client CA")
		fs.StringVar(&c.secretDigestKeyFile, "secret-digest-key-file", "", "key of the HMAC digests that replace Secret values (the same for every replica of a cluster); empty: generated under --data-dir")
	}
}

func (c *common) database() app.DatabaseOptions {
	return app.DatabaseOptions{URL: c.databaseURL, DataDir: c.dataDir}
}

func (c *common) rules() app.RulesOptions {
	return app.RulesOptions{Files: c.rulesFiles, Namespace: c.namespace}
}

func (c *common) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl}))
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs, true)
	o := app.ServeOptions{}
	fs.Func("roles", "comma-separated parts this process runs: ingest (webhook, rule sync, baselines, retention) and api (the restore API, which impersonates callers); default ingest,api (the API only with --api-bind-address). The default install runs each in its own workload and service account", func(v string) error {
		o.Roles = nil
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				o.Roles = append(o.Roles, app.Role(r))
			}
		}
		return nil
	})
	fs.StringVar(&o.WebhookAddr, "webhook-bind-address", ":8443", "address of the HTTPS audit webhook")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serving certificate (reloaded when it changes); empty: self-signed under --data-dir")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "serving key")
	fs.StringVar(&o.ClientCAFile, "webhook-client-ca", "", "CA that verifies the apiservers' client certificates")
	var clientCNs stringList
	fs.Var(&clientCNs, "webhook-client-cn", "common name of an apiserver's client certificate (repeatable); required with --webhook-client-ca unless --webhook-clients-file or --webhook-allow-any-client-cert")
	fs.BoolVar(&o.AllowAnyClientCert, "webhook-allow-any-client-cert", false, "take any certificate --webhook-client-ca verifies for the apiserver (only for a CA that issues nothing but apiserver client certificates, never the cluster CA)")
	fs.StringVar(&o.TokenFile, "webhook-token-file", "", "bearer token the apiserver presents (its events are recorded under --cluster)")
	fs.StringVar(&o.ClientsFile, "webhook-clients-file", "", "YAML list of apiservers (token file or certificate CN) and their cluster names")
	fs.Int64Var(&o.MaxBodyBytes, "webhook-max-body-bytes", 64<<20, "largest EventList body accepted")
	fs.IntVar(&o.MaxInFlight, "webhook-max-in-flight", 8, "batches processed at once; more get 429 and are retried")
	fs.Int64Var(&o.MaxInFlightBytes, "webhook-max-in-flight-bytes", 96<<20, "request bytes held at once; more get 429 and are retried (bounds memory)")
	fs.Int64Var(&o.MinBodyRate, "webhook-min-body-rate", 32<<10, "slowest a request body may arrive, in bytes per second after its first 2 s; slower ones get 408 (bodies are read before they take an in-flight slot)")
	fs.DurationVar(&o.BodyTimeout, "webhook-body-timeout", 15*time.Second, "longest a request body may take to arrive; longer ones get 408")
	fs.DurationVar(&o.MaxEventAge, "webhook-max-event-age", 0, "events older than this are skipped (they would each make a daily partition); 0: the longest retention of the rules in force, at least a day (400 days until the rules are known)")
	fs.BoolVar(&o.WebhookHTTP2, "webhook-http2", false, "offer HTTP/2 on the webhook as well as HTTP/1.1 (HTTP/1.1 costs less CPU per event for large audit batches)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "127.0.0.1:9090", "address of /metrics, /healthz and /readyz (plain HTTP)")
	api := app.APIOptions{}
	fs.StringVar(&api.Addr, "api-bind-address", "", "HTTPS address of the restore API; empty disables it")
	fs.StringVar(&api.TLSCertFile, "api-tls-cert-file", "", "restore API serving certificate; empty reuses the webhook's")
	fs.StringVar(&api.TLSKeyFile, "api-tls-key-file", "", "restore API serving key")
	fs.StringVar(&api.TokenFile, "api-token-file", "", "standalone mode: read-only API on loopback for callers presenting this token (no cluster)")
	fs.Func("api-audiences", "comma-separated token audiences the restore API accepts (e.g. options-record: callers use `kubectl create token SA --audience options-record`); empty: the apiserver's own", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				api.Audiences = append(api.Audiences, a)
			}
		}
		return nil
	})
	fs.DurationVar(&api.RequestTimeout, "api-request-timeout", time.Minute, "deadline of each restore API request")
	fs.DurationVar(&api.StatementTimeout, "api-statement-timeout", 30*time.Second, "statement_timeout of the restore API's queries")
	fs.IntVar(&api.MaxInFlight, "api-max-in-flight", 16, "restore API requests served at once; more get 429")
	fs.IntVar(&api.MaxPlanObjects, "api-max-plan-objects", 2000, "objects one restore plan may cover; a larger plan is refused (narrow it)")
	fs.IntVar(&api.MaxInFlightPerUser, "api-max-in-flight-per-user", 4, "restore API requests of one caller served at once; more get 429")
	agg := app.AggregatedOptions{}
	fs.StringVar(&agg.Addr, "aggregated-bind-address", "", "HTTPS address of the aggregated API (record.optionsrecord.io, reached through the kube-apiserver; needs --api-bind-address and a cluster); empty disables it")
	fs.StringVar(&agg.RequestHeaderCAFile, "aggregated-requestheader-ca-file", "", "front-proxy CA: the kube-apiserver's --requestheader-client-ca-file (re-read when it changes); empty: the one the kube-apiserver publishes in kube-system/extension-apiserver-authentication, read with a GET every 10 minutes into --data-dir")
	fs.Func("aggregated-requestheader-allowed-names", "comma-separated common names of the kube-apiserver's proxy client certificate (its --requestheader-allowed-names); empty: those published with the CA, or any the front-proxy CA signed", func(v string) error {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				agg.RequestHeaderAllowedNames = append(agg.RequestHeaderAllowedNames, n)
			}
		}
		return nil
	})
	fs.StringVar(&o.JournalDir, "journal-dir", "", "durable local journal: batches the database cannot take are acknowledged from here and stored later")
	k := app.KubeOptions{}
	inCluster := fs.Bool("in-cluster", false, "follow the OptionsRecordController objects of the cluster the sink runs in (in-cluster config)")
	fs.StringVar(&k.Kubeconfig, "kubeconfig", "", "follow the OptionsRecordController objects of this kubeconfig's cluster")
	fs.DurationVar(&k.Resync, "resync", 10*time.Minute, "period of the safety-net LIST of OptionsRecordControllers")
	fs.DurationVar(&k.StatusInterval, "status-interval", 15*time.Second, "how often OptionsRecordController statuses are written at most")
	fs.BoolVar(&k.Baseline, "baseline", true, "LIST the objects a rule begins to cover and store them as baseline versions")
	fs.IntVar(&k.BaselineMaxObjects, "baseline-max-objects", 100000, "objects one baseline pass lists at most; the next pass, 10 s later, goes on")
	fs.StringVar(&k.Identity, "identity", os.Getenv("POD_NAME"), "this replica's name in the status Lease (default: hostname)")
	var trusted stringList
	fs.Var(&trusted, "trusted-rule-namespaces", "CLUSTER=NS[,NS...]: on CLUSTER only OptionsRecordControllers in these namespaces may select any namespace (repeatable); default: --namespace on --cluster, none on other clusters")
	tenantSecretData := fs.Bool("tenant-secret-data", false, "let rules outside the trusted namespaces record Secret values (otherwise digests)")
	maxRetention := fs.Duration("max-retention", 2160*time.Hour, "longest retention any rule gets (and so the record)")
	tenantMaxRetention := fs.Duration("tenant-max-retention", 720*time.Hour, "longest retention a rule outside the trusted namespaces gets (at most --max-retention)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *inCluster || k.Kubeconfig != "" {
		o.Kube = &k
	}
	if api.Addr != "" {
		o.API = &api
		if agg.Addr != "" {
			api.Aggregated = &agg
		}
	} else if agg.Addr != "" {
		return errors.New("--aggregated-bind-address needs --api-bind-address: the aggregated API runs in the API role")
	}
	o.Database, o.Rules, o.Cluster, o.Logger = c.database(), c.rules(), c.cluster, c.logger(stderr)
	o.Rules.TrustedNamespaces, o.Rules.TenantSecretData = trusted, *tenantSecretData
	o.Rules.MaxRetention, o.Rules.TenantMaxRetention = *maxRetention, *tenantMaxRetention
	o.SecretDigestKeyFile = c.secretDigestKeyFile
	o.ClientCNs = clientCNs
	tuneRuntime()
	return app.Serve(ctx, o)
}

func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs, true)
	batch := fs.Int("batch-size", 400, "events stored per transaction")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := app.ImportOptions{
		Database: c.database(), Rules: c.rules(), Cluster: c.cluster, BatchSize: *batch,
		SecretDigestKeyFile: c.secretDigestKeyFile, Files: fs.Args(), Out: stdout, Logger: c.logger(stderr),
	}
	if isTerminal(stderr) {
		o.Progress = stderr
	}
	return app.Import(ctx, o)
}

func sqlCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return app.SQL(ctx, app.SQLOptions{
		Database: c.database(), Query: strings.Join(fs.Args(), " "),
		Stdin: os.Stdin, Out: stdout, Err: stderr, Logger: c.logger(stderr),
	})
}

func policyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("policy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs, true)
	inCluster := fs.Bool("in-cluster", false, "add the OptionsRecordController objects of the cluster the command runs in")
	kubeconfig := fs.String("kubeconfig", "", "add the OptionsRecordController objects of this kubeconfig's cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o := app.PolicyOptions{Rules: c.rules(), Out: stdout, Logger: c.logger(stderr)}
	if *inCluster || *kubeconfig != "" {
		o.Kube = &app.KubeOptions{Kubeconfig: *kubeconfig}
	}
	return app.Policy(ctx, o)
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

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
