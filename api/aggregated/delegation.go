package aggregated

import (
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/kube-openapi/pkg/common"
)

// delegateAuthentication authenticates callers through the kube-apiserver:
// its front proxy's request headers (the CA from a file), or, served
// directly, the bearer tokens the options' authenticator takes
// (TokenReview), behind the limiter of unauthenticated requests.
func delegateAuthentication(cfg *genericapiserver.Config, opts Options, openAPIV2 *common.Config) error {
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = opts.Kubeconfig
	// Never look up (or watch) kube-system/extension-apiserver-authentication:
	// the request-header CA and names come from the options.
	authn.SkipInClusterLookup = true
	if !opts.direct() {
		authn.RequestHeader.ClientCAFile = opts.RequestHeaderCAFile
		authn.RequestHeader.AllowedNames = opts.RequestHeaderAllowedNames
	}
	// The generic default does not read X-Remote-Uid (k8s.io/apiserver
	// leaves UIDHeaders empty for old proxies); read it only from a
	// kube-apiserver that sets it itself.
	if opts.TrustUIDHeader {
		authn.RequestHeader.UIDHeaders = []string{"X-Remote-Uid"}
	}
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, openAPIV2); err != nil {
		return err
	}
	// Serve only the kube-apiserver's front proxy: ApplyTo also takes
	// bearer tokens (TokenReview) and anonymous callers, which nothing but a
	// caller going around the kube-apiserver would send. The aggregator's
	// own availability checks come through the front proxy too.
	if opts.direct() {
		// Served directly: the bearer tokens the caller's authenticator
		// takes (TokenReview), nothing else.
		cfg.Authentication.Authenticator = opts.AuthLimit.Authenticator(opts.Authenticator)
		cfg.Authentication.RequestHeaderConfig = nil
		return nil
	}
	frontProxyOnly, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:           &apiserver.AnonymousAuthConfig{Enabled: false},
		RequestHeaderConfig: cfg.Authentication.RequestHeaderConfig,
	}.New()
	if err != nil {
		return err
	}
	cfg.Authentication.Authenticator = frontProxyOnly
	return nil
}

// delegateAuthorization authorizes each request with a
// SubjectAccessReview of the kube-apiserver.
func delegateAuthorization(cfg *genericapiserver.Config, opts Options) error {
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = opts.Kubeconfig
	return authz.ApplyTo(&cfg.Authorization)
}
