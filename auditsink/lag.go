package auditsink

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/model"
)

// SourceLag makes visible how far behind a log service's delivery is, per
// source (webhook, firehose, pubsub, eventhubs) and cluster: the age of the newest event
// stored (options_record_source_newest_event_age_seconds, computed when
// scraped, so it grows while nothing arrives) and the delay of each event
// from its stage timestamp to its storing
// (options_record_source_delivery_delay_seconds). EKS's audit log reaches
// CloudWatch Logs "within a few minutes, best effort", and GKE's and AKS's
// log exports are as loose: a change younger than the newest event's age
// may not be recorded yet.
//
// With Persist, it also keeps the newest event's time in the record
// (source_progress), for the APIs to tell their callers.
type SourceLag struct {
	mu     sync.Mutex
	newest map[[2]string]time.Time
	delay  *prometheus.HistogramVec
	age    *prometheus.Desc
	now    func() time.Time

	progress ProgressWriter
	written  map[[2]string]time.Time // when each key was last written
	writes   sync.WaitGroup          // the writes under way
	log      *slog.Logger
}

// ProgressWriter keeps how far each source has delivered for a cluster
// (the store's source_progress), never moving a time back.
type ProgressWriter interface {
	RecordProgress(ctx context.Context, cluster, source string, newest, delivered time.Time) error
}

// ProgressEvery is how often, at most, the progress of one source and
// cluster is written: deliveries come many a second, and a reader of the
// progress cares about minutes.
const ProgressEvery = 30 * time.Second

// Persist makes Observe write the newest event's time of each source and
// cluster to w, at most every ProgressEvery; a failed write is logged and
// tried again as late (the events are stored: only the note of their lag
// is late).
func (l *SourceLag) Persist(w ProgressWriter, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.progress, l.written, l.log = w, map[[2]string]time.Time{}, log
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
}

// NewSourceLag creates the lag metrics and registers them with reg (nil:
// not registered).
func NewSourceLag(reg prometheus.Registerer) *SourceLag {
	l := &SourceLag{
		newest: map[[2]string]time.Time{},
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "options_record_source_delivery_delay_seconds",
			Help:    "Time from an event's stageTimestamp to its being stored, by source (webhook, firehose, pubsub, eventhubs).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"source"}),
		age: prometheus.NewDesc("options_record_source_newest_event_age_seconds",
			"Age of the newest event stored from a source (its stageTimestamp), by source and cluster.",
			[]string{"source", "cluster"}, nil),
		now: time.Now,
	}
	if reg != nil {
		reg.MustRegister(l)
	}
	return l
}

// Observe records the events of a batch of source stored at stored. Call
// it after they are stored, not when they are only journaled (an outcome's
// Written.Journaled; ObserveDrained records those): with Persist, it may start a write of their
// progress (with ctx's values, not its cancellation; Wait waits for it).
// An event stamped after stored (a skewed clock, a forged delivery) counts
// as stamped stored: otherwise one such event would make the source look
// current for ever (the newest never moves back) and its age negative.
func (l *SourceLag) Observe(ctx context.Context, source, cluster string, events []auditv1.Event, stored time.Time) {
	if l == nil || len(events) == 0 {
		return
	}
	l.observe(ctx, source, cluster, len(events), func(i int) time.Time { return events[i].StageTimestamp.Time }, stored)
}

// ObserveDrained records the events of a batch the journal stored late
// (journal.Options.Drained): a batch is journaled while the database is
// down or slow, and its source's progress must not claim its events until
// they are stored. Only the events kept are known then, so the newest may
// be older than the delivery's: the progress is late, never early. A batch
// of no source (import, or journaled by an older release) records nothing.
func (l *SourceLag) ObserveDrained(ctx context.Context, b *model.Batch, stored time.Time) {
	if l == nil || b.Source == "" {
		return
	}
	byCluster := map[string][]time.Time{}
	for i := range b.Events {
		byCluster[b.Events[i].Cluster] = append(byCluster[b.Events[i].Cluster], b.Events[i].StageAt)
	}
	for cluster, at := range byCluster {
		l.observe(ctx, b.Source, cluster, len(at), func(i int) time.Time { return at[i] }, stored)
	}
}

// observe is Observe of n events, the i-th stamped at(i).
func (l *SourceLag) observe(ctx context.Context, source, cluster string, n int, at func(int) time.Time, stored time.Time) {
	var newest time.Time
	for i := range n {
		t := at(i)
		l.delay.WithLabelValues(source).Observe(max(0, stored.Sub(t).Seconds()))
		if t.After(newest) {
			newest = t
		}
	}
	if newest.After(stored) {
		newest = stored
	}
	k := [2]string{source, cluster}
	l.mu.Lock()
	if newest.After(l.newest[k]) {
		l.newest[k] = newest
	}
	newest = l.newest[k]
	w := l.progress
	now := l.now()
	if w != nil {
		if last, ok := l.written[k]; ok && now.Sub(last) < ProgressEvery {
			w = nil
		} else {
			l.written[k] = now // claimed: a concurrent delivery does not write too
		}
	}
	l.mu.Unlock()
	if w == nil {
		return
	}
	// Written beside the answer, not before it: with the journal, a
	// delivery is acknowledged while the database is away, and must not
	// wait on it. At most one write per key in flight (the claim).
	l.writes.Add(1)
	go func() {
		defer l.writes.Done()
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), progressTimeout)
		defer cancel()
		if err := w.RecordProgress(wctx, cluster, source, newest, stored); err != nil {
			// Tried again ProgressEvery later: a database away for long
			// warns twice a minute, not once per delivery.
			l.log.Warn("the progress of a source could not be recorded", "source", source, "cluster", cluster, "err", err)
		}
	}()
}

// progressTimeout bounds one write of a source's progress.
const progressTimeout = 10 * time.Second

// Wait waits for the progress writes under way.
func (l *SourceLag) Wait() {
	if l != nil {
		l.writes.Wait()
	}
}

// NewestAge is the age of the newest event stored from source for cluster,
// and whether any was.
func (l *SourceLag) NewestAge(source, cluster string) (time.Duration, bool) {
	t, ok := l.Newest(source, cluster)
	return l.now().Sub(t), ok
}

// Newest is the stageTimestamp of the newest event stored from source for
// cluster, and whether any was.
func (l *SourceLag) Newest(source, cluster string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.newest[[2]string{source, cluster}]
	return t, ok
}

// Describe implements prometheus.Collector.
func (l *SourceLag) Describe(ch chan<- *prometheus.Desc) {
	l.delay.Describe(ch)
	ch <- l.age
}

// Collect implements prometheus.Collector.
func (l *SourceLag) Collect(ch chan<- prometheus.Metric) {
	l.delay.Collect(ch)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, t := range l.newest {
		ch <- prometheus.MustNewConstMetric(l.age, prometheus.GaugeValue, now.Sub(t).Seconds(), k[0], k[1])
	}
}
