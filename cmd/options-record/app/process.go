package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// process is what the components of `serve` share: each component's start
// sets what the later ones use (the database's URL, the store, the
// journal's writer, the servers' addresses).
type process struct {
	o        ServeOptions
	log      *slog.Logger
	lc       *lifecycle
	reg      *prometheus.Registry
	digester *model.SecretDigester

	db       *database
	st       *store.Store
	prepared chan struct{} // closed once st is prepared
	// prepareBackoff spaces keepPreparing's attempts; after is its timer
	// (time.After; a test records the delays instead of waiting them).
	prepareBackoff wait.Backoff
	after          func(time.Duration) <-chan time.Time
	// journalReady is the journal's readiness; nil without a journal.
	journalReady func() error
	metricsSrv   *httpServer
}

func newProcess(o ServeOptions, digester *model.SecretDigester, log *slog.Logger) *process {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p := &process{o: o, log: log, lc: newLifecycle(log), reg: reg, digester: digester, prepared: make(chan struct{}),
		prepareBackoff: prepareBackoff, after: time.After}
	p.metricsSrv = metricsServer(reg, p.ready, log)
	return p
}

// ready says whether this process can do its work. Not before every
// component has started (the metrics server starts before the webhook and
// the API listen). With a journal the sink takes batches while the
// database is down: only a journal over its high-water mark, or full,
// makes it unready. Otherwise the database must answer.
func (p *process) ready(ctx context.Context) error {
	select {
	case <-p.lc.started:
	default:
		return errors.New("starting")
	}
	if p.journalReady != nil {
		return p.journalReady()
	}
	if err := p.st.Ping(ctx); err != nil {
		return fmt.Errorf("database unavailable: %w", err)
	}
	return nil
}

// openDatabase is the database component: the configured URL, or the
// embedded PostgreSQL it starts (and stops).
func (p *process) openDatabase(ctx context.Context) (func(context.Context) error, error) {
	db, err := openDatabase(ctx, p.o.Database, false, p.log)
	if err != nil {
		return nil, err
	}
	p.db = db
	return db.Close, nil
}

// openStore is the store component: it makes the store and tries once to
// prepare it (migrations, partitions). With journaled set (the sink has a
// journal), a database that does not answer is not fatal: the store
// answers the retryable store.ErrNotPrepared, the journal keeps the
// batches, and keepPreparing tries again.
func (p *process) openStore(so store.Options, journaled bool) component {
	return component{"store", func(ctx context.Context) (func(context.Context) error, error) {
		so.URL = p.db.URL
		st, err := store.Connect(so)
		if err != nil {
			return nil, err
		}
		switch err := prepareStore(ctx, st); {
		case err == nil:
			close(p.prepared)
		case !journaled || ctx.Err() != nil:
			st.Close()
			return nil, err
		default:
			p.log.Warn("the database does not answer: acknowledging from the journal until it does", "err", err)
		}
		p.st = st
		return func(context.Context) error { st.Close(); return nil }, nil
	}}
}

// prepareBackoff spaces the attempts to reach a database that did not
// answer at start-up: 1 s, doubling up to 15 s, each delay up to half again
// longer at random, so replicas started together (a rollout, a node back)
// do not all knock at the same instant.
var prepareBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 15 * time.Second}

// keepPreparing tries to prepare the store, backing off with jitter
// (prepareBackoff), until it is prepared or ctx ends.
func (p *process) keepPreparing(ctx context.Context) {
	bo := p.prepareBackoff
	for {
		select {
		case <-p.prepared:
			return
		default:
		}
		select {
		case <-ctx.Done():
			return
		case <-p.after(bo.Step()):
		}
		if err := prepareStore(ctx, p.st); err != nil {
			p.log.Debug("the database still does not answer", "err", err)
			continue
		}
		p.log.Info("the database answers: the record is open")
		close(p.prepared)
	}
}

// prepareStore is one attempt at preparing st: 15 s at most to reach the
// database, then as long as the migrations take (building an index of a
// large record can take minutes; cut short, it would start over on every
// attempt and never finish). Stopping the process still stops it.
func prepareStore(ctx context.Context, st *store.Store) error {
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err := st.Ping(pctx)
	cancel()
	if err != nil {
		return err
	}
	return st.Prepare(ctx)
}

// startAPI is the restore API component.
func (p *process) startAPI(ctx context.Context) (func(context.Context) error, error) {
	return runAPI(ctx, p.o.API, &p.o, p.db, p.digester, p.log)
}
