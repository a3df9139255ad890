package rulesync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
)

// baseliner LISTs the resources the rules cover and stores their objects as
// baseline versions, so the first recorded change of each has a prior
// state. It runs in the background, never blocks ingest, pages its LISTs
// and stops a pass at BaselineMaxObjects. What a pass leaves (the budget
// ran out, a LIST or a write failed) is taken up by another pass after
// BaselineRetry, where it stopped.
type baseliner struct {
	s    *Syncer
	done map[schema.GroupVersionResource]string // resource → fingerprint of the rules it was baselined under
	// resume holds where a pass's budget cut a resource off, under which
	// rules: a pass under other rules starts that resource over.
	resume map[schema.GroupVersionResource]resumeAt
}

type resumeAt struct{ fp, cont string }

func newBaseliner(s *Syncer) *baseliner {
	return &baseliner{s: s, done: map[schema.GroupVersionResource]string{}, resume: map[schema.GroupVersionResource]resumeAt{}}
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
	var retry <-chan time.Time
	wait := b.s.opts.BaselineRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			wait = b.s.opts.BaselineRetry
		case <-retry:
		}
		retry = nil
		switch more, failed := b.pass(ctx); {
		case failed:
			// Back off while passes keep failing (up to 5 minutes).
			retry = time.After(wait)
			wait = min(2*wait, max(5*time.Minute, b.s.opts.BaselineRetry))
		case more: // the budget ran out: go on at the pace it sets
			retry = time.After(b.s.opts.BaselineRetry)
			wait = b.s.opts.BaselineRetry
		default:
			wait = b.s.opts.BaselineRetry
		}
	}
}

// pass baselines every listable resource some rule covers whose rules
// changed since it was last baselined. It reports whether work is left,
// and whether because something failed.
func (b *baseliner) pass(ctx context.Context) (unfinished, failed bool) {
	rules := b.s.opts.Registry.RulesFor(b.s.opts.Cluster)
	if rules.Len() == 0 {
		return false, false
	}
	fp := strings.Join(rules.Names(), ",") + "|" + statusesFingerprint(b.s.opts.Registry.Statuses(b.s.opts.Cluster))
	lists, err := b.s.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		b.s.log.Warn("baseline: discovery failed", "err", err)
		return true, true
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
			if budget <= 0 {
				b.s.log.Info("baseline: object budget of this pass reached; the next pass goes on", "next_in", b.s.opts.BaselineRetry)
				return true, failed
			}
			from := ""
			if at, ok := b.resume[gvr]; ok && at.fp == fp {
				from = at.cont
			}
			n, cont, err := b.list(ctx, rules, gvr, r.Namespaced, &budget, from)
			if n > 0 {
				b.s.log.Info("baseline stored", "resource", gvr.String(), "new_versions", n)
			}
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
				// The sink may not list it (see deploy/ for the aggregated
				// baseline role): asking again will not change that. The
				// next change of the rules asks again.
				b.s.log.Warn("baseline: cannot list; skipped until the rules change", "resource", gvr.String(), "err", err)
				delete(b.resume, gvr)
				b.done[gvr] = fp
			case err != nil:
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					delete(b.resume, gvr) // the continue token expired: start over
				}
				b.s.log.Warn("baseline: list failed; retrying in a later pass", "resource", gvr.String(), "err", err)
				unfinished, failed = true, true
			case cont != "":
				b.resume[gvr] = resumeAt{fp: fp, cont: cont}
				unfinished = true
			default:
				delete(b.resume, gvr)
				b.done[gvr] = fp
			}
		}
	}
	return unfinished, failed
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

// list stores the covered objects of one resource, from the continue token
// cont on, in pages, until the list ends (it returns "") or the budget is
// spent (it returns where to go on).
func (b *baseliner) list(ctx context.Context, rules *filter.Rules, gvr schema.GroupVersionResource, namespaced bool, budget *int, cont string) (int, string, error) {
	res := b.s.dyn.Resource(gvr)
	opts := metav1.ListOptions{Limit: int64(min(500, max(*budget, 1))), Continue: cont}
	stored := 0
	nsCache := map[string]*filter.Decision{}
	for {
		l, err := res.List(ctx, opts)
		if err != nil {
			return stored, "", err
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
			return stored, "", err
		}
		stored += n
		if l.GetContinue() == "" || *budget <= 0 {
			return stored, l.GetContinue(), nil
		}
		opts.Continue = l.GetContinue()
		opts.Limit = int64(min(500, *budget))
	}
}
