package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/options-record/options-record/store"
)

// errDatabasePending is what the record answers until the database has
// answered once since start-up; with a journal, batches are journaled.
var errDatabasePending = errors.New("the database has not answered since start-up")

// lateStore stands in for the store while the database has not answered
// since start-up, so a sink with a journal starts (and acknowledges from
// the journal) during a database outage.
type lateStore struct {
	p     atomic.Pointer[store.Store]
	ready chan struct{} // closed once the store is open
}

func (l *lateStore) set(st *store.Store) {
	l.p.Store(st)
	close(l.ready)
}

func (l *lateStore) get() *store.Store { return l.p.Load() }

// WriteBatch implements store.Writer.
func (l *lateStore) WriteBatch(ctx context.Context, b *store.Batch) (store.WriteResult, error) {
	if s := l.get(); s != nil {
		return s.WriteBatch(ctx, b)
	}
	return store.WriteResult{}, errDatabasePending
}

// AddRuleStats implements rulesync.Store.
func (l *lateStore) AddRuleStats(ctx context.Context, cluster string, stats map[string]store.RuleStat) error {
	if s := l.get(); s != nil {
		return s.AddRuleStats(ctx, cluster, stats)
	}
	return errDatabasePending
}

// RuleStats implements rulesync.Store.
func (l *lateStore) RuleStats(ctx context.Context, cluster string) (map[string]store.RuleStat, error) {
	if s := l.get(); s != nil {
		return s.RuleStats(ctx, cluster)
	}
	return nil, errDatabasePending
}

// WriteBaseline implements rulesync.Store.
func (l *lateStore) WriteBaseline(ctx context.Context, vs []store.Version) (int, error) {
	if s := l.get(); s != nil {
		return s.WriteBaseline(ctx, vs)
	}
	return 0, errDatabasePending
}

// openStore opens the store. When background is set (the sink has a
// journal), a database that does not answer is retried every few seconds
// in the background until ctx ends (the ready channel says when it is
// open); otherwise the failure is returned.
func openStore(ctx context.Context, o store.Options, background bool, log *slog.Logger) (*lateStore, error) {
	l := &lateStore{ready: make(chan struct{})}
	first, cancel := context.WithTimeout(ctx, 15*time.Second)
	st, err := store.Open(first, o)
	cancel()
	if err == nil {
		l.set(st)
		return l, nil
	}
	if !background || ctx.Err() != nil {
		return nil, err
	}
	log.Warn("the database does not answer: acknowledging from the journal until it does", "err", err)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(3 * time.Second):
			}
			attempt, cancel := context.WithTimeout(ctx, 15*time.Second)
			st, err := store.Open(attempt, o)
			cancel()
			if err != nil {
				log.Debug("the database still does not answer", "err", err)
				continue
			}
			if ctx.Err() != nil {
				st.Close()
				return
			}
			log.Info("the database answers: the record is open")
			l.set(st)
			return
		}
	}()
	return l, nil
}

// lateStops are the stop functions of what started with the store, run in
// reverse order at shutdown.
type lateStops struct {
	mu      sync.Mutex
	stops   []func(context.Context) error
	stopped bool
}

// add registers f; after stop it runs f at once (what started too late
// stops again).
func (l *lateStops) add(f func(context.Context) error) {
	l.mu.Lock()
	if !l.stopped {
		l.stops = append(l.stops, f)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	_ = f(context.Background())
}

func (l *lateStops) stop(ctx context.Context, log *slog.Logger) {
	l.mu.Lock()
	stops := l.stops
	l.stops, l.stopped = nil, true
	l.mu.Unlock()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i](shutCtx); err != nil {
			log.Error("shutdown", "err", err)
		}
	}
}
