package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/record/clientset/versioned"
	recordv1 "github.com/options-record/options-record/api/record/clientset/versioned/typed/record/v1alpha1"
	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// Main runs the plugin with args and returns its exit code.
func Main(args []string, streams genericiooptions.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// An error may quote what the server answered, which may quote a
	// recorded string.
	fmt.Fprintln(streams.ErrOut, "error:", escape.Line(err.Error()))
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	if isUsage(err) {
		return 2
	}
	return 1
}

// options are what every verb shares: the kubeconfig flags.
type options struct {
	config    *genericclioptions.ConfigFlags
	streams   genericiooptions.IOStreams
	installed bool // discovery has shown the record API
	// The record served directly (serve --record-bind-address), for
	// clusters that do not aggregate it: its URL, a bearer token (default:
	// the kubeconfig's) and the CA of its serving certificate.
	recordServer, recordToken, recordCA string
	// ns, when set, overrides -n (the page's requests name their own).
	ns string
}

// inNamespace is o for requests about namespace ns.
func (o *options) inNamespace(ns string) *options {
	c := *o
	c.ns = ns
	return &c
}

// checkInstalled asks discovery (which every authenticated user may read)
// whether the cluster serves the record API. A cached answer that says
// no is checked again without the cache: the API may have just been
// installed.
func (o *options) checkInstalled() error {
	dc, err := o.config.ToDiscoveryClient()
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
		return explain(err, "reach the cluster's API discovery")
	case !ok:
		return &codedError{4, fmt.Errorf("the record API (%s) is not installed in this cluster: ask its operator to install deploy/components/aggregated-api", record.SchemeGroupVersion)}
	}
	return nil
}

// NewCommand returns the kubectl-record command tree.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "kubectl-record",
		Short: "Who changed or deleted what, what it looked like before, and put it back",
		Long: `kubectl record asks the Options Record of this cluster (the aggregated API
record.optionsrecord.io) who deleted or changed an object, shows its versions,
and restores one, as you: your RBAC decides what you see and what you may
write back.`,
		Example: `  kubectl record deletions -n shop                 # who deleted what in shop
  kubectl record history cm/app-config -n shop     # every version, across re-creations
  kubectl record manifest deploy/web -n shop       # a clean manifest of the newest version
  kubectl record restore cm/app-config -n shop     # dry run, confirm, restore as you`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Run by kubectl as a plugin: help and completion say "kubectl record".
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl record"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	o.config.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&o.recordServer, "record-server", "", "Reach the record at this URL (options-record serve --record-bind-address) instead of through the kube-apiserver; types and names are still resolved with the kubeconfig")
	root.PersistentFlags().StringVar(&o.recordToken, "record-token", "", "Bearer token for --record-server (default: the kubeconfig's token; for example kubectl create token)")
	root.PersistentFlags().StringVar(&o.recordCA, "record-certificate-authority", "", "CA file of --record-server's serving certificate (default: the system's)")
	root.AddCommand(newDeletionsCommand(o), newHistoryCommand(o), newDiffCommand(o), newManifestCommand(o), newRestoreCommand(o), newPlanCommand(o), newActivityCommand(o), newExportCommand(o), newUICommand(o))
	root.AddGroup(&cobra.Group{ID: "incident", Title: "Incident commands:"})
	for _, c := range root.Commands() {
		c.GroupID = "incident"
	}
	return root
}

// record returns the typed client of the record API, as the caller, once
// discovery has shown the API is served (a user without its RBAC would
// otherwise read a missing API as a refusal).
func (o *options) record() (recordv1.RecordV1alpha1Interface, error) {
	if o.recordServer != "" {
		return o.recordDirect()
	}
	if !o.installed {
		if err := o.checkInstalled(); err != nil {
			return nil, err
		}
		o.installed = true
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cs.RecordV1alpha1(), nil
}

// recordDirect is the typed client of the record served directly, with a
// bearer token.
func (o *options) recordDirect() (recordv1.RecordV1alpha1Interface, error) {
	if o.impersonating() {
		// The direct door serves the token's owner only: sent without the
		// kube-apiserver, --as would be dropped and a restore would run
		// with the owner's rights instead.
		return nil, usageError{errors.New("--as, --as-group and --as-uid go through the kube-apiserver, which authorizes them: leave out --record-server")}
	}
	token := o.recordToken
	if token == "" {
		if cfg, err := o.config.ToRESTConfig(); err == nil {
			token = cfg.BearerToken
		}
	}
	if token == "" {
		return nil, usageError{errors.New("--record-server needs a bearer token: --record-token, or a kubeconfig user with a token")}
	}
	cs, err := versioned.NewForConfig(&rest.Config{Host: o.recordServer, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: o.recordCA}})
	if err != nil {
		return nil, err
	}
	return cs.RecordV1alpha1(), nil
}

// impersonating tells whether the command line asks to act as someone else.
func (o *options) impersonating() bool {
	c := o.config
	return c.Impersonate != nil && *c.Impersonate != "" ||
		c.ImpersonateUID != nil && *c.ImpersonateUID != "" ||
		c.ImpersonateGroup != nil && len(*c.ImpersonateGroup) > 0
}

// namespace returns the namespace of -n, or the kubeconfig context's.
func (o *options) namespace() (string, error) {
	if o.ns != "" {
		return o.ns, nil
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// codedError carries the exit code of an error the plugin explains.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
