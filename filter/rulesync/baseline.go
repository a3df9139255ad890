package rulesync

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store/model"
)

// baseliner LISTs the resources the rules cover and stores their objects as
// baseline versions, so the first recorded change of each has a prior
// state. It runs in the background, never blocks ingest, pages its LISTs
// and stops a pass at BaselineMaxObjects. What a pass leaves (the budget
// ran out, a LIST or a write failed) is taken up by another pass after
// BaselineRetry, where it stopped.
//
// A change of the rules LISTs only the resources whose coverage
// (filter.Rules.Coverage) it widened — not every covered resource — and a
// resource is LISTed from the start at most once per BaselineMinInterval,
// however often the rules change: a burst of changes costs one LIST per
// resource and interval.
type baseliner struct {
	s   *Syncer
	now func() time.Time
	// done holds, by resource, the coverage it was last baselined under
	// (or that covered nothing more): rules whose coverage is in it need
	// no new LIST.
	done map[schema.GroupVersionResource]coverage
	// resume holds where a pass's budget cut a resource off, under which
	// coverage: a pass under another starts that resource over.
	resume map[schema.GroupVersionResource]resumeAt
	// started is when a LIST of the resource last started from the
	// beginning.
	started map[schema.GroupVersionResource]time.Time
}

type resumeAt struct{ fp, cont string }

// coverage is a set of filter.Rules.Coverage entries.
type coverage map[string]bool

func newCoverage(entries []string) coverage {
	c := make(coverage, len(entries))
	for _, e := range entries {
		c[e] = true
	}
	return c
}

// includes reports whether every entry of o is in c: o covers nothing c did not.
func (c coverage) includes(o coverage) bool {
	if c == nil {
		return false
	}
	for e := range o {
		if !c[e] {
			return false
		}
	}
	return true
}

func newBaseliner(s *Syncer) *baseliner {
	return &baseliner{s: s, now: time.Now, done: map[schema.GroupVersionResource]coverage{},
		resume: map[schema.GroupVersionResource]resumeAt{}, started: map[schema.GroupVersionResource]time.Time{}}
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
	// Back off while passes keep failing: BaselineRetry doubling up to 5
	// minutes, with jitter; anything but a failure starts it again.
	fresh := wait.Backoff{Duration: b.s.opts.BaselineRetry, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32,
		Cap: max(5*time.Minute, b.s.opts.BaselineRetry)}
	bo := fresh
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			bo = fresh
		case <-retry:
		}
		retry = nil
		switch res := b.pass(ctx); {
		case res.failed:
			retry = time.After(bo.Step())
		case res.unfinished: // the budget ran out: go on at the pace it sets
			retry = time.After(b.s.opts.BaselineRetry)
			bo = fresh
		case res.deferred > 0: // a resource waits for its next LIST
			retry = time.After(res.deferred)
			bo = fresh
		default:
			bo = fresh
		}
	}
}

// passResult says what a pass left.
type passResult struct {
	// unfinished: the budget ran out or something failed (then failed).
	unfinished, failed bool
	// deferred > 0: a resource whose coverage widened was LISTed less
	// than BaselineMinInterval ago; its LIST may start in deferred.
	deferred time.Duration
}

// pass baselines every listable resource some rule covers whose coverage
// widened since it was last baselined.
func (b *baseliner) pass(ctx context.Context) (res passResult) {
	rules := b.s.opts.Registry.RulesFor(b.s.opts.Cluster)
	if rules.Len() == 0 {
		return res
	}
	lists, err := b.s.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		b.s.log.Warn("baseline: discovery failed", "err", err)
		return passResult{unfinished: true, failed: true}
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
			entries := rules.Coverage(gvr.Group, gvr.Resource)
			if len(entries) == 0 {
				// Covered by no rule: a rule covering it later lists it.
				delete(b.done, gvr)
				delete(b.resume, gvr)
				continue
			}
			cov := newCoverage(entries)
			if b.done[gvr].includes(cov) {
				b.done[gvr] = cov // the same, or narrower: nothing new to store
				continue
			}
			if budget <= 0 {
				b.s.log.Info("baseline: object budget of this pass reached; the next pass goes on", "next_in", b.s.opts.BaselineRetry)
				res.unfinished = true
				return res
			}
			fp := strings.Join(entries, "\n")
			from := ""
			if at, ok := b.resume[gvr]; ok && at.fp == fp {
				from = at.cont
			} else {
				now := b.now()
				if last, ok := b.started[gvr]; ok && now.Sub(last) < b.s.opts.BaselineMinInterval {
					wait := b.s.opts.BaselineMinInterval - now.Sub(last)
					if res.deferred == 0 || wait < res.deferred {
						res.deferred = wait
					}
					b.s.log.Debug("baseline: listed recently; the next LIST waits", "resource", gvr.String(), "in", wait)
					continue
				}
				b.started[gvr] = now
			}
			n, cont, err := b.list(ctx, rules, gvr, r.Namespaced, &budget, from)
			if n > 0 {
				b.s.log.Info("baseline stored", "resource", gvr.String(), "new_versions", n)
			}
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
				// The sink may not list it (see deploy/ for the aggregated
				// baseline role): asking again will not change that. A
				// change of its coverage asks again.
				b.s.log.Warn("baseline: cannot list; skipped until its coverage changes", "resource", gvr.String(), "err", err)
				delete(b.resume, gvr)
				b.done[gvr] = cov
			case err != nil:
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					delete(b.resume, gvr) // the continue token expired: start over
				}
				b.s.log.Warn("baseline: list failed; retrying in a later pass", "resource", gvr.String(), "err", err)
				res.unfinished, res.failed = true, true
			case cont != "":
				b.resume[gvr] = resumeAt{fp: fp, cont: cont}
				res.unfinished = true
			default:
				delete(b.resume, gvr)
				b.done[gvr] = cov
			}
		}
	}
	return res
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
		var vs []model.Version
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
			v, err := model.BaselineVersion(model.BaselineObject{
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
