package options

import (
	"errors"
	"io"
	"os"
	"strings"
	"time"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/cmd/options-record/app"
)

// Serve are the flags of `options-record serve`.
type Serve struct {
	Common
	Rules

	Roles              []string
	APIDatabaseURL     string
	WebhookAddr        string
	TLSCertFile        string
	TLSKeyFile         string
	ClientCAFile       string
	ClientCNs          []string
	AllowAnyClientCert bool
	TokenFile          string
	ClientsFile        string
	MaxBodyBytes       int64
	ChunkBytes         int64
	MaxEventBytes      int64
	MaxInFlight        int
	MaxInFlightBytes   int64
	MinBodyRate        int64
	BodyTimeout        time.Duration
	MaxEventAge        time.Duration
	WebhookHTTP2       bool
	MetricsAddr        string
	JournalDir         string
	Notify             app.NotifyOptions

	GKE               app.GKEOptions
	LogSigningKeyFile string
	CheckpointDir     string
	CheckpointURL     string
	VerifyInterval    time.Duration
	Witnesses         []string
	WitnessQuorum     int
	WitnessInterval   time.Duration
	Admission         app.AdmissionOptions

	API        app.APIOptions
	Audiences  []string
	Aggregated app.AggregatedOptions
	AllowedCNs []string

	Firehose          app.FirehoseOptions
	FirehoseLogGroups []string
	EventHubs         app.EventHubsOptions

	InCluster          bool
	Kube               app.KubeOptions
	TrustedNamespaces  []string
	TenantSecretData   bool
	MaxRetention       time.Duration
	TenantMaxRetention time.Duration
}

// NewServe returns the options of serve with their defaults.
func NewServe() *Serve { return &Serve{} }

// Flags defines serve's flags, with their defaults, in sections (as
// --help and docs/command-line-flags.txt show them).
func (o *Serve) Flags() (fss cliflag.NamedFlagSets) {
	fs := fss.FlagSet("common")
	o.Common.addFlags(fs)
	fs.StringSliceVar(&o.Roles, "roles", nil, "comma-separated parts this process runs: ingest (webhook, rule sync, baselines, retention) and api (the restore API, which impersonates callers); default ingest,api (the API only with --api-bind-address). The default install runs each in its own workload and service account")
	fs.StringVar(&o.APIDatabaseURL, "api-database-url", os.Getenv("OPTIONS_RECORD_API_DATABASE_URL"), "PostgreSQL connection string of the restore API's own role, which owns the schema options_record_api (its restores and plans) and reads nothing of the record; the API reads the record through --database-url (the reader role). Empty: --database-url for both, one role with no separation (env OPTIONS_RECORD_API_DATABASE_URL)")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", "127.0.0.1:9090", "address of /metrics, /healthz and /readyz (plain HTTP)")
	fs = fss.FlagSet("rules")
	o.Rules.addFlags(fs)
	fs.StringArrayVar(&o.TrustedNamespaces, "trusted-rule-namespaces", nil, "CLUSTER=NS[,NS...]: on CLUSTER only OptionsRecordControllers in these namespaces may select any namespace (repeatable); default: --namespace on --cluster, none on other clusters")
	fs.BoolVar(&o.TenantSecretData, "tenant-secret-data", false, "let rules outside the trusted namespaces record Secret values (otherwise digests)")
	fs.DurationVar(&o.MaxRetention, "max-retention", 2160*time.Hour, "longest retention any rule gets (and so the record)")
	fs.DurationVar(&o.TenantMaxRetention, "tenant-max-retention", 720*time.Hour, "longest retention a rule outside the trusted namespaces gets (at most --max-retention)")
	fs = fss.FlagSet("webhook")
	fs.StringVar(&o.WebhookAddr, "webhook-bind-address", ":8443", "address of the HTTPS audit webhook")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serving certificate (reloaded when it changes); empty: self-signed under --data-dir")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "serving key")
	fs.StringVar(&o.ClientCAFile, "webhook-client-ca", "", "CA that verifies the apiservers' client certificates")
	fs.StringArrayVar(&o.ClientCNs, "webhook-client-cn", nil, "common name of an apiserver's client certificate (repeatable); required with --webhook-client-ca unless --webhook-clients-file or --webhook-allow-any-client-cert")
	fs.BoolVar(&o.AllowAnyClientCert, "webhook-allow-any-client-cert", false, "take any certificate --webhook-client-ca verifies for the apiserver (only for a CA that issues nothing but apiserver client certificates, never the cluster CA)")
	fs.StringVar(&o.TokenFile, "webhook-token-file", "", "bearer token the apiserver presents (its events are recorded under --cluster)")
	fs.StringVar(&o.ClientsFile, "webhook-clients-file", "", "YAML list of apiservers (token file or certificate CN) and their cluster names")
	fs.Int64Var(&o.MaxBodyBytes, "webhook-max-body-bytes", 0, "largest EventList body accepted; 0: any (the kube-apiserver never retries a 413: every event of a larger batch would be lost)")
	fs.Int64Var(&o.ChunkBytes, "webhook-chunk-bytes", 16<<20, "most of a body held in memory: a longer EventList is decoded as a stream and stored in chunks of about this size, each in its own transaction, and acknowledged once all are stored")
	fs.Int64Var(&o.MaxEventBytes, "webhook-max-event-bytes", 32<<20, "largest single event kept whole from a streamed EventList (above any event a kube-apiserver writes for an object it accepts); a longer one is kept without its bodies and longest values, marked audit.k8s.io/truncated")
	fs.IntVar(&o.MaxInFlight, "webhook-max-in-flight", 8, "batches processed at once; more get 429 and are retried")
	fs.Int64Var(&o.MaxInFlightBytes, "webhook-max-in-flight-bytes", 96<<20, "request bytes held at once, a streamed body counting --webhook-chunk-bytes plus --webhook-max-event-bytes; more get 429 and are retried (bounds memory)")
	fs.Int64Var(&o.MinBodyRate, "webhook-min-body-rate", 32<<10, "slowest a request body may arrive, in bytes per second after its first 2 s; slower ones get 408 (bodies are read before they take an in-flight slot); the observing webhook's too")
	fs.DurationVar(&o.BodyTimeout, "webhook-body-timeout", 15*time.Second, "longest a request body (or one chunk of a streamed body) may take to arrive; longer ones get 408; the observing webhook's too")
	fs.DurationVar(&o.MaxEventAge, "webhook-max-event-age", 0, "events older than this are skipped (they would each make a daily partition); 0: the longest retention of the rules in force, at least a day (400 days until the rules are known)")
	fs.BoolVar(&o.WebhookHTTP2, "webhook-http2", false, "offer HTTP/2 on the webhook as well as HTTP/1.1 (HTTP/1.1 costs less CPU per event for large audit batches)")
	fs.StringVar(&o.JournalDir, "journal-dir", "", "durable local journal: batches the database cannot take are acknowledged from here and stored later")
	fs = fss.FlagSet("managed clusters")
	fs.StringVar(&o.GKE.Audience, "gke-pubsub-audience", "", "serve GKE's audit logs pushed by a Pub/Sub push subscription at /gke/pubsub on --webhook-bind-address: the audience of the subscription's OIDC token (its --push-auth-token-audience); empty: not served")
	fs.StringVar(&o.GKE.ServiceAccount, "gke-pubsub-service-account", "", "the only push service account (the token's email, the subscription's --push-auth-service-account) taken; required with --gke-pubsub-audience, which any Google account can name in its own push subscription")
	fs.StringVar(&o.GKE.JWKSURL, "gke-pubsub-jwks-url", app.GKEDefaultJWKSURL, "HTTPS URL of the key set the push tokens' signatures are checked against")
	fs.StringVar(&o.GKE.Cluster, "gke-pubsub-cluster", "", "cluster name GKE's events are recorded under; empty: --cluster")
	fs.StringVar(&o.Firehose.AccessKeyFile, "firehose-access-key-file", "", "EKS: serve the Amazon Data Firehose HTTP endpoint at /firehose on --webhook-bind-address, for a stream presenting the access key this file holds (re-read when it changes); empty: not served")
	fs.StringArrayVar(&o.FirehoseLogGroups, "firehose-log-group", nil, "LOG_GROUP=CLUSTER: record the events of this CloudWatch Logs group (/aws/eks/NAME/cluster) under CLUSTER (repeatable); once set, other log groups' events are skipped and counted; default: every log group's under --cluster")
	fs.Int64Var(&o.Firehose.MaxDecodedBytes, "firehose-max-decoded-bytes", 64<<20, "most a Firehose request's records may decompress to; a larger request gets 413")
	fs.StringSliceVar(&o.EventHubs.Brokers, "eventhubs-brokers", nil, "AKS: Kafka endpoint of the Event Hubs namespace the diagnostic settings export kube-audit-admin (or kube-audit) to, NAMESPACE.servicebus.windows.net:9093 (comma-separated); empty: no consumer")
	fs.StringVar(&o.EventHubs.Name, "eventhubs-name", "", "the event hub (Kafka topic) holding the AKS audit log")
	fs.StringVar(&o.EventHubs.Group, "eventhubs-consumer-group", "$Default", "the event hub's consumer group; the replicas share its partitions, their checkpoints kept in PostgreSQL")
	fs.StringVar(&o.EventHubs.ConnectionStringFile, "eventhubs-connection-string-file", "", "file holding a connection string with Listen rights (SASL PLAIN as $ConnectionString, as Event Hubs asks); empty: no SASL")
	fs.StringVar(&o.EventHubs.Cluster, "eventhubs-cluster", "", "cluster the Event Hubs events are recorded under; empty: --cluster")
	fs.BoolVar(&o.EventHubs.TLS, "eventhubs-tls", true, "connect to the Kafka endpoint with TLS (Event Hubs requires it)")
	fs.StringVar(&o.EventHubs.CAFile, "eventhubs-ca-file", "", "CA bundle verifying the Kafka endpoint; empty: the system's roots")
	fs = fss.FlagSet("tamper-evident log")
	fs.StringVar(&o.LogSigningKeyFile, "log-signing-key-file", "", "note signing key of the tamper-evident log (options-record log-key makes one; mount it from a Secret only the ingest identity reads): batches are logged and checkpoints signed; every ingest replica of the record needs it. Empty: no log")
	fs.DurationVar(&o.VerifyInterval, "verify-interval", 0, "verify the record against the log this often, incrementally only (as options-record verify --incremental does, with the signing key's public key): from the verified checkpoint in --checkpoint-dir, else the newest in the database at start (trusted on first use), then from the last checkpoint that passed; run options-record verify for a full check; metrics options_record_log_verify_last_success_timestamp_seconds and options_record_log_verify_problems, each problem logged. 0: never")
	fs.StringVar(&o.CheckpointDir, "checkpoint-dir", "", "directory receiving each signed checkpoint, outside the database (cluster=NAME/SIZE and cluster=NAME/latest): what verify --checkpoint-dir trusts")
	fs.StringVar(&o.CheckpointURL, "checkpoint-url", "", "object store receiving each signed checkpoint instead of --checkpoint-dir, same keys (s3://BUCKET?region=R, gs://BUCKET, azblob://CONTAINER, file:///PATH; credentials from the cloud's standard environment, docs/security.md): what verify --checkpoint-url trusts")
	fs.StringArrayVar(&o.Witnesses, "witness", nil, "URL=VERIFIERKEY: a C2SP tlog-witness (URL without '=': checkpoints are posted to URL/add-checkpoint) and its cosignature/v1 verifier key; its cosignatures are kept with the checkpoints in --checkpoint-dir or --checkpoint-url, and cluster=NAME/latest is then only a checkpoint --witness-quorum of them cosigned (repeatable; needs one of them)")
	fs.IntVar(&o.WitnessQuorum, "witness-quorum", 0, "how many of the --witness witnesses must cosign a checkpoint before it becomes cluster=NAME/latest; 0: all of them")
	fs.DurationVar(&o.WitnessInterval, "witness-interval", 10*time.Second, "how often each cluster's newest checkpoint is submitted to the witnesses")
	fs = fss.FlagSet("notifications")
	fs.StringVar(&o.Notify.ConfigFile, "notify-config", "", "YAML file of the destinations (Alertmanager, signed webhook, Slack) that OptionsRecordControllers' spec.notify routes name (docs/notifications.md); empty: no notifications")
	fs.DurationVar(&o.Notify.Window, "notify-group-window", 10*time.Second, "how long an incident's first change waits for the rest before one message is made of them (a namespace's cascade, a burst by one user)")
	fs.DurationVar(&o.Notify.Lease, "notify-lease", app.DefaultNotifyLease, "how long a replica holds a message it is sending; when it dies, another replica sends the message under the same key after this (at least 5s, and 2s longer than every destination's timeout; needs --notify-config)")
	fs = fss.FlagSet("observing webhook")
	fs.StringVar(&o.Admission.Addr, "admission-addr", "", "HTTPS address of the observing webhook (ValidatingWebhookConfiguration observe.optionsrecord.io, path /observe; the install uses :8444), with the audit webhook's serving certificate: it records the state an object held before each write the rules cover, confirmed by that write's audit event; empty disables it")
	fs.BoolVar(&o.Admission.RequireAuth, "admission-require-auth", false, "refuse admission reviews that present none of the audit webhook's client credentials (where the apiserver authenticates to webhooks: --admission-control-config-file); otherwise anonymous reviews are taken, untrusted until an audit event confirms them")
	fs.DurationVar(&o.Admission.TTL, "admission-observation-ttl", app.DefaultObservationTTL, "how long an observation no audit event confirmed is kept: longer than the audit events take to arrive, which on a managed cluster is minutes (EKS: CloudWatch Logs within a few minutes, then Firehose's buffer; AKS: minutes), and observations matter most there")
	fs.Int64Var(&o.Admission.MaxSourceBytes, "admission-max-source-bytes", 64<<20, "unconfirmed observation bytes kept per source address; more are dropped and counted")
	fs.Int64Var(&o.Admission.QueueBytes, "admission-queue-bytes", 32<<20, "observation bytes held in memory before they are stored; more are dropped and counted (the write is never held up)")
	fs = fss.FlagSet("restore API")
	fs.StringVar(&o.API.Addr, "api-bind-address", "", "HTTPS address of the restore API; empty disables it")
	fs.StringVar(&o.API.TLSCertFile, "api-tls-cert-file", "", "restore API serving certificate; empty reuses the webhook's")
	fs.StringVar(&o.API.TLSKeyFile, "api-tls-key-file", "", "restore API serving key")
	fs.StringVar(&o.API.TokenFile, "api-token-file", "", "standalone mode: read-only API on loopback for callers presenting this token (no cluster)")
	fs.StringSliceVar(&o.Audiences, "api-audiences", nil, "comma-separated token audiences the restore API accepts (e.g. options-record: callers get a token with: kubectl create token SA --audience options-record); empty: the apiserver's own")
	fs.DurationVar(&o.API.RequestTimeout, "api-request-timeout", time.Minute, "deadline of each restore API request")
	fs.DurationVar(&o.API.StatementTimeout, "api-statement-timeout", 30*time.Second, "statement_timeout of the restore API's queries")
	fs.IntVar(&o.API.MaxInFlight, "api-max-in-flight", history.DefaultMaxInFlight, "requests each API (the direct API, the aggregated API) serves at once; more get 429")
	fs.IntVar(&o.API.MaxPlanObjects, "api-max-plan-objects", 2000, "objects one restore plan may cover; a larger plan is refused (narrow it)")
	fs.IntVar(&o.API.MaxInFlightPerUser, "api-max-in-flight-per-user", history.DefaultMaxInFlightPerUser, "requests of one caller served at once, counted across both APIs; more get 429")
	fs.StringVar(&o.API.RecordAddr, "record-bind-address", "", "HTTPS address serving record.optionsrecord.io directly to bearer tokens (TokenReview), for kubectl record --record-server where the kube-apiserver cannot aggregate it; needs --api-bind-address and a cluster; empty disables it")
	fs = fss.FlagSet("aggregated API")
	fs.StringVar(&o.Aggregated.Addr, "aggregated-bind-address", "", "HTTPS address of the aggregated API (record.optionsrecord.io, reached through the kube-apiserver; needs --api-bind-address and a cluster); empty disables it")
	fs.StringVar(&o.Aggregated.RequestHeaderCAFile, "aggregated-requestheader-ca-file", "", "front-proxy CA: the kube-apiserver's --requestheader-client-ca-file (re-read when it changes); empty: the one the kube-apiserver publishes in kube-system/extension-apiserver-authentication, read with a GET every 10 minutes into --data-dir")
	fs.StringSliceVar(&o.AllowedCNs, "aggregated-requestheader-allowed-names", nil, "comma-separated common names of the kube-apiserver's proxy client certificate (its --requestheader-allowed-names); empty: those published with the CA, or any the front-proxy CA signed")
	fs = fss.FlagSet("cluster")
	fs.BoolVar(&o.InCluster, "in-cluster", false, "follow the OptionsRecordController objects of the cluster the sink runs in (in-cluster config)")
	fs.StringVar(&o.Kube.Kubeconfig, "kubeconfig", "", "follow the OptionsRecordController objects of this kubeconfig's cluster")
	fs.StringVar(&o.Kube.Context, "context", "", "the kubeconfig context to use; without --kubeconfig, the kubeconfig is loaded as kubectl does (KUBECONFIG, else ~/.kube/config)")
	fs.DurationVar(&o.Kube.Sync.Resync, "resync", 10*time.Minute, "period of the safety-net LIST of OptionsRecordControllers")
	fs.DurationVar(&o.Kube.Sync.StatusInterval, "status-interval", 15*time.Second, "how often OptionsRecordController statuses are written at most")
	fs.BoolVar(&o.Kube.Sync.Baseline, "baseline", true, "LIST the objects a rule begins to cover and store them as baseline versions")
	fs.IntVar(&o.Kube.Sync.BaselineMaxObjects, "baseline-max-objects", 100000, "objects one baseline pass lists at most; the next pass, 10 s later, goes on")
	fs.StringVar(&o.Kube.Sync.WebhookConfigName, "admission-webhook-config-name", "", "ValidatingWebhookConfiguration of the observing webhook to keep selecting what the rules select (GET, and UPDATE when it differs); created by the install manifests; empty: left alone")
	fs.StringVar(&o.Kube.Sync.Identity, "identity", os.Getenv("POD_NAME"), "this replica's name in the status Lease (default: hostname)")
	return fss
}

// Validate checks what the flags alone can tell, before anything starts
// (a usage error); app.Serve checks the rest (files, addresses) when it
// starts.
func (o *Serve) Validate() error {
	if err := o.Common.validate(); err != nil {
		return err
	}
	// What only the flags know: the app's options hold the aggregated API
	// and the record door inside the API's.
	switch {
	case o.Aggregated.Addr != "" && o.API.Addr == "":
		return errors.New("--aggregated-bind-address needs --api-bind-address: the aggregated API runs in the API role")
	case o.API.RecordAddr != "" && o.API.Addr == "":
		return errors.New("--record-bind-address needs --api-bind-address: the record is served by the API role")
	case o.GKE.Audience == "" && (o.GKE.ServiceAccount != "" || o.GKE.Cluster != "" || o.GKE.JWKSURL != app.GKEDefaultJWKSURL):
		return errors.New("--gke-pubsub-service-account, --gke-pubsub-cluster and --gke-pubsub-jwks-url need --gke-pubsub-audience, which serves the GKE push endpoint")
	}
	// Every other combination is the app's to refuse, in one place.
	c := o.Config(io.Discard)
	return c.Validate()
}

// Config is the app's configuration of these options, logging to logs.
func (o *Serve) Config(logs io.Writer) app.ServeOptions {
	c := app.ServeOptions{
		Database: o.database(), Rules: o.rules(), Cluster: o.Cluster, Logger: o.Logger(logs),
		WebhookAddr: o.WebhookAddr, TLSCertFile: o.TLSCertFile, TLSKeyFile: o.TLSKeyFile,
		ClientCAFile: o.ClientCAFile, ClientCNs: o.ClientCNs, AllowAnyClientCert: o.AllowAnyClientCert,
		TokenFile: o.TokenFile, ClientsFile: o.ClientsFile,
		MaxBodyBytes: o.MaxBodyBytes, ChunkBytes: o.ChunkBytes, MaxEventBytes: o.MaxEventBytes, MaxInFlight: o.MaxInFlight, MaxInFlightBytes: o.MaxInFlightBytes,
		MinBodyRate: o.MinBodyRate, BodyTimeout: o.BodyTimeout, MaxEventAge: o.MaxEventAge,
		WebhookHTTP2: o.WebhookHTTP2, MetricsAddr: o.MetricsAddr, JournalDir: o.JournalDir, Notify: o.Notify,
		SecretDigestKeyFile: o.SecretDigestKeyFile, LogSigningKeyFile: o.LogSigningKeyFile, CheckpointDir: o.CheckpointDir, CheckpointURL: o.CheckpointURL, VerifyInterval: o.VerifyInterval,
		Witnesses: o.Witnesses, WitnessQuorum: o.WitnessQuorum, WitnessInterval: o.WitnessInterval,
		Admission: o.Admission,
	}
	c.Database.APIURL = o.APIDatabaseURL
	for _, r := range trimmed(o.Roles) {
		c.Roles = append(c.Roles, app.Role(r))
	}
	c.Rules.TrustedNamespaces, c.Rules.TenantSecretData = o.TrustedNamespaces, o.TenantSecretData
	c.Rules.MaxRetention, c.Rules.TenantMaxRetention = o.MaxRetention, o.TenantMaxRetention
	if o.GKE.Audience != "" {
		g := o.GKE
		c.GKE = &g
	}
	if o.Firehose.AccessKeyFile != "" || len(o.FirehoseLogGroups) > 0 {
		f := o.Firehose
		for _, kv := range o.FirehoseLogGroups {
			if f.LogGroups == nil {
				f.LogGroups = map[string]string{}
			}
			g, cl, _ := strings.Cut(kv, "=")
			f.LogGroups[strings.TrimSpace(g)] = strings.TrimSpace(cl)
		}
		c.Firehose = &f
	}
	if len(trimmed(o.EventHubs.Brokers)) > 0 || o.EventHubs.Name != "" {
		e := o.EventHubs
		e.Brokers = trimmed(e.Brokers)
		c.EventHubs = &e
	}
	if o.InCluster || o.Kube.Kubeconfig != "" || o.Kube.Context != "" {
		k := o.Kube
		c.Kube = &k
	}
	if o.API.Addr != "" {
		api := o.API
		api.Audiences = trimmed(o.Audiences)
		if o.Aggregated.Addr != "" {
			agg := o.Aggregated
			agg.RequestHeaderAllowedNames = trimmed(o.AllowedCNs)
			api.Aggregated = &agg
		}
		c.API = &api
	}
	return c
}
