package rulesync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
)

// baseliner LISTs the resources the rules cover and stores their objects as
// baseline versions, so the first recorded change of each has a prior
// state. It runs in the background, never blocks ingest, pages its LISTs
// and stops a pass at BaselineMaxObjects.
type baseliner struct {
	s    *Syncer
	done map[schema.GroupVersionResource]string // resource → fingerprint of the rules it was baselined under
}

func newBaseliner(s *Syncer) *baseliner {
	return &baseliner{s: s, done: map[schema.GroupVersionResource]string{}}
}

func (b *baseliner) run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	kick <- struct{}{}
	b.s.opts.Registry.OnChange(func(cluster string) {
		if cluster == b.s.opts.Cluster {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	})
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		b.pass(ctx)
	}
}

// pass baselines every listable resource some rule covers whose rules
// changed since it was last baselined.
func (b *baseliner) pass(ctx context.Context) {
	rules := b.s.opts.Registry.RulesFor(b.s.opts.Cluster)
	if rules.Len() == 0 {
		return
	}
	fp := strings.Join(rules.Names(), ",") + "|" + statusesFingerprint(b.s.opts.Registry.Statuses(b.s.opts.Cluster))
	lists, err := b.s.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		b.s.log.Warn("baseline: discovery failed", "err", err)
		return
	}
	budget := b.s.opts.BaselineMaxObjects
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if b.done[gvr] == fp || !rules.CoversResource(gvr.Group, gvr.Resource) {
				continue
			}
			n, err := b.list(ctx, rules, gvr, r.Namespaced, &budget)
			if err != nil {
				b.s.log.Warn("baseline: list failed", "resource", gvr.String(), "err", err)
				continue
			}
			b.done[gvr] = fp
			if n > 0 {
				b.s.log.Info("baseline stored", "resource", gvr.String(), "new_versions", n)
			}
			if budget <= 0 {
				b.s.log.Warn("baseline: object budget reached; the rest waits for the next pass")
				return
			}
		}
	}
}

func statusesFingerprint(sts []filter.RuleStatus) string {
	var b strings.Builder
	for _, s := range sts {
		fmt.Fprintf(&b, "%s/%s:%d:%t,", s.Namespace, s.Name, s.Generation, s.Ready)
	}
	return b.String()
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

func (b *baseliner) list(ctx context.Context, rules *filter.Rules, gvr schema.GroupVersionResource, namespaced bool, budget *int) (int, error) {
	res := b.s.dyn.Resource(gvr)
	opts := metav1.ListOptions{Limit: 500}
	stored := 0
	nsCache := map[string]*filter.Decision{}
	for {
		l, err := res.List(ctx, opts)
		if err != nil {
			return stored, err
		}
		var vs []store.Version
		now := time.Now()
		for i := range l.Items {
			it := &l.Items[i]
			ns := it.GetNamespace()
			if !namespaced && gvr.Resource == "namespaces" {
				ns = it.GetName()
			}
			d, ok := nsCache[ns]
			if !ok {
				if dec := rules.Covers(gvr.Group, gvr.Resource, ns); dec.Keep {
					d = &dec
				}
				nsCache[ns] = d
			}
			if d == nil {
				continue
			}
			raw, err := json.Marshal(it.Object)
			if err != nil {
				continue
			}
			v, err := auditsink.BaselineVersion(auditsink.BaselineObject{
				Cluster: b.s.opts.Cluster, APIGroup: gvr.Group, APIVersion: gvr.Version, Resource: gvr.Resource,
				Raw: raw, Rules: d.Rules, RecordSecretData: d.RecordSecretData, Digester: b.s.opts.Digester, ObservedAt: now,
			})
			if err != nil {
				continue
			}
			vs = append(vs, v)
		}
		*budget -= len(l.Items)
		n, err := b.s.opts.Store.WriteBaseline(ctx, vs)
		if err != nil {
			return stored, err
		}
		stored += n
		if l.GetContinue() == "" || *budget <= 0 {
			return stored, nil
		}
		opts.Continue = l.GetContinue()
	}
}
