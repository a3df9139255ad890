package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/options-record/options-record/store"
)

// openStore makes the store and prepares it (migrations, partitions).
// When background is set (the sink has a journal), a database that does
// not answer is tried again every few seconds in the background until ctx
// ends, and the store, meanwhile, answers the retryable
// store.ErrNotPrepared (the journal keeps the batches); otherwise the
// failure is returned. prepared is closed once Prepare has succeeded.
func openStore(ctx context.Context, o store.Options, background bool, log *slog.Logger) (st *store.Store, prepared <-chan struct{}, err error) {
	st, err = store.Connect(o)
	if err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	if err = prepareStore(ctx, st); err == nil {
		close(done)
		return st, done, nil
	}
	if !background || ctx.Err() != nil {
		st.Close()
		return nil, nil, err
	}
	log.Warn("the database does not answer: acknowledging from the journal until it does", "err", err)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(3 * time.Second):
			}
			if err := prepareStore(ctx, st); err != nil {
				log.Debug("the database still does not answer", "err", err)
				continue
			}
			log.Info("the database answers: the record is open")
			close(done)
			return
		}
	}()
	return st, done, nil
}

// prepareStore is one attempt at preparing st, for 15 s at most.
func prepareStore(ctx context.Context, st *store.Store) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return st.Prepare(ctx)
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
