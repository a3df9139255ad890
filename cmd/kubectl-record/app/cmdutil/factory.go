package cmdutil

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/record/clientset/versioned"
	recordv1 "github.com/options-record/options-record/api/record/clientset/versioned/typed/record/v1alpha1"
	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// Factory is what every verb shares: the kubeconfig flags, the streams,
// and the clients made from them.
type Factory struct {
	Config    *genericclioptions.ConfigFlags
	Streams   genericiooptions.IOStreams
	installed bool // discovery has shown the record API
	// The record served directly (serve --record-bind-address), for
	// clusters that do not aggregate it: its URL, a bearer token (default:
	// the kubeconfig's) and the CA of its serving certificate.
	recordServer, recordToken, recordCA string
	// ns, when set, overrides -n (the page's requests name their own).
	ns string
	// lag keeps how late the record's sources are, from its answers;
	// lagWarning (--lag-warning) is the age past which it is noted.
	lag        *lagNotes
	lagWarning time.Duration
}

// NewFactory returns a Factory writing to streams; AddFlags gives it its
// flags.
func NewFactory(streams genericiooptions.IOStreams) *Factory {
	return &Factory{Config: genericclioptions.NewConfigFlags(true), Streams: streams, lag: &lagNotes{}, lagWarning: DefaultLagWarning}
}

// AddFlags adds the kubeconfig flags (--kubeconfig, --context, -n,
// --as...) and the --record-* flags to fs.
func (f *Factory) AddFlags(fs *pflag.FlagSet) {
	f.Config.AddFlags(fs)
	fs.StringVar(&f.recordServer, "record-server", "", "Reach the record at this URL (options-record serve --record-bind-address) instead of through the kube-apiserver; types and names are still resolved with the kubeconfig")
	fs.StringVar(&f.recordToken, "record-token", "", "Bearer token for --record-server (default: the kubeconfig's token; for example kubectl create token)")
	fs.StringVar(&f.recordCA, "record-certificate-authority", "", "CA file of --record-server's serving certificate (default: the system's)")
	fs.DurationVar(&f.lagWarning, "lag-warning", DefaultLagWarning, "Note on stderr when an audit source of the cluster (webhook, firehose, pubsub, eventhubs) delivered nothing newer than this: recent changes may not be recorded yet (0: never)")
}

// InNamespace is f for requests about namespace ns.
func (f *Factory) InNamespace(ns string) *Factory {
	c := *f
	c.ns = ns
	return &c
}

// checkInstalled asks discovery (which every authenticated user may read)
// whether the cluster serves the record API. A cached answer that says
// no is checked again without the cache: the API may have just been
// installed.
func (f *Factory) checkInstalled() error {
	dc, err := f.Config.ToDiscoveryClient()
	if err != nil {
		return err
	}
	served := func() (bool, error) {
		groups, err := dc.ServerGroups()
		if err != nil {
			return false, err
		}
		for _, g := range groups.Groups {
			for _, v := range g.Versions {
				if v.GroupVersion == record.SchemeGroupVersion.String() {
					return true, nil
				}
			}
		}
		return false, nil
	}
	ok, err := served()
	if err == nil && !ok {
		dc.Invalidate()
		ok, err = served()
	}
	switch {
	case err != nil:
		return Explain(err, "reach the cluster's API discovery")
	case !ok:
		return &codedError{ExitNotFound, fmt.Errorf("the record API (%s) is not installed in this cluster: ask its operator to install deploy/components/aggregated-api", record.SchemeGroupVersion)}
	}
	return nil
}

// Record returns the typed client of the record API, as the caller, once
// discovery has shown the API is served (a user without its RBAC would
// otherwise read a missing API as a refusal).
func (f *Factory) Record() (recordv1.RecordV1alpha1Interface, error) {
	if f.recordServer != "" {
		return f.recordDirect()
	}
	if !f.installed {
		if err := f.checkInstalled(); err != nil {
			return nil, err
		}
		f.installed = true
	}
	cfg, err := f.Config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(f.lag.wrap)
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs.RecordV1alpha1(), nil
}

// recordDirect is the typed client of the record served directly, with a
// bearer token.
func (f *Factory) recordDirect() (recordv1.RecordV1alpha1Interface, error) {
	if f.impersonating() {
		// The direct door serves the token's owner only: sent without the
		// kube-apiserver, --as would be dropped and a restore would run
		// with the owner's rights instead.
		return nil, usageError{errors.New("--as, --as-group and --as-uid go through the kube-apiserver, which authorizes them: leave out --record-server")}
	}
	token := f.recordToken
	if token == "" {
		if cfg, err := f.Config.ToRESTConfig(); err == nil {
			token = cfg.BearerToken
		}
	}
	if token == "" {
		return nil, usageError{errors.New("--record-server needs a bearer token: --record-token, or a kubeconfig user with a token")}
	}
	cfg := &rest.Config{Host: f.recordServer, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: f.recordCA}}
	cfg.Wrap(f.lag.wrap)
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs.RecordV1alpha1(), nil
}

// impersonating tells whether the command line asks to act as someone else.
func (f *Factory) impersonating() bool {
	c := f.Config
	return c.Impersonate != nil && *c.Impersonate != "" ||
		c.ImpersonateUID != nil && *c.ImpersonateUID != "" ||
		c.ImpersonateGroup != nil && len(*c.ImpersonateGroup) > 0
}

// Namespace returns the namespace of -n, or the kubeconfig context's.
func (f *Factory) Namespace() (string, error) {
	if f.ns != "" {
		return f.ns, nil
	}
	ns, _, err := f.Config.ToRawKubeConfigLoader().Namespace()
	return ns, err
}
