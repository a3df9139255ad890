package admission

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/options-record/options-record/store/model"
)

// Store is what the queue needs of the record (store.Store).
type Store interface {
	WriteObservations(ctx context.Context, obs []model.Observation, maxPerSource int64) (model.ObservationResult, error)
	ConfirmObservations(ctx context.Context) (int, error)
	ExpireObservations(ctx context.Context, cutoff time.Time) (int64, error)
}

// DefaultTTL is how long an unconfirmed observation is kept by default:
// longer than a managed cluster's log service takes to deliver the audit
// event that confirms it (EKS: CloudWatch Logs "within a few minutes", then
// Firehose's buffer; AKS: minutes), which is where observations matter most.
const DefaultTTL = 30 * time.Minute

// ConfirmEvery is how often the queue confirms what two transactions
// stored at once (an audit event and its observation), at most.
const ConfirmEvery = 30 * time.Second

// QueueOptions configure a Queue.
type QueueOptions struct {
	Store Store
	// MaxItems and MaxBytes bound the observations held in memory
	// (defaults 4096 and 32 MiB); beyond, new ones are dropped and counted.
	MaxItems int
	MaxBytes int64
	// MaxBatch is the most observations written in one transaction
	// (default 256).
	MaxBatch int
	// MaxSourceBytes bounds the unconfirmed bytes stored per source
	// (default 64 MiB).
	MaxSourceBytes int64
	// TTL is how long an unconfirmed observation is kept (DefaultTTL);
	// the maintenance pass (every TTL/5) expires what is older. What two
	// transactions stored at once is confirmed every min(TTL/5,
	// ConfirmEvery).
	TTL time.Duration
	// WriteTimeout bounds one write (default 10 s).
	WriteTimeout time.Duration
	Metrics      *Metrics
	Logger       *slog.Logger
}

// Queue holds observations in memory until its writer stores them.
type Queue struct {
	o     QueueOptions
	ch    chan model.Observation
	bytes atomic.Int64
	// written is signalled after each write (tests wait on it).
	written chan struct{}
	// newTicker makes the maintenance passes' tickers (time.NewTicker;
	// tests drive the passes themselves).
	newTicker func(time.Duration) (<-chan time.Time, func())
}

// NewQueue returns a Queue; Run writes it.
func NewQueue(o QueueOptions) *Queue {
	if o.MaxItems <= 0 {
		o.MaxItems = 4096
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 32 << 20
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.MaxSourceBytes <= 0 {
		o.MaxSourceBytes = 64 << 20
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{o: o, ch: make(chan model.Observation, o.MaxItems), written: make(chan struct{}, 1), newTicker: newTicker}
}

func newTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// offer queues o unless the queue is full; it never waits.
func (q *Queue) offer(o model.Observation) bool {
	n := int64(o.Bytes())
	if q.bytes.Add(n) > q.o.MaxBytes {
		q.bytes.Add(-n)
		return false
	}
	select {
	case q.ch <- o:
		q.o.Metrics.queued.Add(float64(n))
		return true
	default:
		q.bytes.Add(-n)
		return false
	}
}

// Run writes the queued observations in batches and runs the confirmation
// and maintenance passes until ctx ends; what is still queued then is dropped (it is not
// part of the record until confirmed, and the apiserver's write went on).
func (q *Queue) Run(ctx context.Context) {
	tick, stop := q.newTicker(q.o.TTL / 5)
	defer stop()
	// A short TTL's pass confirms often enough by itself.
	var confirmTick <-chan time.Time
	if every := q.o.TTL / 5; every > ConfirmEvery {
		var stop func()
		confirmTick, stop = q.newTicker(ConfirmEvery)
		defer stop()
	}
	batch := make([]model.Observation, 0, q.o.MaxBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			q.maintain(ctx)
		case <-confirmTick:
			q.confirm(ctx)
		case o := <-q.ch:
			batch = append(batch[:0], o)
		more:
			for len(batch) < q.o.MaxBatch {
				select {
				case o := <-q.ch:
					batch = append(batch, o)
				default:
					break more
				}
			}
			q.write(ctx, batch)
			clear(batch)
		}
	}
}

func (q *Queue) write(ctx context.Context, batch []model.Observation) {
	var n int64
	for i := range batch {
		n += int64(batch[i].Bytes())
	}
	defer func() {
		q.bytes.Add(-n)
		q.o.Metrics.queued.Sub(float64(n))
		select {
		case q.written <- struct{}{}:
		default:
		}
	}()
	res, err := q.store(ctx, batch)
	switch {
	case err != nil && model.IsInvalidData(err) && len(batch) > 1:
		q.oneByOne(ctx, batch)
	case err != nil && model.IsInvalidData(err):
		q.reject(&batch[0], err)
	default:
		q.count(ctx, batch, res, err)
	}
}

// oneByOne stores a batch PostgreSQL refused as invalid data one
// observation at a time, so that one row the sanitiser did not make safe
// costs only itself (rejected_by_database), not every review queued with
// it.
func (q *Queue) oneByOne(ctx context.Context, batch []model.Observation) {
	for i := range batch {
		one := batch[i : i+1]
		res, err := q.store(ctx, one)
		if err != nil && model.IsInvalidData(err) {
			q.reject(&one[0], err)
			continue
		}
		q.count(ctx, one, res, err)
	}
}

// reject drops and counts an observation PostgreSQL refused as invalid data.
func (q *Queue) reject(o *model.Observation, err error) {
	q.o.Metrics.dropped.WithLabelValues("rejected_by_database").Inc()
	q.o.Logger.Warn("admission observation refused by the database as invalid data: dropped",
		"resource", o.Resource, "namespace", o.Namespace, "name", o.Name, "err", err)
}

func (q *Queue) store(ctx context.Context, batch []model.Observation) (model.ObservationResult, error) {
	wctx, cancel := context.WithTimeout(ctx, q.o.WriteTimeout)
	defer cancel()
	return q.o.Store.WriteObservations(wctx, batch, q.o.MaxSourceBytes)
}

// count counts what one write stored or dropped.
func (q *Queue) count(ctx context.Context, batch []model.Observation, res model.ObservationResult, err error) {
	m := q.o.Metrics
	if err != nil {
		m.dropped.WithLabelValues("store_error").Add(float64(len(batch)))
		if ctx.Err() == nil {
			q.o.Logger.Warn("storing admission observations", "observations", len(batch), "err", err)
		}
		return
	}
	m.stored.Add(float64(res.Stored))
	m.dropped.WithLabelValues("source_bound").Add(float64(res.OverBound))
}

// confirm confirms what two transactions stored at once: an audit event
// and the observation it names, each committed before it saw the other.
func (q *Queue) confirm(ctx context.Context) {
	if _, err := q.o.Store.ConfirmObservations(ctx); err != nil && ctx.Err() == nil {
		q.o.Logger.Warn("confirming admission observations", "err", err)
	}
}

// maintain confirms what two transactions stored at once and expires the
// observations no audit event named within TTL.
func (q *Queue) maintain(ctx context.Context) {
	q.confirm(ctx)
	n, err := q.o.Store.ExpireObservations(ctx, time.Now().Add(-q.o.TTL))
	if err != nil {
		if ctx.Err() == nil {
			q.o.Logger.Warn("expiring admission observations", "err", err)
		}
		return
	}
	q.o.Metrics.expired.Add(float64(n))
}
