package options

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/options-record/options-record/cmd/options-record/app"
)

// Import are the flags of `options-record import`.
type Import struct {
	Common
	Rules
	BatchSize int
	TamperLog bool
}

// NewImport returns the options of import with their defaults.
func NewImport() *Import { return &Import{} }

// Flags defines import's flags, in sections.
func (o *Import) Flags() (fss cliflag.NamedFlagSets) {
	o.Common.addFlags(fss.FlagSet("common"))
	o.Rules.addFlags(fss.FlagSet("rules"))
	fss.FlagSet("import").IntVar(&o.BatchSize, "batch-size", 400, "events stored per transaction")
	fss.FlagSet("import").BoolVar(&o.TamperLog, "tamper-log", false, "write the tamper-evident log's pending rows, for the integrator of a serve with --log-signing-key-file to log")
	return fss
}

// Validate checks the flags.
func (o *Import) Validate() error { return o.Common.validate() }

// Config is the app's configuration: files are the arguments, the summary
// goes to out, logs (and, when progress is not nil, a progress bar) to logs.
func (o *Import) Config(files []string, out, logs, progress io.Writer) app.ImportOptions {
	return app.ImportOptions{
		Database: o.database(), Rules: o.rules(), Cluster: o.Cluster, BatchSize: o.BatchSize,
		SecretDigestKeyFile: o.SecretDigestKeyFile, TamperLog: o.TamperLog, Files: files, Out: out, Progress: progress,
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

// AdmissionConfig are the flags of `options-record admission-config`.
type AdmissionConfig struct {
	Policy
	ConfigName     string
	ServiceName    string
	ServicePort    int32
	URL            string
	CAFile         string
	TimeoutSeconds int32
}

// NewAdmissionConfig returns the options of admission-config with their
// defaults.
func NewAdmissionConfig() *AdmissionConfig { return &AdmissionConfig{} }

// Flags defines admission-config's flags, in sections.
func (o *AdmissionConfig) Flags() (fss cliflag.NamedFlagSets) {
	fss = o.Policy.Flags()
	fs := fss.FlagSet("admission webhook")
	fs.StringVar(&o.ConfigName, "config-name", app.DefaultWebhookConfigName, "name of the ValidatingWebhookConfiguration")
	fs.StringVar(&o.ServiceName, "service-name", "options-record-webhook", "Service (in --namespace) the kube-apiserver reaches the observing webhook through")
	fs.Int32Var(&o.ServicePort, "service-port", 8444, "the Service's port of the observing webhook")
	fs.StringVar(&o.URL, "url", "", "https URL of the observing webhook instead of a Service (path default "+app.WebhookPath+")")
	fs.StringVar(&o.CAFile, "ca-file", "", "PEM CA bundle that verifies the sink's serving certificate (caBundle); empty: left for cert-manager's CA injector")
	fs.Int32Var(&o.TimeoutSeconds, "timeout-seconds", app.DefaultWebhookTimeoutSeconds, "seconds a write waits for the review before the kube-apiserver ignores it (1-30)")
	return fss
}

// Validate checks the flags.
func (o *AdmissionConfig) Validate() error {
	if o.TimeoutSeconds < 1 || o.TimeoutSeconds > 30 {
		return errors.New("--timeout-seconds: want 1 to 30")
	}
	if o.URL == "" && (o.ServicePort < 1 || o.ServicePort > 65535) {
		return errors.New("--service-port: want 1 to 65535")
	}
	return o.Policy.Validate()
}

// Config is the app's configuration, printing the configuration to out.
func (o *AdmissionConfig) Config(out, logs io.Writer) app.AdmissionConfigOptions {
	p := o.Policy.Config(out, logs)
	return app.AdmissionConfigOptions{Rules: p.Rules, Kube: p.Kube, ConfigName: o.ConfigName,
		ServiceName: o.ServiceName, ServicePort: o.ServicePort, URL: o.URL, CAFile: o.CAFile,
		TimeoutSeconds: o.TimeoutSeconds, Out: out, Logger: p.Logger}
}

// Verify are the flags of `options-record verify`.
type Verify struct {
	Common
	VerifierKey, VerifierKeyFile, CheckpointDir, CheckpointURL, Cluster string
	Proofs, WitnessKeys                                                 []string
	WitnessQuorum                                                       int
	WriteState, Incremental, RequireTrusted                             bool
	MinRetention                                                        time.Duration
}

// NewVerify returns the options of verify with their defaults.
func NewVerify() *Verify { return &Verify{MinRetention: app.MinRetention} }

// Flags defines verify's flags, in sections.
func (o *Verify) Flags() (fss cliflag.NamedFlagSets) {
	o.Common.addFlags(fss.FlagSet("common"))
	fs := fss.FlagSet("verify")
	fs.StringVar(&o.VerifierKey, "log-verifier-key", "", "the tamper-evident log's public key (NAME+HASH+KEY, as options-record log-key prints it)")
	fs.StringVar(&o.VerifierKeyFile, "log-verifier-key-file", "", "file holding --log-verifier-key")
	fs.StringVar(&o.CheckpointDir, "checkpoint-dir", "", "trusted checkpoints kept outside the database (serve's --checkpoint-dir, or a copy): the log must have only grown since; one that does not exist or cannot be read is an error; unset: not checked")
	fs.StringVar(&o.CheckpointURL, "checkpoint-url", "", "trusted checkpoints in an object store instead of --checkpoint-dir (serve's --checkpoint-url: s3://BUCKET?region=R, gs://BUCKET, azblob://CONTAINER, file:///PATH; credentials from the cloud's standard environment); a bucket that does not exist or cannot be listed is an error")
	fs.StringVar(&o.Cluster, "cluster", "", "check this cluster only; empty: every cluster")
	fs.BoolVar(&o.Incremental, "incremental", false, "check each cluster from the checkpoint a previous run verified (cluster=NAME/verified in --checkpoint-dir or --checkpoint-url; none: a full check), and keep there the newest one of each cluster that passes; an old row changed or deleted is found only by a full check (docs/security.md)")
	fs.BoolVar(&o.RequireTrusted, "require-trusted", false, "fail a cluster whose log has leaves but no trusted checkpoint in --checkpoint-dir or --checkpoint-url (a mistyped location, checkpoints deleted or expired: the log would not be checked for a rollback); for a scheduled verify")
	fs.StringArrayVar(&o.WitnessKeys, "witness-key", nil, "cosignature/v1 verifier key of a witness (as serve's --witness names it): each trusted checkpoint in --checkpoint-dir or --checkpoint-url must carry --witness-quorum valid cosignatures of these (repeatable)")
	fs.IntVar(&o.WitnessQuorum, "witness-quorum", 0, "how many of the --witness-key witnesses must have cosigned each trusted checkpoint; 0: all of them")
	fs.DurationVar(&o.MinRetention, "min-retention", o.MinRetention, "the shortest retention the record was ever kept for (no retention is shorter than the default): a logged retention cutoff covers rows only up to the newest row logged before it less this; longer checks planted cutoffs more strictly")
	fs.StringArrayVar(&o.Proofs, "proof", nil, "check this inclusion proof offline instead of the database (a FILE.tlog-proof, as the restore API answers GET .../versions/KEY/proof), and FILE.json beside it when present (repeatable)")
	fs.BoolVar(&o.WriteState, "write-state", false, "with --proof: write each verified proof's state (the object's exact logged text) to FILE.json when there is none")
	return fss
}

// Validate checks the flags.
func (o *Verify) Validate() error {
	if err := o.Common.validate(); err != nil {
		return err
	}
	if (o.VerifierKey == "") == (o.VerifierKeyFile == "") {
		return errors.New("verify needs one of --log-verifier-key and --log-verifier-key-file")
	}
	if o.MinRetention < app.MinRetention {
		return fmt.Errorf("--min-retention %s is shorter than %s, the shortest retention the record applies", o.MinRetention, app.MinRetention)
	}
	if o.CheckpointDir != "" && o.CheckpointURL != "" {
		return errors.New("--checkpoint-dir and --checkpoint-url name the same thing: give one")
	}
	if o.Incremental && o.CheckpointDir == "" && o.CheckpointURL == "" {
		return errors.New("--incremental keeps the verified checkpoints in --checkpoint-dir or --checkpoint-url: give one")
	}
	if o.RequireTrusted && o.CheckpointDir == "" && o.CheckpointURL == "" {
		return errors.New("--require-trusted needs the trusted checkpoints' --checkpoint-dir or --checkpoint-url")
	}
	if o.WriteState && len(o.Proofs) == 0 {
		return errors.New("--write-state writes the states of --proof files: give --proof")
	}
	return nil
}

// Config is the app's configuration, printing to out.
func (o *Verify) Config(out, logs io.Writer) app.VerifyOptions {
	return app.VerifyOptions{Database: o.database(), VerifierKey: o.VerifierKey, VerifierKeyFile: o.VerifierKeyFile,
		CheckpointDir: o.CheckpointDir, CheckpointURL: o.CheckpointURL, Cluster: o.Cluster, Incremental: o.Incremental, RequireTrusted: o.RequireTrusted, WitnessKeys: o.WitnessKeys, WitnessQuorum: o.WitnessQuorum, MinRetention: o.MinRetention, Proofs: o.Proofs, WriteState: o.WriteState, Out: out, Logger: o.Logger(logs)}
}

// LogKey are the flags of `options-record log-key`.
type LogKey struct {
	Name, SigningKeyFile string
}

// NewLogKey returns the options of log-key with their defaults.
func NewLogKey() *LogKey { return &LogKey{} }

// Flags defines log-key's flags.
func (o *LogKey) Flags() (fss cliflag.NamedFlagSets) {
	fs := fss.FlagSet("log-key")
	fs.StringVar(&o.Name, "name", "", "the key's name, which begins each log's origin line (e.g. record.example.com/log)")
	fs.StringVar(&o.SigningKeyFile, "log-signing-key-file", "", "new file to write the private key to (mode 0600); the public key is printed")
	return fss
}

// Validate checks the flags.
func (o *LogKey) Validate() error {
	if o.Name == "" || o.SigningKeyFile == "" {
		return errors.New("log-key needs --name and --log-signing-key-file")
	}
	return nil
}

// Config is the app's configuration, printing the public key to out.
func (o *LogKey) Config(out io.Writer) app.LogKeyOptions {
	return app.LogKeyOptions{Name: o.Name, SigningKeyFile: o.SigningKeyFile, Out: out}
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
		{"admission-config", "print the ValidatingWebhookConfiguration of the observing webhook the rules need", func() Command { return NewAdmissionConfig() }},
		{"verify", "check the record against its tamper-evident log; exits non-zero naming each row that fails", func() Command { return NewVerify() }},
		{"log-key", "make the tamper-evident log's signing key (a file) and print its verifier key", func() Command { return NewLogKey() }},
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
