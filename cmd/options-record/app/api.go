package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/aggregated"
	"github.com/options-record/options-record/api/authlimit"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/cmd/options-record/app/secretfile"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// APIOptions configure the restore API listener of `serve`.
type APIOptions struct {
	// Addr is the HTTPS address of the restore API; empty disables it.
	Addr string
	// TLSCertFile and TLSKeyFile serve the API; empty reuses the webhook's.
	TLSCertFile, TLSKeyFile string
	// TokenFile enables the standalone mode: a read-only API on loopback
	// whose callers present this static token (no cluster needed).
	TokenFile string
	// Audiences, when set, are the only token audiences the API accepts
	// (TokenReview spec.audiences).
	Audiences []string
	// MaxConns caps the API's own connection pool (default 4): the API
	// never uses the ingest's connections.
	MaxConns int32
	// StatementTimeout is the statement_timeout of every API query
	// (default 30 s).
	StatementTimeout time.Duration
	// RequestTimeout bounds each request (default 1 minute).
	RequestTimeout time.Duration
	// MaxInFlight and MaxInFlightPerUser cap the requests served at once,
	// in all (default 16) and per caller (default 4).
	MaxInFlight, MaxInFlightPerUser int
	// MaxPlanObjects caps the objects of one restore plan (default 2000).
	MaxPlanObjects int
	// MaxUndoRows caps the changes an undo plan reads (default 20,000; not
	// a flag: tests lower it).
	MaxUndoRows int
	// Aggregated, when set, also serves the record as the API group
	// record.optionsrecord.io through the kube-apiserver (API aggregation),
	// over the same query layer. It needs a cluster.
	Aggregated *AggregatedOptions
	// RecordAddr, when set, also serves the group record.optionsrecord.io
	// directly on this HTTPS address, to bearer tokens (TokenReview, the
	// direct API's audiences), for kubectl record --record-server in
	// clusters without API aggregation. It needs a cluster.
	RecordAddr string
}

// AggregatedOptions configure the aggregated API's listener.
type AggregatedOptions struct {
	// Addr is its HTTPS address (the APIService's Service points at it).
	Addr string
	// RequestHeaderCAFile is the front-proxy CA, the kube-apiserver's
	// --requestheader-client-ca-file (re-read when it changes); it verifies
	// the client certificate of the kube-apiserver's proxy. Empty: the CA
	// the kube-apiserver publishes in kube-system/extension-apiserver-
	// authentication, read with a plain GET at start-up and every 10
	// minutes into the data directory.
	RequestHeaderCAFile string
	// RequestHeaderAllowedNames are the common names the proxy's client
	// certificate may have (--requestheader-allowed-names); empty: those
	// the kube-apiserver publishes with the CA when it is read from the
	// cluster, else any the CA signed.
	RequestHeaderAllowedNames []string
	// Kubeconfig reaches the kube-apiserver for TokenReview and
	// SubjectAccessReview; empty: the sink's --kubeconfig, or the in-cluster
	// config.
	Kubeconfig string
	// caRefresh is how often the CA read from the cluster is read again
	// (default 10 minutes; tests shorten it).
	caRefresh time.Duration
}

// apiIdleInTransaction ends an API session left idle in a transaction.
const apiIdleInTransaction = 10 * time.Second

// openAPIStores opens the API's two pools, each its own login: reader
// reads the record (db.URL), owner keeps the restores and plans in the
// schema options_record_api (db.APIURL) and never reads the record
// (store.APIStore); then it applies the API's own migrations. Few
// connections, every statement bounded, so that reads can neither starve
// the ingest of connections nor run without end.
func openAPIStores(ctx context.Context, db *database, o *APIOptions, log *slog.Logger) (reader *store.Store, owner *store.APIStore, err error) {
	so := store.Options{URL: db.URL, MaxConns: o.MaxConns, StatementTimeout: o.StatementTimeout,
		IdleInTransactionTimeout: apiIdleInTransaction, Secondary: true, Logger: log}
	if so.MaxConns <= 0 {
		so.MaxConns = 4
	}
	if so.StatementTimeout <= 0 {
		so.StatementTimeout = 30 * time.Second
	}
	if reader, err = store.Open(ctx, so); err != nil {
		return nil, nil, fmt.Errorf("restore API: database pool: %w", err)
	}
	// The restores and plans live in the API's own schema, under its own
	// migrations: with separate database roles, the ingest role can neither
	// write them nor create that schema, and nothing the ingest role owns
	// ever runs as their owner.
	so.URL, so.Secondary = db.APIURL, false
	if owner, err = store.OpenAPI(ctx, so, reader); err != nil {
		reader.Close()
		return nil, nil, fmt.Errorf("restore API: %w", err)
	}
	return reader, owner, nil
}

// runAPI starts the restore API and returns a function that stops it:
// its stores, the services both doors serve, the doors of the group
// record.optionsrecord.io that are configured, the direct API's listener
// and the expiry of old restores.
//
// With a cluster (so.Kube) callers are authenticated by TokenReview and
// authorized by SubjectAccessReview, and restores impersonate them. Without
// one (standalone) the API is read-only, listens on loopback only and
// accepts the static token of TokenFile (generated in the data directory
// when not given).
func runAPI(ctx context.Context, o *APIOptions, so *ServeOptions, db *database, dg *model.SecretDigester, log *slog.Logger) (stop func(context.Context) error, err error) {
	log = log.With("component", "restore-api")
	st, owner, err := openAPIStores(ctx, db, o, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			owner.Close()
			st.Close()
		}
	}()
	svc, err := apiServices(o, so, st, owner, dg, log)
	if err != nil {
		return nil, err
	}
	api, err := restoreapi.New(svc)
	if err != nil {
		return nil, err
	}
	stopDoors, err := startRecordDoors(ctx, o, so, svc, log)
	if err != nil {
		return nil, err
	}
	srv, err := serveRestoreAPI(ctx, o, so, api, log)
	if err != nil {
		_ = stopDoors(context.WithoutCancel(ctx))
		return nil, err
	}
	stopExpiring, _ := background("restore expiry", func(ctx context.Context) {
		owner.KeepExpiringRestores(ctx, st, maxRetention(so.Rules.MaxRetention), time.Hour, log)
	}).start(context.WithoutCancel(ctx))
	return func(ctx context.Context) error {
		err := errors.Join(srv.stop(ctx), stopDoors(ctx))
		_ = stopExpiring(ctx)
		owner.Close()
		st.Close()
		return err
	}, nil
}

// apiServices builds the services both doors serve (history's reads,
// restore's writes), as the direct API's options: with the caller
// authentication of a cluster, or standalone.
func apiServices(o *APIOptions, so *ServeOptions, st *store.Store, owner *store.APIStore, dg *model.SecretDigester, log *slog.Logger) (svc restoreapi.Options, err error) {
	// Page cursors are sealed with a key the replicas share (they share the
	// digest key), so a page from one replica continues on another.
	hopts := history.Options{Reader: st, Progress: st, Logger: log, CursorKey: dg.DeriveKey("restore-api-cursors")}
	opts := restore.Options{Reader: st, Log: owner, Cluster: so.Cluster, Logger: log, MaxPlanSteps: o.MaxPlanObjects, MaxUndoRows: o.MaxUndoRows}
	// One per-caller cap for both front doors: a caller gets no more
	// requests at once by using the direct API and kubectl together.
	// And one limit of unauthenticated requests: bad tokens spend one budget
	// per address at both doors.
	svc = restoreapi.Options{Logger: log, RequestTimeout: o.RequestTimeout, MaxInFlight: o.MaxInFlight,
		Callers: history.NewCallerLimiter(o.MaxInFlightPerUser), AuthLimit: authlimit.New(authlimit.Options{}),
		Proofs: versionProofs(st.Pool())}
	if opts.Kube, svc.Authenticator, hopts.Authorizer, err = apiAuth(o, so, log); err != nil {
		return svc, err
	}
	if opts.Kube != nil {
		hopts.Cluster = so.Cluster // its RBAC authorizes the reads
	}
	if svc.History, err = history.New(hopts); err != nil {
		return svc, err
	}
	opts.History = svc.History
	svc.Restore, err = restore.New(opts)
	return svc, err
}

// apiAuth authenticates and authorizes the API's callers: by the cluster
// (TokenReview, SubjectAccessReview), whose config it returns, or, without
// one, by the static token, on loopback only.
func apiAuth(o *APIOptions, so *ServeOptions, log *slog.Logger) (*rest.Config, authenticator.Request, authorizer.Authorizer, error) {
	if so.Kube == nil {
		if err := loopbackOnly(o.Addr); err != nil {
			return nil, nil, nil, err
		}
		authn, authz, err := standaloneAuth(o, so, log)
		return nil, authn, authz, err
	}
	kube, err := so.Kube.RestConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	authn, authz, err := delegatingAuth(kube, o.Audiences)
	return kube, authn, authz, err
}

// startRecordDoors starts the doors of record.optionsrecord.io that are
// configured (through the kube-apiserver, and directly to bearer tokens)
// over the API's services; the function it returns stops them.
func startRecordDoors(ctx context.Context, o *APIOptions, so *ServeOptions, svc restoreapi.Options, log *slog.Logger) (func(context.Context) error, error) {
	var stopAggregated, stopDirect func(context.Context) error
	var err error
	if o.Aggregated != nil {
		if stopAggregated, err = runAggregated(ctx, o, so, svc.History, svc.Restore, svc.Callers, svc.Proofs, log); err != nil {
			return nil, err
		}
	}
	if o.RecordAddr != "" {
		if stopDirect, err = runRecordDirect(ctx, o, so, svc, log); err != nil {
			if stopAggregated != nil {
				_ = stopAggregated(context.WithoutCancel(ctx))
			}
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		var err error
		if stopAggregated != nil {
			err = stopAggregated(ctx)
		}
		if stopDirect != nil {
			err = errors.Join(err, stopDirect(ctx))
		}
		return err
	}, nil
}

// serveRestoreAPI serves the direct API on its listener, with its own
// certificate or the webhook's.
func serveRestoreAPI(ctx context.Context, o *APIOptions, so *ServeOptions, api http.Handler, log *slog.Logger) (*httpServer, error) {
	certFile, keyFile := apiCert(o, so)
	reloader, err := certs.NewReloader(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("restore API: %w", err)
	}
	tlsCfg, err := certs.ServerConfig(reloader, "")
	if err != nil {
		return nil, fmt.Errorf("restore API: %w", err)
	}
	ln, err := so.listen(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("restore API listener: %w", err)
	}
	srv := newHTTPServer("restore API", api, tlsCfg, limits{readHeader: 10 * time.Second, read: 60 * time.Second,
		idle: 120 * time.Second, maxStreams: aggregated.DirectMaxStreamsPerConnection}, log)
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	srv.serve(ln, nil)
	mode := "cluster"
	if so.Kube == nil {
		mode = "standalone (read-only)"
	}
	log.Info("serving the restore API", "addr", ln.Addr().String(), "mode", mode, "openapi", "/api/v1/openapi.json")
	return srv, nil
}

// apiCert is the API's serving certificate: its own, or the webhook's.
func apiCert(o *APIOptions, so *ServeOptions) (certFile, keyFile string) {
	if o.TLSCertFile == "" {
		return so.TLSCertFile, so.TLSKeyFile
	}
	return o.TLSCertFile, o.TLSKeyFile
}

// maxRetention is --max-retention, or its default when unset.
func maxRetention(d time.Duration) time.Duration {
	if d <= 0 {
		return filter.DefaultMaxRetention
	}
	return d
}

// runAggregated serves the record through the kube-apiserver: the generic
// apiserver of package aggregated, on its own listener, with the restore
// API's serving certificate and history service.
func runAggregated(ctx context.Context, o *APIOptions, so *ServeOptions, hist *history.Service, svc *restore.Service, callers *history.CallerLimiter, proofs history.Proofs, log *slog.Logger) (func(context.Context) error, error) {
	a := o.Aggregated
	certFile, keyFile := apiCert(o, so)
	kubeconfig := a.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = so.Kube.Kubeconfig
	}
	caFile, names := a.RequestHeaderCAFile, a.RequestHeaderAllowedNames
	var fromCluster *aggregated.FrontProxyCA
	if caFile == "" {
		if so.Database.DataDir == "" {
			return nil, errors.New("the aggregated API reads the front-proxy CA from the cluster into --data-dir: set it, or --aggregated-requestheader-ca-file")
		}
		cfg, err := so.Kube.RestConfig()
		if err != nil {
			return nil, err
		}
		kc, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("aggregated API: kube client: %w", err)
		}
		caFile = filepath.Join(so.Database.DataDir, "front-proxy-ca.crt")
		fromCluster = &aggregated.FrontProxyCA{Client: kc, File: caFile, Interval: a.caRefresh, Logger: log}
		published, err := fromCluster.Start(ctx)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			names = published
		}
	}
	trustUID, err := kubeTrustsUID(so.Kube, log)
	if err != nil {
		return nil, err
	}
	ln, err := so.listen(a.Addr)
	if err != nil {
		return nil, fmt.Errorf("aggregated API listener: %w", err)
	}
	srv, err := aggregated.New(aggregated.Options{Listener: ln, CertFile: certFile, KeyFile: keyFile,
		RequestHeaderCAFile: caFile, RequestHeaderAllowedNames: names, TrustUIDHeader: trustUID,
		Kubeconfig: kubeconfig, History: hist, Restore: svc, Proofs: proofs, Cluster: so.Cluster,
		MaxInFlight: o.MaxInFlight, Callers: callers, RequestTimeout: o.RequestTimeout, Logger: log.With("component", "aggregated-api")})
	if err != nil {
		ln.Close()
		return nil, err
	}
	stop := runUntilStopped(ctx, "aggregated API", func(runCtx context.Context) error {
		if fromCluster != nil {
			go fromCluster.Run(runCtx)
		}
		return srv.Run(runCtx)
	})
	log.Info("serving the aggregated API", "addr", ln.Addr().String(), "group", "record.optionsrecord.io")
	return stop, nil
}

// runUntilStopped runs run in the background until the returned function
// is called, which waits for it to return (or for its own context to end).
func runUntilStopped(ctx context.Context, what string, run func(context.Context) error) func(context.Context) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	return func(stopCtx context.Context) error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-stopCtx.Done():
			return fmt.Errorf("%s: stop: %w", what, stopCtx.Err())
		}
	}
}

// runRecordDirect serves the group record.optionsrecord.io on its own
// listener to bearer tokens, authenticated as the direct API authenticates
// them (TokenReview, its audiences) and authorized per object as every
// read is, with the direct API's bounds: failed authentications limited
// per address, the same per-caller cap.
func runRecordDirect(ctx context.Context, o *APIOptions, so *ServeOptions, api restoreapi.Options, log *slog.Logger) (func(context.Context) error, error) {
	certFile, keyFile := apiCert(o, so)
	kubeconfig := so.Kube.Kubeconfig
	if o.Aggregated != nil && o.Aggregated.Kubeconfig != "" {
		kubeconfig = o.Aggregated.Kubeconfig
	}
	ln, err := so.listen(o.RecordAddr)
	if err != nil {
		return nil, fmt.Errorf("record listener: %w", err)
	}
	srv, err := aggregated.New(aggregated.Options{Listener: ln, CertFile: certFile, KeyFile: keyFile,
		Authenticator: api.Authenticator, AuthLimit: api.AuthLimit,
		Kubeconfig: kubeconfig, History: api.History, Restore: api.Restore, Proofs: api.Proofs, Cluster: so.Cluster,
		MaxInFlight: o.MaxInFlight, Callers: api.Callers, RequestTimeout: o.RequestTimeout,
		Logger: log.With("component", "record-direct")})
	if err != nil {
		ln.Close()
		return nil, err
	}
	stop := runUntilStopped(ctx, "record listener", srv.Run)
	log.Info("serving the record directly to bearer tokens", "addr", ln.Addr().String(), "group", "record.optionsrecord.io")
	return stop, nil
}

// delegatingAuth asks the cluster: TokenReview, SubjectAccessReview, each
// through a client of its own (reviewClients).
func delegatingAuth(cfg *rest.Config, audiences []string) (authenticator.Request, authorizer.Authorizer, error) {
	return delegatingAuthWith(cfg, audiences, defaultReviewRates)
}

// standaloneAuth reads (or generates) the static token.
func standaloneAuth(o *APIOptions, so *ServeOptions, log *slog.Logger) (authenticator.Request, authorizer.Authorizer, error) {
	file, generated := o.TokenFile, false
	if file == "" {
		generated = true
		if so.Database.DataDir == "" {
			return nil, nil, errors.New("restore API without a cluster: set --api-token-file (or --data-dir to generate one)")
		}
		var err error
		if file, err = secretfile.Ensure(filepath.Join(so.Database.DataDir, "api-token")); err != nil {
			return nil, nil, err
		}
		log.Info("using a generated restore API token (standalone mode)", "token_file", file)
	}
	tok, err := secretfile.Read(file, generated)
	if err != nil {
		return nil, nil, fmt.Errorf("restore API token: %w", err)
	}
	return restoreapi.StaticToken(string(tok))
}

// loopbackOnly refuses a standalone API reachable from other hosts: its
// static token is a weaker credential than the cluster's.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--api-bind-address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--api-bind-address %q: without a cluster the restore API is read-only and listens on loopback only (127.0.0.1:PORT or [::1]:PORT)", addr)
}

// kubeTrustsUID asks the kube-apiserver its version: only from 1.32 does
// its aggregator drop a client-sent X-Remote-Uid (aggregated.TrustRemoteUID).
// Before, callers are keyed by username alone, and restores impersonate no
// uid.
func kubeTrustsUID(k *KubeOptions, log *slog.Logger) (bool, error) {
	cfg, err := k.RestConfig()
	if err != nil {
		return false, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("aggregated API: discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return false, fmt.Errorf("aggregated API: the kube-apiserver's version: %w", err)
	}
	trust := aggregated.TrustRemoteUID(v.GitVersion)
	if !trust {
		log.Warn("this kube-apiserver forwards a client-sent X-Remote-Uid (before 1.32): callers of the aggregated API are keyed by username, and their uid is not used",
			"version", v.GitVersion)
	}
	return trust, nil
}
