package aggregated

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/options-record/options-record/api/authlimit"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore"
)

// Options configure the aggregated server.
type Options struct {
	// Listener the server serves HTTPS on (e.g. 127.0.0.1:0).
	Listener net.Listener
	// CertFile and KeyFile are the serving certificate; it must name
	// <service>.<namespace>.svc, the name the aggregator verifies.
	CertFile, KeyFile string
	// Authenticator, when set, serves the group directly instead of
	// through the kube-apiserver: callers present bearer tokens this
	// authenticator takes (TokenReview), and no front-proxy header is
	// read (RequestHeaderCAFile and RequestHeaderAllowedNames unused).
	Authenticator authenticator.Request
	// AuthLimit limits, when served directly (Authenticator set), the
	// requests not yet authenticated: each takes a failure of its
	// address's budget and a place among those being authenticated before
	// its TokenReview, and is answered 429 when none is left. Nil: one of
	// its own with authlimit's defaults.
	AuthLimit *authlimit.Limiter
	// RequestHeaderCAFile is the front-proxy CA (the kube-apiserver's
	// --requestheader-client-ca-file), re-read when it changes.
	RequestHeaderCAFile string
	// RequestHeaderAllowedNames are the common names of the front proxy's
	// client certificate (--requestheader-allowed-names). Required: empty
	// would take any certificate the front-proxy CA signed as the proxy.
	RequestHeaderAllowedNames []string
	// TrustUIDHeader takes the caller's uid from X-Remote-Uid. Only a
	// kube-apiserver of 1.32 or later removes a client-sent X-Remote-Uid
	// before it proxies (TrustRemoteUID tells by its version); an older one
	// forwards it unchanged, so a caller could choose the uid restores
	// impersonate and plans and caps are keyed by. Without it the uid is
	// not read: callers are their username.
	TrustUIDHeader bool
	// Kubeconfig reaches the kube-apiserver for TokenReview and
	// SubjectAccessReview; empty: the in-cluster config.
	Kubeconfig string
	// History answers the reads, for the cluster named Cluster (the one
	// whose kube-apiserver this server is aggregated into).
	History *history.Service
	// Restore carries out restores, as their creators.
	Restore *restore.Service
	// Proofs answers changes/proof and clusterchanges/proof (after the
	// history service authorized reading the version); nil: the record
	// keeps no tamper-evident log, and every proof is not found, saying so.
	Proofs  history.Proofs
	Cluster string
	Logger  *slog.Logger
	// MaxInFlight caps the requests served at once (default 16, half of
	// them writes), MaxInFlightPerUser the resource requests of one caller
	// (default 4); RequestTimeout bounds each request (default 1 minute).
	MaxInFlight, MaxInFlightPerUser int
	// Callers, when set, is the per-caller cap shared with the direct API
	// (MaxInFlightPerUser is then unused).
	Callers        *history.CallerLimiter
	RequestTimeout time.Duration
	// DisabledPostStartHooks names generic post-start hooks not to run.
	DisabledPostStartHooks []string
}

// Scheme and Codecs hold the group's types.
var (
	Scheme = runtime.NewScheme()
	Codecs = serializer.NewCodecFactory(Scheme)
)

// namingScheme knows only the served version; see AddServedToScheme.
var namingScheme = runtime.NewScheme()

func init() {
	if err := recordv1alpha1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	if err := recordv1alpha1.AddServedToScheme(namingScheme); err != nil {
		panic(err)
	}
	// The generic server's handlers decode list/get/create options and
	// encode Status and Table with the unversioned meta types.
	metav1.AddToGroupVersion(Scheme, metav1.Unversioned)
	Scheme.AddUnversionedTypes(metav1.Unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
}

// Server is a configured aggregated server, not yet running.
type Server struct {
	generic *genericapiserver.GenericAPIServer
}

// New builds the generic API server: secure serving, delegated
// authentication (request-header from a file, TokenReview) and
// authorization (SubjectAccessReview), OpenAPI v2 and v3, and the group's
// storage. Nothing that watches is configured.
func New(opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.complete()
	cfg := genericConfig(opts)
	if err := secureServing(opts).ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("aggregated: secure serving: %w", err)
	}
	openAPIV2, openAPIV3 := openAPIConfigs()
	if err := delegateAuthentication(cfg, opts, openAPIV2); err != nil {
		return nil, fmt.Errorf("aggregated: authentication: %w", err)
	}
	if err := delegateAuthorization(cfg, opts); err != nil {
		return nil, fmt.Errorf("aggregated: authorization: %w", err)
	}
	cfg.OpenAPIConfig, cfg.OpenAPIV3Config = openAPIV2, openAPIV3
	// No informer factory: no generic-apiserver-start-informers hook.
	generic, err := cfg.Complete(nil).New("options-record-aggregated", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("aggregated: new generic server: %w", err)
	}
	if err := generic.InstallAPIGroup(apiGroup(opts)); err != nil {
		return nil, fmt.Errorf("aggregated: install API group: %w", err)
	}
	return &Server{generic: generic}, nil
}

// direct says whether the group is served directly, not through the
// kube-apiserver (an Authenticator is set).
func (o *Options) direct() bool { return o.Authenticator != nil }

// validate refuses options the server cannot be built from, or built
// unsafely.
func (o *Options) validate() error {
	if !o.direct() && len(o.RequestHeaderAllowedNames) == 0 {
		return errors.New("aggregated: no front-proxy allowed names: any certificate of the front-proxy CA would be taken as the kube-apiserver's proxy; " +
			"set --aggregated-requestheader-allowed-names to the common name of its --proxy-client-cert-file (front-proxy-client on kubeadm)")
	}
	if o.Listener == nil || o.CertFile == "" || (!o.direct() && o.RequestHeaderCAFile == "") || o.History == nil || o.Restore == nil || o.Cluster == "" {
		return errors.New("aggregated: Listener, CertFile, RequestHeaderCAFile (or an Authenticator), History, Restore and Cluster are required")
	}
	return nil
}

// complete fills in the defaults: a discarding logger, a per-caller cap of
// the server's own, and (served directly) a limiter of unauthenticated
// requests of its own.
func (o Options) complete() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Callers == nil {
		o.Callers = history.NewCallerLimiter(o.MaxInFlightPerUser)
	}
	if o.direct() && o.AuthLimit == nil {
		o.AuthLimit = authlimit.New(authlimit.Options{})
	}
	return o
}

// PostStartHooks lists the post-start hooks the server will run.
func (s *Server) PostStartHooks() []string {
	var names []string
	for name := range s.generic.PostStartHooks() {
		names = append(names, name)
	}
	return names
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	return s.generic.PrepareRun().RunWithContext(ctx)
}
