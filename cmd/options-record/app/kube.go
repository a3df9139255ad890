package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/filter/rulesync"
	"github.com/options-record/options-record/store/model"
)

// KubeOptions say how the sink reaches the cluster it runs in.
type KubeOptions struct {
	// Kubeconfig is a kubeconfig file; with Context, empty loads them as
	// kubectl does (KUBECONFIG, else ~/.kube/config); with neither, the
	// in-cluster config is used.
	Kubeconfig string
	// Context is the kubeconfig context to use (default: the current one).
	Context string
	// Config, when set, is used as is (tests).
	Config *rest.Config
	// Sync are the rule syncer's own options: the period of its safety-net
	// LIST, how often it writes statuses, its baselines and this replica's
	// name in the status Lease. Serve sets the rest (the client
	// configuration, cluster, namespace, registry, store, digester, logger).
	Sync rulesync.Options
}

// RestConfig resolves the client configuration.
func (k *KubeOptions) RestConfig() (*rest.Config, error) {
	if k.Config != nil {
		return rest.CopyConfig(k.Config), nil
	}
	if k.Kubeconfig != "" || k.Context != "" {
		// kubectl's loading rules: --kubeconfig, else KUBECONFIG, else
		// ~/.kube/config; --context picks the context.
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = k.Kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: k.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig (%s, context %q): %w", cmp.Or(k.Kubeconfig, "KUBECONFIG or ~/.kube/config"), k.Context, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster config (give --kubeconfig outside a cluster): %w", err)
	}
	return cfg, nil
}

func startSyncer(ctx context.Context, o ServeOptions, reg *rulesync.Registry, st rulesync.Store, dg *model.SecretDigester, log *slog.Logger) (*rulesync.Syncer, error) {
	cfg, err := o.Kube.RestConfig()
	if err != nil {
		return nil, err
	}
	so := o.Kube.Sync
	so.Config, so.Cluster, so.Namespace = cfg, o.Cluster, o.Rules.Namespace
	so.Registry, so.Store, so.Digester, so.Logger = reg, st, dg, log
	s, err := rulesync.New(so)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// reviewRates are the client-side rate limits of the delegated checks.
type reviewRates struct {
	tokenQPS    float32
	tokenBurst  int
	accessQPS   float32
	accessBurst int
}

// defaultReviewRates: client-go's default of 5 requests a second would let
// a few callers starve everyone; k8s.io/apiserver's delegated
// authentication uses 200/400 too.
var defaultReviewRates = reviewRates{tokenQPS: 200, tokenBurst: 400, accessQPS: 200, accessBurst: 400}

// delegatingAuthWith builds the authenticator (TokenReview) and the
// authorizer (SubjectAccessReview) of the API doors on two clients, each
// with its own rate limit: the per-object checks of one caller's reads (up
// to 200 a request) cannot delay anyone's authentication, nor bad tokens
// the checks of authenticated callers.
func delegatingAuthWith(cfg *rest.Config, audiences []string, r reviewRates) (authenticator.Request, authorizer.Authorizer, error) {
	tokens, access := rest.CopyConfig(cfg), rest.CopyConfig(cfg)
	tokens.QPS, tokens.Burst = r.tokenQPS, r.tokenBurst
	access.QPS, access.Burst = r.accessQPS, r.accessBurst
	tokenClient, err := kubernetes.NewForConfig(tokens)
	if err != nil {
		return nil, nil, fmt.Errorf("restore API: TokenReview client: %w", err)
	}
	accessClient, err := kubernetes.NewForConfig(access)
	if err != nil {
		return nil, nil, fmt.Errorf("restore API: SubjectAccessReview client: %w", err)
	}
	return restoreapi.DelegatingAuth(tokenClient, accessClient, restoreapi.AuthCacheTTL, audiences...)
}
