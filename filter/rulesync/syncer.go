package rulesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// Store is what the syncer needs of the record.
type Store interface {
	AddRuleStats(ctx context.Context, cluster string, stats map[string]store.RuleStat) error
	RuleStats(ctx context.Context, cluster string) (map[string]store.RuleStat, error)
	WriteBaseline(ctx context.Context, vs []model.Version) (int, error)
}

// Options configure a Syncer.
type Options struct {
	// Config reaches the cluster the sink runs in (its own identity).
	Config *rest.Config
	// Cluster is the name this cluster's events are recorded under.
	Cluster string
	// Namespace is the sink's own namespace (its status Lease lives there).
	Namespace string
	// Identity names this replica in the Lease (default: hostname).
	Identity string
	// Resync is the period of the safety-net LIST (default 10 min).
	Resync time.Duration
	// StatusInterval is how often status is written at most (default 15 s).
	StatusInterval time.Duration
	// Baseline enables the baseline LISTs of newly covered resources.
	Baseline bool
	// BaselineMaxObjects bounds one baseline pass (default 100,000).
	BaselineMaxObjects int
	// BaselineRetry is the pause before a pass that goes on with what the
	// previous one left (budget spent, a LIST or a write failed); default 10 s.
	BaselineRetry time.Duration
	// BaselineMinInterval is the shortest time between two LISTs of one
	// resource from the start, however often its coverage changes (default
	// 1 min).
	BaselineMinInterval time.Duration
	// WebhookConfigName, when set, is the ValidatingWebhookConfiguration
	// of the observing webhook the status-writing replica keeps selecting
	// what the rules select (see syncWebhookConfig).
	WebhookConfigName string
	Registry          *Registry
	Store             Store
	// Digester digests the Secret values of baselines; without one a
	// Secret is not baselined (model.ErrNoDigester).
	Digester *model.SecretDigester
	Logger   *slog.Logger
}

// Syncer keeps a Registry current from the cluster and writes statuses.
type Syncer struct {
	opts    Options
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	log     *slog.Logger
	self    atomic.Pointer[string] // the sink's user name, once known
	started atomic.Bool            // the first LIST is done
	stats   *ruleCounter
	wakeup  chan struct{}
	mu      sync.Mutex
	written map[string]string // ns/name → fingerprint of the last status written
	base    *baseliner
	// webhookSyncs and webhookUpdates count the syncs of the webhook
	// configuration and the updates they wrote.
	webhookSyncs, webhookUpdates atomic.Int64
}

// New builds a Syncer; Run starts it.
func New(o Options) (*Syncer, error) {
	if o.Config == nil || o.Registry == nil || o.Store == nil {
		return nil, errors.New("rulesync: needs a config, a registry and a store")
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = 15 * time.Second
	}
	if o.BaselineMaxObjects <= 0 {
		o.BaselineMaxObjects = 100000
	}
	if o.BaselineRetry <= 0 {
		o.BaselineRetry = 10 * time.Second
	}
	if o.BaselineMinInterval <= 0 {
		o.BaselineMinInterval = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg := rest.CopyConfig(o.Config)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "options-record"
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("rulesync: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("rulesync: %w", err)
	}
	s := &Syncer{opts: o, dyn: dyn, kube: kube, log: o.Logger,
		stats: newRuleCounter(), wakeup: make(chan struct{}, 1), written: map[string]string{}}
	s.base = newBaseliner(s)
	o.Registry.OnChange(func(cluster string) {
		if cluster == o.Cluster {
			select {
			case s.wakeup <- struct{}{}:
			default:
			}
		}
	})
	return s, nil
}

// retryBackoff spaces the retries of the first LIST and of sharing the
// observed rules: 1 s doubling to 30 s, each up to half again longer at
// random, so replicas that failed together do not retry together.
var retryBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 30 * time.Second}

// startTimeout bounds Start's attempt; Run keeps trying after it.
const startTimeout = 15 * time.Second

// Start learns the sink's own identity and does the first LIST, so the
// webhook starts with the cluster's rules. When the cluster cannot answer
// yet (the CRD not installed, RBAC not bound, the apiserver starting), it
// says so and returns: the webhook starts with the static and shared rules,
// the apiserver's batches are taken, and Run keeps trying until the LIST
// succeeds. Exiting instead would lose the batches the apiserver sends
// meanwhile. The error it returns is ctx's only.
func (s *Syncer) Start(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := s.first(actx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("cannot read the cluster's OptionsRecordControllers yet: the webhook starts with the static and shared rules, and the sink keeps trying",
			"cluster", s.opts.Cluster, "err", err)
	}
	return nil
}

// first learns the sink's identity, then does the first LIST.
func (s *Syncer) first(ctx context.Context) error {
	if s.self.Load() == nil {
		ssr, err := s.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("rulesync: who am I (SelfSubjectReview): %w", err)
		}
		name := ssr.Status.UserInfo.Username
		s.self.Store(&name)
		s.log.Info("sink identity in the cluster", "user", name, "cluster", s.opts.Cluster)
	}
	if err := s.list(ctx); err != nil {
		return err
	}
	if !s.started.Swap(true) {
		s.log.Info("rules read from the cluster", "cluster", s.opts.Cluster)
	}
	return nil
}

// Started reports whether the cluster's OptionsRecordControllers were read.
func (s *Syncer) Started() bool { return s.started.Load() }

// IsSelf reports whether an event of this cluster was caused by the sink's
// own request (not impersonating anyone): those are never recorded.
func (s *Syncer) IsSelf(cluster string, ev *auditv1.Event) bool {
	self := s.self.Load()
	return cluster == s.opts.Cluster && self != nil && *self != "" && ev.User.Username == *self && ev.ImpersonatedUser == nil
}

// OnStored counts the kept events of a stored batch per rule.
func (s *Syncer) OnStored(cluster string, events []model.Event) {
	s.stats.add(cluster, events)
}

// list does the level-based LIST of OptionsRecordControllers.
func (s *Syncer) list(ctx context.Context) error {
	l, err := s.dyn.Resource(v1alpha1.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("rulesync: list %s: %w", v1alpha1.Resource, err)
	}
	objs := make([]v1alpha1.OptionsRecordController, 0, len(l.Items))
	for i := range l.Items {
		var o v1alpha1.OptionsRecordController
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[i].Object, &o); err != nil {
			s.log.Warn("skipping undecodable OptionsRecordController", "namespace", l.Items[i].GetNamespace(), "name", l.Items[i].GetName(), "err", err)
			continue
		}
		objs = append(objs, o)
	}
	rv, _ := strconv.ParseInt(l.GetResourceVersion(), 10, 64)
	s.opts.Registry.Replace(s.opts.Cluster, objs, rv)
	s.log.Debug("listed OptionsRecordControllers", "count", len(objs), "resource_version", rv)
	return nil
}

// Run resyncs, flushes rule statistics, writes statuses while leading, and
// runs baselines, until ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.resyncLoop(ctx) }()
	go func() { defer wg.Done(); s.statsLoop(ctx) }()
	go func() { defer wg.Done(); s.leadStatus(ctx) }()
	if s.opts.Baseline {
		wg.Add(1)
		go func() { defer wg.Done(); s.base.run(ctx) }()
	}
	wg.Wait()
}

func (s *Syncer) resyncLoop(ctx context.Context) {
	// Until the first LIST succeeds, try again soon, backing off.
	bo := retryBackoff
	for next := bo.Step(); !s.started.Load(); {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		if err := s.first(ctx); err != nil {
			next = bo.Step()
			s.log.Warn("cannot read the cluster's OptionsRecordControllers yet; retrying", "cluster", s.opts.Cluster, "in", next.String(), "err", err)
		}
	}
	t := time.NewTicker(s.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.list(ctx); err != nil {
				s.log.Error("resync", "err", err)
			}
		}
	}
}

func (s *Syncer) statsLoop(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flushStats(context.WithoutCancel(ctx))
			return
		case <-t.C:
			s.flushStats(ctx)
		}
	}
}

func (s *Syncer) flushStats(ctx context.Context) {
	for cluster, m := range s.stats.take() {
		if err := s.opts.Store.AddRuleStats(ctx, cluster, m); err != nil {
			s.log.Warn("rule statistics not saved", "err", err)
			s.stats.putBack(cluster, m)
		}
	}
}

// ruleCounter counts kept events per cluster and rule between flushes.
type ruleCounter struct {
	mu sync.Mutex
	m  map[string]map[string]store.RuleStat
}

func newRuleCounter() *ruleCounter { return &ruleCounter{m: map[string]map[string]store.RuleStat{}} }

func (c *ruleCounter) add(cluster string, events []model.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.m[cluster]
	if m == nil {
		m = map[string]store.RuleStat{}
		c.m[cluster] = m
	}
	for i := range events {
		for _, r := range events[i].Rules {
			st := m[r]
			st.Events++
			if events[i].StageAt.After(st.Last) {
				st.Last = events[i].StageAt
			}
			m[r] = st
		}
	}
}

func (c *ruleCounter) take() map[string]map[string]store.RuleStat {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.m
	c.m = map[string]map[string]store.RuleStat{}
	return out
}

func (c *ruleCounter) putBack(cluster string, m map[string]store.RuleStat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.m[cluster]
	if cur == nil {
		cur = map[string]store.RuleStat{}
		c.m[cluster] = cur
	}
	for r, st := range m {
		x := cur[r]
		x.Events += st.Events
		if st.Last.After(x.Last) {
			x.Last = st.Last
		}
		cur[r] = x
	}
}
