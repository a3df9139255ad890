package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"gocloud.dev/blob"
	"golang.org/x/mod/sumdb/note"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/cmd/options-record/app/secretfile"
	"github.com/options-record/options-record/filter/rulesync"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/tamper"
)

// Role is a part of `serve` that a process runs (--roles).
type Role string

const (
	// RoleIngest is the audit webhook, rule sync, baselines, statuses and
	// retention: it parses what the apiservers post and writes the record.
	RoleIngest Role = "ingest"
	// RoleAPI is the restore API: it reads the record, and restores by
	// impersonating its callers. It never parses a webhook body.
	RoleAPI Role = "api"
)

// ServeOptions configure `options-record serve`.
type ServeOptions struct {
	// Roles are the parts this process runs; empty: both (one process for
	// trying it out). The default install runs each in its own workload
	// under its own service account: only the API may impersonate.
	Roles        []Role
	Database     DatabaseOptions
	Rules        RulesOptions
	Cluster      string // cluster of callers authenticated by --webhook-token-file or any verified client certificate
	WebhookAddr  string
	TLSCertFile  string
	TLSKeyFile   string
	ClientCAFile string
	// ClientCNs, when set, are the only client-certificate common names
	// accepted (for Cluster) besides the clients file's. With ClientCAFile
	// and no clients file, they are required unless AllowAnyClientCert.
	ClientCNs []string
	// AllowAnyClientCert takes any certificate ClientCAFile verifies for
	// the apiserver of Cluster: only for a CA that issues nothing else.
	AllowAnyClientCert bool
	TokenFile          string
	ClientsFile        string
	// CredentialsInterval is how often the token and clients files are
	// read again at most (default 15 s; the client CA and the serving
	// certificate are checked every 10 s).
	CredentialsInterval time.Duration
	MaxBodyBytes        int64
	// ChunkBytes and MaxEventBytes bound the memory of a batch decoded as
	// a stream (see auditsink.HandlerOptions).
	ChunkBytes    int64
	MaxEventBytes int64
	MaxInFlight   int
	// MaxInFlightBytes caps the request bodies held at once.
	MaxInFlightBytes int64
	// MinBodyRate and BodyTimeout cut off webhook bodies sent slowly (see
	// auditsink.HandlerOptions).
	MinBodyRate int64
	BodyTimeout time.Duration
	// MaxEventAge, when set, replaces the rules' longest retention as the
	// age beyond which webhook events are skipped (a replay of an old log).
	MaxEventAge time.Duration
	// WebhookHTTP2 offers HTTP/2 on the webhook besides HTTP/1.1.
	WebhookHTTP2 bool
	MetricsAddr  string
	// Kube is the cluster the sink runs in: rules from its
	// OptionsRecordController objects, statuses, baselines. Nil: standalone
	// (rules from files only).
	Kube *KubeOptions
	// API configures the restore API; nil disables it.
	API *APIOptions
	// Admission configures the observing webhook (admission.go).
	Admission AdmissionOptions
	// JournalDir, when set, makes the sink acknowledge batches it could not
	// store by journaling them durably there, and store them later.
	JournalDir string
	// GKE serves the Pub/Sub push endpoint of GKE's audit logs beside the
	// webhook; nil: not served.
	GKE *GKEOptions
	// Notify configures notifications; a zero sends none.
	Notify NotifyOptions
	// Firehose, when set, serves EKS's Firehose HTTP endpoint at
	// FirehosePath on the webhook's address; EventHubs, when set, consumes
	// AKS's audit log from Event Hubs (managed.go).
	Firehose  *FirehoseOptions
	EventHubs *EventHubsOptions
	// SecretDigestKeyFile holds the key Secret values are digested with;
	// empty: a key generated under the data directory.
	SecretDigestKeyFile string
	// LogSigningKeyFile, when set, keeps the tamper-evident log: batches
	// write pending rows, and this replica integrates and signs them
	// (package tamper); CheckpointDir (a directory) or CheckpointURL (an
	// object store; one of them) receives each signed checkpoint.
	LogSigningKeyFile string
	CheckpointDir     string
	CheckpointURL     string
	// VerifyInterval, when positive, verifies the record against its log
	// that often, incrementally only (logVerifyLoop), and exports the
	// outcome as metrics; needs LogSigningKeyFile.
	VerifyInterval time.Duration
	// Witnesses are C2SP tlog-witnesses (URL=VERIFIERKEY) the integrator
	// submits checkpoints to every WitnessInterval; the checkpoints' latest
	// is then a checkpoint WitnessQuorum of them (0: all) cosigned.
	Witnesses       []string
	WitnessQuorum   int
	WitnessInterval time.Duration
	Logger          *slog.Logger
	// OnListening, if set, is called with the bound addresses once the
	// listeners are up (tests listen on port 0); webhook is nil without
	// RoleIngest.
	OnListening func(webhook, metrics net.Addr)
	// Listen, if set, replaces net.Listen("tcp", addr) for every server
	// (webhook, metrics, restore API, aggregated, record): a test hands
	// over listeners it bound on port 0 instead of a port chosen free and
	// bound later, which another process can take meanwhile.
	Listen func(addr string) (net.Listener, error)
}

// DefaultNotifyLease is NotifyOptions.Lease's default (--notify-lease).
const DefaultNotifyLease = notify.DefaultLease

// NotifyOptions configure notifications (auditsink/notify).
type NotifyOptions struct {
	// ConfigFile is the YAML file of destinations (--notify-config);
	// empty: no destination, and every spec.notify route is refused.
	ConfigFile string
	// Window is how long an incident's first change waits for the rest
	// (--notify-group-window; 0: notify.DefaultWindow).
	Window time.Duration
	// Lease is how long a replica holds a message it is sending; a dead
	// replica's messages are sent by another after it (--notify-lease;
	// 0: notify.DefaultLease; at least notify.MinLease and longer than
	// every destination's timeout).
	Lease time.Duration
}

// listen binds addr with o.Listen, or net.Listen.
func (o *ServeOptions) listen(addr string) (net.Listener, error) {
	if o.Listen != nil {
		return o.Listen(addr)
	}
	return net.Listen("tcp", addr)
}

// Serve runs the audit webhook until ctx is cancelled, then drains the
// in-flight batches and stops.
func Serve(ctx context.Context, o ServeOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Cluster == "" {
		o.Cluster = "default"
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ingest, withAPI, _ := o.roles()
	if !ingest {
		return serveAPI(ctx, o, log)
	}
	if !withAPI {
		o.API = nil // never impersonates
	}
	p, err := newIngest(o, log)
	if err != nil {
		return err
	}
	// Started in this order, stopped in the reverse: the webhook stops
	// taking batches first, and its in-flight ones end stored or journaled
	// before the journal, the store and the database stop.
	cs := []component{
		{"database", p.openDatabase},
		p.openStore(store.Options{Logger: log, Registerer: p.reg, TamperLog: p.logSigner != nil, VersionDigest: tamper.VersionDigest, EventDigest: tamper.EventDigest}, o.JournalDir != ""),
		background("store preparation", p.keepPreparing),
		{"journal", p.openJournal},
	}
	if o.Kube != nil {
		cs = append(cs, component{"rule sync", p.startSyncer}, background("rule sync", func(ctx context.Context) { p.syncer.Run(ctx) }))
	}
	// What needs the prepared store starts with it: at once, or, with a
	// journal and the database down at start-up, when it first answers.
	// The rules the other replicas saw (and those of the fleet's other
	// clusters) are loaded before the webhook filters its first batch.
	late := []component{
		{"shared rules", p.loadSharedRules},
		background("shared rules", func(ctx context.Context) { p.sharer.Run(ctx, p.st) }),
		background("maintenance", func(ctx context.Context) {
			p.st.Maintain(ctx, p.registry.MaxRetention, p.sharer.Loaded(), log)
		}),
	}
	if p.notify != nil {
		late = append(late, background("notifications", func(ctx context.Context) {
			notify.New(p.st, notify.Options{Config: p.notify, Window: o.Notify.Window, Lease: o.Notify.Lease, Logger: log, Registerer: p.reg}).Run(ctx)
		}))
	}
	if p.logSigner != nil {
		late = append(late, background("tamper log", p.runIntegrator))
		if o.VerifyInterval > 0 {
			late = append(late, background("tamper log verify", p.runLogVerify))
		}
	}
	if o.API != nil {
		late = append(late, component{"restore API", p.startAPI})
	}
	// The metrics server starts before the webhook and stops after it; it
	// answers /readyz with 200 once every component has started.
	cs = append(cs, once("what needs the record", p.prepared, log, late...),
		p.metricsSrv.component(o.MetricsAddr, o.listen, p.lc),
		component{"webhook", p.serveWebhook},
	)
	if o.EventHubs != nil {
		cs = append(cs, once("event hubs", p.prepared, log, p.eventHubs()))
	}
	if o.Admission.Addr != "" {
		cs = append(cs, component{"admission", p.serveAdmission})
	}
	cs = append(cs,
		component{"announce", func(context.Context) (func(context.Context) error, error) {
			log.Info("serving the audit webhook", "webhook", p.webhook.addr.String(), "metrics", p.metricsSrv.addr.String(),
				"rules", p.registry.RulesFor(o.Cluster).Len())
			if o.OnListening != nil {
				o.OnListening(p.webhook.addr, p.metricsSrv.addr)
			}
			return nil, nil
		}})
	if err := p.lc.run(ctx, cs...); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// ingestProcess is a process with the ingest role.
type ingestProcess struct {
	*process
	registry *rulesync.Registry
	sharer   *rulesync.Sharer
	tlsCfg   *tls.Config
	auth     *auditsink.Authenticator
	metrics  *auditsink.Metrics
	writer   model.Writer
	syncer   *rulesync.Syncer
	webhook  *httpServer
	notify   *notify.Config // nil: no notifications
	lag      *auditsink.SourceLag
	pipeOnce sync.Once
	pipe     *auditsink.Pipeline
	// logSigner signs the tamper-evident log's checkpoints; nil: no log.
	logSigner note.Signer
	// checkpoints receives them outside the database; nil: nowhere.
	checkpoints *blob.Bucket
}

// newIngest prepares what needs no I/O: the rules, the webhook's TLS and
// credentials, the secret digest key.
func newIngest(o ServeOptions, log *slog.Logger) (*ingestProcess, error) {
	var nc *notify.Config
	if o.Notify.ConfigFile != "" {
		var err error
		if nc, err = notify.LoadConfig(o.Notify.ConfigFile); err != nil {
			return nil, err
		}
		if err := nc.CheckLease(cmp.Or(o.Notify.Lease, notify.DefaultLease)); err != nil {
			return nil, fmt.Errorf("notify config %s: %w", o.Notify.ConfigFile, err)
		}
		o.Rules.notifyAllowed = nc.Allowed
	}
	static, err := loadRuleObjects(o.Rules, log)
	if err != nil {
		return nil, err
	}
	regOpts, err := o.Rules.registryOptions(o.Cluster)
	if err != nil {
		return nil, err
	}
	registry := rulesync.NewRegistry(static, regOpts)
	tlsCfg, auth, err := webhookSecurity(&o, log)
	if err != nil {
		return nil, err
	}
	digester, err := loadSecretDigester(o.SecretDigestKeyFile, o.Database.DataDir, log)
	if err != nil {
		return nil, err
	}
	p := &ingestProcess{process: newProcess(o, digester, log), registry: registry,
		sharer: rulesync.NewSharer(registry, log), tlsCfg: tlsCfg, auth: auth, notify: nc}
	p.metrics = auditsink.NewMetrics(p.reg)
	p.lag = auditsink.NewSourceLag(p.reg)
	if o.LogSigningKeyFile != "" {
		if p.logSigner, err = loadLogSigner(o.LogSigningKeyFile); err != nil {
			return nil, err
		}
		// Opening a bucket reads its URL and the credentials' environment,
		// not the store: a bad one fails the start, not the first write.
		if p.checkpoints, _, err = openCheckpoints(context.Background(), o.CheckpointDir, o.CheckpointURL, true); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *ingestProcess) openJournal(ctx context.Context) (func(context.Context) error, error) {
	var stop func(context.Context) error
	var err error
	p.writer, stop, p.journalReady, err = wrapJournal(ctx, JournalOptions{Dir: p.o.JournalDir}, p.st, p.reg, p.log, p.lag.ObserveDrained)
	return stop, err
}

func (p *ingestProcess) startSyncer(ctx context.Context) (func(context.Context) error, error) {
	var err error
	p.syncer, err = startSyncer(ctx, p.o, p.registry, p.st, p.digester, p.log)
	return nil, err
}

// loadSharedRules loads the rules the replicas shared; a failure leaves
// retention waiting for them (sharer.Loaded).
func (p *ingestProcess) loadSharedRules(ctx context.Context) (func(context.Context) error, error) {
	if err := p.sharer.Load(ctx, p.st); err != nil {
		p.log.Warn("loading the rules other replicas shared; retention waits for them", "err", err)
	}
	return nil, nil
}

// pipeline is the one pipeline of every source (the webhook, Firehose,
// Event Hubs), built when the first of them starts: after the journal's
// writer and the rule syncer.
func (p *ingestProcess) pipeline() *auditsink.Pipeline {
	p.pipeOnce.Do(func() {
		p.pipe = auditsink.NewPipeline(p.registry, p.writer, p.metrics, p.log).WithObserver(p.registry).WithSecretDigester(p.digester)
		if p.syncer != nil {
			p.pipe.WithSelf(p.syncer.IsSelf).WithOnStored(p.syncer.OnStored)
		}
		// Every source's lag is kept in the record too, for the APIs'
		// callers (kubectl record's note).
		p.lag.Persist(p.st, p.log)
	})
	return p.pipe
}

// horizon is how far back every source takes events
// (auditsink.HandlerOptions.Horizon): events older than the record keeps
// make no partition; before the rules the replicas shared are loaded, the
// longest retention is not known (0: the default bound applies).
func (p *ingestProcess) horizon() time.Duration {
	if p.o.MaxEventAge > 0 {
		return p.o.MaxEventAge
	}
	select {
	case <-p.sharer.Loaded():
		return p.registry.MaxRetention()
	default:
		return 0
	}
}

// serveWebhook builds the handler (and the Firehose and GKE endpoints,
// if set, which it serves) and serves them.
func (p *ingestProcess) serveWebhook(ctx context.Context) (func(context.Context) error, error) {
	pipe := p.pipeline()
	o := p.o
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{
		Pipeline: pipe, Authenticator: p.auth, MaxBodyBytes: o.MaxBodyBytes, ChunkBytes: o.ChunkBytes, MaxEventBytes: o.MaxEventBytes, MaxInFlight: o.MaxInFlight,
		MaxInFlightBytes: o.MaxInFlightBytes, MinBodyRate: o.MinBodyRate, BodyTimeout: o.BodyTimeout,
		Horizon: p.horizon, Lag: p.lag, Metrics: p.metrics, Logger: p.log,
	})
	if err != nil {
		return nil, err
	}
	handler, err := p.withFirehose(h)
	if err != nil {
		return nil, err
	}
	served, err := p.withGKE(ctx, h, handler)
	if err != nil {
		return nil, err
	}
	p.webhook = newHTTPServer("webhook", served, p.tlsCfg, webhookLimits, p.log)
	p.webhook.Protocols = webhookProtocols(o.WebhookHTTP2)
	return p.webhook.component(o.WebhookAddr, o.listen, p.lc).start(ctx)
}

// webhookLimits: no connection can hold the others up: headers within
// 10 s, bodies as the handler's minimum rate and body timeout say (it
// reads them before taking a processing slot), the whole request within a
// minute, and the answer written within the handler's write deadline (90 s
// at most).
var webhookLimits = limits{readHeader: 10 * time.Second, read: 60 * time.Second,
	write: 90 * time.Second, idle: 120 * time.Second, maxHeaderBytes: 64 << 10}

// metricsServer serves /metrics, /healthz and /readyz (ready says whether
// this process can do its work). It is plain HTTP on the pod network, so no
// connection may hold it up: scrapes and probes are small and quick.
func metricsServer(reg *prometheus.Registry, ready func(context.Context) error, log *slog.Logger) *httpServer {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := ready(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	// WriteTimeout: a scrape of every series.
	return newHTTPServer("metrics", mux, nil, limits{readHeader: 5 * time.Second, read: 10 * time.Second,
		write: 30 * time.Second, idle: 60 * time.Second, maxHeaderBytes: 16 << 10}, log)
}

// webhookSecurity builds the webhook's TLS configuration and authenticator.
// Without a certificate or any client credential configured it generates a
// self-signed certificate and a random token under the data directory:
// the webhook is never served in clear nor unauthenticated.
func webhookSecurity(o *ServeOptions, log *slog.Logger) (*tls.Config, *auditsink.Authenticator, error) {
	if err := o.validateWebhookClients(); err != nil {
		return nil, nil, err
	}
	if err := ensureServingCert(o, log); err != nil {
		return nil, nil, err
	}
	reloader, err := certs.NewReloader(o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return nil, nil, err
	}
	// The serving certificate and the client CA are re-read when they change.
	cfg, err := certs.ServerConfig(reloader.WithLogger(log), o.ClientCAFile)
	if err != nil {
		return nil, nil, err
	}
	if o.TokenFile == "" && o.ClientsFile == "" && o.ClientCAFile == "" {
		if o.Database.DataDir == "" {
			return nil, nil, errors.New("no webhook client credentials: set --webhook-token-file, --webhook-client-ca or --webhook-clients-file")
		}
		tf, err := secretfile.Ensure(filepath.Join(o.Database.DataDir, "webhook-token"))
		if err != nil {
			return nil, nil, err
		}
		o.TokenFile = tf
		log.Info("using a generated webhook bearer token", "token_file", tf)
	}
	anyCert := ""
	var cns []string
	switch {
	case o.AllowAnyClientCert:
		anyCert = o.Cluster
		log.Warn("any client certificate --webhook-client-ca verifies is taken for the apiserver (--webhook-allow-any-client-cert): the CA must issue only apiserver client certificates, never the cluster CA, which also signs kubelets'")
	case o.ClientCAFile != "" && o.ClientsFile == "":
		cns = o.ClientCNs
	}
	// The token files and the clients file are read again when a request
	// comes at least CredentialsInterval after the last reading, so that
	// rotated credentials take effect without a restart.
	load := func() ([]auditsink.ClientConfig, string, error) {
		var clients []auditsink.ClientConfig
		if o.ClientsFile != "" {
			var err error
			if clients, err = auditsink.LoadClients(o.ClientsFile); err != nil {
				return nil, "", err
			}
		}
		if o.TokenFile != "" {
			clients = append(clients, auditsink.ClientConfig{Cluster: o.Cluster, TokenFile: o.TokenFile})
		}
		for _, cn := range cns {
			clients = append(clients, auditsink.ClientConfig{Cluster: o.Cluster, CommonName: cn})
		}
		return clients, anyCert, nil
	}
	auth, err := auditsink.NewReloadingAuthenticator(auditsink.AuthenticatorOptions{Load: load, Interval: o.CredentialsInterval, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return cfg, auth, nil
}

// ensureServingCert generates a self-signed serving certificate under the
// data directory when none is given.
func ensureServingCert(o *ServeOptions, log *slog.Logger) error {
	if o.TLSCertFile != "" {
		return nil
	}
	if o.Database.DataDir == "" {
		return errors.New("no --tls-cert-file and no --data-dir to generate one in")
	}
	dir := filepath.Join(o.Database.DataDir, "tls")
	ca, cert, key, err := certs.EnsureSelfSigned(dir, []string{"localhost", "127.0.0.1", "::1"})
	if err != nil {
		return err
	}
	o.TLSCertFile, o.TLSKeyFile = cert, key
	log.Info("using a generated self-signed serving certificate", "ca", ca, "cert", cert)
	return nil
}

// webhookProtocols is HTTP/1.1, and HTTP/2 only when asked for. The
// apiserver posts EventLists of megabytes; over HTTP/2 each is cut into
// frames that are parsed, copied into a stream buffer and acknowledged with
// WINDOW_UPDATEs, which cost the sink 10-15% more CPU per event in make bench
// (and the client as much). Concurrent batches simply use more connections.
func webhookProtocols(http2 bool) *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(http2)
	return &p
}
