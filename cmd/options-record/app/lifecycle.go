package app

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// A component is one part of a running command. start returns once the
// component is ready for the ones after it, with the function that stops
// it (nil: nothing to stop); the stop gets a context that bounds it.
type component struct {
	name  string
	start func(ctx context.Context) (stop func(context.Context) error, err error)
}

// stopTimeout bounds each component's stop: a server's graceful shutdown,
// an embedded PostgreSQL's stop.
const stopTimeout = 30 * time.Second

// lifecycle starts components in order and stops the started ones in
// reverse order, so that each stops before what it needs.
type lifecycle struct {
	log     *slog.Logger
	failed  chan error    // a component that ended on its own (a server)
	started chan struct{} // closed once run has started every component

	mu    sync.Mutex
	stops []namedStop
}

type namedStop struct {
	name string
	stop func(context.Context) error
}

func newLifecycle(log *slog.Logger) *lifecycle {
	return &lifecycle{log: log, failed: make(chan error, 1), started: make(chan struct{})}
}

// run starts cs in order, waits until ctx is done or a component fails,
// then stops the started ones. It returns the error that ended it early.
func (l *lifecycle) run(ctx context.Context, cs ...component) error {
	err := l.start(ctx, cs...)
	if err == nil {
		close(l.started)
		select {
		case <-ctx.Done():
		case err = <-l.failed:
		}
	}
	l.stop(ctx)
	return err
}

// start starts cs in order until one fails; the ones started before it
// are stopped by stop.
func (l *lifecycle) start(ctx context.Context, cs ...component) error {
	for _, c := range cs {
		stop, err := c.start(ctx)
		if err != nil {
			return err
		}
		if stop != nil {
			l.mu.Lock()
			l.stops = append(l.stops, namedStop{c.name, stop})
			l.mu.Unlock()
		}
	}
	return nil
}

// fail ends run early with err (the first failure counts).
func (l *lifecycle) fail(err error) {
	select {
	case l.failed <- err:
	default:
	}
}

// stop stops the started components in reverse order, each within
// stopTimeout even when ctx is cancelled already (the process is stopping),
// logging a failure.
func (l *lifecycle) stop(ctx context.Context) {
	l.mu.Lock()
	stops := l.stops
	l.stops = nil
	l.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		if err := stops[i].stop(stopCtx); err != nil {
			l.log.Error("stopping "+stops[i].name, "err", err)
		}
		cancel()
	}
}

// background is a component that runs fn until its stop cancels fn's
// context (or ctx ends), and waits for fn to return.
func background(name string, fn func(context.Context)) component {
	return component{name, func(ctx context.Context) (func(context.Context) error, error) {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); fn(ctx) }()
		return func(context.Context) error { cancel(); <-done; return nil }, nil
	}}
}

// once is a component that starts cs when ready is closed: at once if it
// is, else in the background (a failure is then logged, not returned). Its
// stop stops what started, in reverse order.
func once(name string, ready <-chan struct{}, log *slog.Logger, cs ...component) component {
	return component{name, func(ctx context.Context) (func(context.Context) error, error) {
		late := newLifecycle(log)
		select {
		case <-ready:
			if err := late.start(ctx, cs...); err != nil {
				late.stop(ctx)
				return nil, err
			}
			return func(ctx context.Context) error { late.stop(ctx); return nil }, nil
		default:
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			select {
			case <-ctx.Done():
			case <-ready:
				if err := late.start(ctx, cs...); err != nil {
					log.Error("starting "+name, "err", err)
				}
			}
		}()
		return func(ctx context.Context) error { cancel(); <-done; late.stop(ctx); return nil }, nil
	}}
}
