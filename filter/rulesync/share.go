package rulesync

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/options-record/options-record/store"
)

// SharedRules is where the sink's replicas share the rule objects they
// observe (package store: the table rule_objects and LISTEN/NOTIFY).
type SharedRules interface {
	ShareRuleObjects(ctx context.Context, objs []store.RuleObject) error
	RuleObjects(ctx context.Context) ([]store.RuleObject, error)
	ListenRuleObjects(ctx context.Context, fn func()) error
}

// Sharer keeps the replicas' registries in step. The apiserver posts each
// batch to one replica, so only that one sees a rule's audit event: the
// Sharer writes what its registry observed to the database, and applies
// what the other replicas wrote as soon as they notify it (and every poll
// interval, for a notification lost with a connection). It also gives a
// starting sink the rules of the clusters it cannot LIST.
type Sharer struct {
	reg  *Registry
	log  *slog.Logger
	poll time.Duration

	mu      sync.Mutex
	pending map[[2]string]store.RuleObject // by (cluster, uid): the newest not yet written
	wake    chan struct{}

	loadedOnce sync.Once
	loaded     chan struct{} // closed once the shared rules were loaded
}

// NewSharer registers with reg at once, so that what reg observes before
// the database is reachable (a journaled start) is kept until Run writes it.
func NewSharer(reg *Registry, log *slog.Logger) *Sharer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sharer{reg: reg, log: log, poll: time.Minute, pending: map[[2]string]store.RuleObject{}, wake: make(chan struct{}, 1),
		loaded: make(chan struct{})}
	reg.OnObserved(s.enqueue)
	return s
}

func (s *Sharer) enqueue(objs []store.RuleObject) {
	s.mu.Lock()
	for _, o := range objs {
		k := [2]string{o.Cluster, o.UID}
		if p, ok := s.pending[k]; ok && (p.Deleted || !o.Deleted && p.ResourceVersion >= o.ResourceVersion) {
			continue
		}
		s.pending[k] = o
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Load applies the rules the replicas shared in st.
func (s *Sharer) Load(ctx context.Context, st SharedRules) error {
	objs, err := st.RuleObjects(ctx)
	if err != nil {
		return err
	}
	s.reg.ApplyShared(objs)
	s.loadedOnce.Do(func() { close(s.loaded) })
	return nil
}

// Loaded is closed once the shared rules were loaded: until then the
// registry may not know every cluster's rules (retention waits for it).
func (s *Sharer) Loaded() <-chan struct{} { return s.loaded }

// Run shares through st until ctx ends.
func (s *Sharer) Run(ctx context.Context, st SharedRules) {
	load := func() {
		if err := s.Load(ctx, st); err != nil && ctx.Err() == nil {
			s.log.Warn("loading the rules other replicas shared", "err", err)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = st.ListenRuleObjects(ctx, load) })
	wg.Go(func() {
		t := time.NewTicker(s.poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				load()
			}
		}
	})
	bo := retryBackoff
	for {
		if err := s.flush(ctx, st); err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff := bo.Step()
			s.log.Warn("sharing observed rule changes with the other replicas; retrying", "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		bo = retryBackoff
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
	}
}

// flush writes the pending objects; on failure they stay pending (unless a
// newer copy arrived meanwhile).
func (s *Sharer) flush(ctx context.Context, st SharedRules) error {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return nil
	}
	objs := make([]store.RuleObject, 0, len(s.pending))
	for _, o := range s.pending {
		objs = append(objs, o)
	}
	clear(s.pending)
	s.mu.Unlock()
	if err := st.ShareRuleObjects(ctx, objs); err != nil {
		s.enqueue(objs)
		return err
	}
	return nil
}
