package app

import (
	"fmt"
	"log/slog"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
)

// RulesOptions say where the standalone rules come from.
type RulesOptions struct {
	// Files are YAML files of OptionsRecordController objects (--rules-file).
	Files []string
	// Namespace is the sink's own namespace: CRs there may select any
	// namespace, CRs elsewhere only their own.
	Namespace string
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
	_, statuses := filter.Compile(objs, filter.Options{SinkNamespace: o.Namespace})
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
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: o.Namespace})
	if rules.Len() == 0 {
		log.Warn("no rule selects anything: every event will be dropped (give --rules-file)")
	}
	return rules, nil
}
