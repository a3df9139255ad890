package aggregated

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/component-base/compatibility"

	generatedopenapi "github.com/options-record/options-record/api/aggregated/openapi"
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
	direct := opts.Authenticator != nil
	if !direct && len(opts.RequestHeaderAllowedNames) == 0 {
		return nil, errors.New("aggregated: no front-proxy allowed names: any certificate of the front-proxy CA would be taken as the kube-apiserver's proxy; " +
			"set --aggregated-requestheader-allowed-names to the common name of its --proxy-client-cert-file (front-proxy-client on kubeadm)")
	}
	if opts.Listener == nil || opts.CertFile == "" || (!direct && opts.RequestHeaderCAFile == "") || opts.History == nil || opts.Restore == nil || opts.Cluster == "" {
		return nil, errors.New("aggregated: Listener, CertFile, RequestHeaderCAFile (or an Authenticator), History, Restore and Cluster are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := genericapiserver.NewConfig(Codecs)
	// Emulation and compatibility versions of the generic server's own
	// machinery; /version reports it.
	cfg.EffectiveVersion = compatibility.NewEffectiveVersionFromString("1.36", "", "")
	// NewConfig leaves FlowControl nil (the max-in-flight filter is used
	// instead of priority-and-fairness, which needs FlowSchema informers),
	// AdmissionControl nil (no admission plugins, hence no informers for
	// them) and RESTOptionsGetter nil (no etcd).
	cfg.EnableProfiling = false
	// Counts objects in etcd for priority-and-fairness' work estimates;
	// with neither, its post-start hook would only run an idle goroutine.
	cfg.StorageObjectCountTracker = nil
	// Bounded work, as the direct API: few requests at once in all and per
	// caller, each with a deadline.
	cfg.MaxRequestsInFlight = cmp.Or(opts.MaxInFlight, history.DefaultMaxInFlight)
	cfg.MaxMutatingRequestsInFlight = max(cfg.MaxRequestsInFlight/2, 1)
	cfg.RequestTimeout = cmp.Or(opts.RequestTimeout, time.Minute)
	callers := opts.Callers
	if callers == nil {
		callers = history.NewCallerLimiter(opts.MaxInFlightPerUser)
	}
	authLimit := opts.AuthLimit
	if direct && authLimit == nil {
		authLimit = authlimit.New(authlimit.Options{})
	}
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		chain := refuseImpersonation(genericapiserver.DefaultBuildHandlerChain(perCaller(h, callers), c))
		if direct {
			// Outside the whole chain: a refused request costs nothing.
			chain = authLimit.Handler(chain, refuseUnauthenticated)
		}
		return chain
	}
	for _, h := range opts.DisabledPostStartHooks {
		cfg.DisabledPostStartHooks.Insert(h)
	}

	serving := genericoptions.NewSecureServingOptions().WithLoopback()
	serving.Listener = opts.Listener
	serving.ServerCert.CertKey.CertFile = opts.CertFile
	serving.ServerCert.CertKey.KeyFile = opts.KeyFile
	// The aggregator multiplexes many requests into one HTTP/2 connection;
	// a caller of the direct door is one client, and every stream it opens
	// is a request to authenticate.
	serving.HTTP2MaxStreamsPerConnection = 1000
	if direct {
		serving.HTTP2MaxStreamsPerConnection = DirectMaxStreamsPerConnection
	}
	if err := serving.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("aggregated: secure serving: %w", err)
	}

	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = opts.Kubeconfig
	// Never look up (or watch) kube-system/extension-apiserver-authentication:
	// the request-header CA and names come from the options.
	authn.SkipInClusterLookup = true
	if !direct {
		authn.RequestHeader.ClientCAFile = opts.RequestHeaderCAFile
		authn.RequestHeader.AllowedNames = opts.RequestHeaderAllowedNames
	}
	// The generic default does not read X-Remote-Uid (k8s.io/apiserver
	// leaves UIDHeaders empty for old proxies); read it only from a
	// kube-apiserver that sets it itself.
	if opts.TrustUIDHeader {
		authn.RequestHeader.UIDHeaders = []string{"X-Remote-Uid"}
	}
	openAPIV2 := genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(namingScheme))
	openAPIV2.Info.Title = "Options Record"
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, openAPIV2); err != nil {
		return nil, fmt.Errorf("aggregated: authentication: %w", err)
	}
	// Serve only the kube-apiserver's front proxy: ApplyTo also takes
	// bearer tokens (TokenReview) and anonymous callers, which nothing but a
	// caller going around the kube-apiserver would send. The aggregator's
	// own availability checks come through the front proxy too.
	if direct {
		// Served directly: the bearer tokens the caller's authenticator
		// takes (TokenReview), nothing else.
		cfg.Authentication.Authenticator = authLimit.Authenticator(opts.Authenticator)
		cfg.Authentication.RequestHeaderConfig = nil
	} else {
		frontProxyOnly, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
			Anonymous:           &apiserver.AnonymousAuthConfig{Enabled: false},
			RequestHeaderConfig: cfg.Authentication.RequestHeaderConfig,
		}.New()
		if err != nil {
			return nil, fmt.Errorf("aggregated: authentication: %w", err)
		}
		cfg.Authentication.Authenticator = frontProxyOnly
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = opts.Kubeconfig
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return nil, fmt.Errorf("aggregated: authorization: %w", err)
	}

	cfg.OpenAPIConfig = openAPIV2
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(namingScheme))
	cfg.OpenAPIV3Config.Info.Title = "Options Record"

	// No informer factory: no generic-apiserver-start-informers hook.
	generic, err := cfg.Complete(nil).New("options-record-aggregated", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("aggregated: new generic server: %w", err)
	}

	group := genericapiserver.NewDefaultAPIGroupInfo(recordv1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	group.VersionedResourcesStorageMap[recordv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"deletions":           newDeletionStorage(log, opts.History, opts.Cluster, true),
		"clusterdeletions":    newDeletionStorage(log, opts.History, opts.Cluster, false),
		"changes":             newChangeStorage(log, opts.History, opts.Restore, opts.Cluster, true),
		"clusterchanges":      newChangeStorage(log, opts.History, opts.Restore, opts.Cluster, false),
		"attempts":            newAttemptStorage(log, opts.History, opts.Cluster, true),
		"clusterattempts":     newAttemptStorage(log, opts.History, opts.Cluster, false),
		"restoreplans":        newPlanStorage(log, opts.Restore, opts.Cluster, true),
		"clusterrestoreplans": newPlanStorage(log, opts.Restore, opts.Cluster, false),
		"restores":            newRestoreStorage(log, opts.History, opts.Restore, opts.Cluster, true),
		"clusterrestores":     newRestoreStorage(log, opts.History, opts.Restore, opts.Cluster, false),
	}
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("aggregated: install API group: %w", err)
	}
	return &Server{generic: generic}, nil
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
