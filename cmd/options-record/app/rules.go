package app

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/filter/rulesync"
)

// RulesOptions say where the standalone rules come from, and what the
// operator lets rules do.
type RulesOptions struct {
	// Files are YAML files of OptionsRecordController objects (--rules-file).
	Files []string
	// Namespace is the sink's own namespace: on the home cluster (and
	// unless TrustedNamespaces says otherwise) CRs there may select any
	// namespace, CRs elsewhere only their own.
	Namespace string
	// TrustedNamespaces are "CLUSTER=NS[,NS...]" entries
	// (--trusted-rule-namespaces): on CLUSTER, exactly the CRs in these
	// namespaces may select any namespace ("CLUSTER=" trusts none). A
	// cluster not named trusts Namespace if it is the home cluster, no
	// namespace otherwise.
	TrustedNamespaces []string
	// TenantSecretData lets rules outside the trusted namespaces record
	// Secret values (--tenant-secret-data); otherwise theirs are digests.
	TenantSecretData bool
	// MaxRetention caps every rule's retention (--max-retention; 0:
	// filter.DefaultMaxRetention), TenantMaxRetention that of the rules
	// outside the trusted namespaces (--tenant-max-retention; 0:
	// filter.DefaultTenantMaxRetention).
	MaxRetention       time.Duration
	TenantMaxRetention time.Duration
	// notifyAllowed is the notification config's filter.Options.NotifyAllowed.
	notifyAllowed func(destination, ns string, trusted bool) bool
}

// compileOptions are the options rules compile with, trusting the sink's
// namespace (the home cluster's default).
func (o RulesOptions) compileOptions() (filter.Options, error) {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--max-retention", o.MaxRetention}, {"--tenant-max-retention", o.TenantMaxRetention}} {
		if d.v != 0 && d.v < v1alpha1.MinRetention {
			return filter.Options{}, fmt.Errorf("%s %s: must be at least %s", d.flag, d.v, v1alpha1.MinRetention)
		}
	}
	return filter.Options{SinkNamespace: o.Namespace, TenantSecretData: o.TenantSecretData,
		MaxRetention: o.MaxRetention, TenantMaxRetention: o.TenantMaxRetention, NotifyAllowed: o.notifyAllowed}, nil
}

// registryOptions are the options of the sink's rule registry, whose home
// cluster is home.
func (o RulesOptions) registryOptions(home string) (rulesync.RegistryOptions, error) {
	c, err := o.compileOptions()
	if err != nil {
		return rulesync.RegistryOptions{}, err
	}
	trusted, err := parseTrustedNamespaces(o.TrustedNamespaces)
	if err != nil {
		return rulesync.RegistryOptions{}, err
	}
	return rulesync.RegistryOptions{Compile: c, HomeCluster: home, TrustedNamespaces: trusted}, nil
}

// parseTrustedNamespaces parses "CLUSTER=NS[,NS...]" entries.
func parseTrustedNamespaces(entries []string) (map[string][]string, error) {
	out := make(map[string][]string, len(entries))
	for _, e := range entries {
		cluster, list, ok := strings.Cut(e, "=")
		cluster = strings.TrimSpace(cluster)
		if !ok || cluster == "" {
			return nil, fmt.Errorf("--trusted-rule-namespaces %q: want CLUSTER=NAMESPACE[,NAMESPACE...]", e)
		}
		if _, dup := out[cluster]; dup {
			return nil, fmt.Errorf("--trusted-rule-namespaces: cluster %q given twice", cluster)
		}
		nss := []string{}
		for _, ns := range strings.Split(list, ",") {
			if ns = strings.TrimSpace(ns); ns == "" {
				continue
			}
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, fmt.Errorf("--trusted-rule-namespaces %q: namespace %q: %s", e, ns, strings.Join(errs, "; "))
			}
			nss = append(nss, ns)
		}
		out[cluster] = nss
	}
	return out, nil
}

// loadRuleObjects reads the rules files.
func loadRuleObjects(o RulesOptions, log *slog.Logger) ([]v1alpha1.OptionsRecordController, error) {
	var objs []v1alpha1.OptionsRecordController
	for _, f := range o.Files {
		got, err := filter.LoadFile(f)
		if err != nil {
			return nil, fmt.Errorf("rules file %s: %w", f, err)
		}
		objs = append(objs, got...)
	}
	opts, err := o.compileOptions()
	if err != nil {
		return nil, err
	}
	_, statuses := filter.Compile(objs, opts)
	for _, s := range statuses {
		if !s.Ready {
			log.Warn("rule not applied", "namespace", s.Namespace, "name", s.Name, "reason", s.Reason, "message", s.Message)
		}
	}
	return objs, nil
}

// loadRules compiles the rules files.
func loadRules(o RulesOptions, log *slog.Logger) (*filter.Rules, error) {
	objs, err := loadRuleObjects(o, log)
	if err != nil {
		return nil, err
	}
	opts, err := o.compileOptions()
	if err != nil {
		return nil, err
	}
	rules, _ := filter.Compile(objs, opts)
	if rules.Len() == 0 {
		log.Warn("no rule selects anything: every event will be dropped (give --rules-file)")
	}
	return rules, nil
}
