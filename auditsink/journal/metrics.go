package journal

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	collectors    []prometheus.Collector
	appended      prometheus.Counter
	drained       prometheus.Counter
	fallbacks     prometheus.Counter
	corrupt       prometheus.Counter
	quarantined   prometheus.Counter
	errors        *prometheus.CounterVec
	appendSeconds prometheus.Histogram
	drainSeconds  prometheus.Histogram
}

func newMetrics(j *Journal) *metrics {
	m := &metrics{
		appended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_journal_appended_batches_total",
			Help: "Batches acknowledged from the journal (appended and fsynced) instead of stored directly.",
		}),
		drained: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_journal_drained_batches_total",
			Help: "Journaled batches stored in PostgreSQL by the drainer.",
		}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_journal_fallbacks_total",
			Help: "Direct store writes that failed or missed the write deadline, whose batch was then journaled.",
		}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_journal_corrupt_records_total",
			Help: "Damaged journal records skipped (found when opening the journal or when draining).",
		}),
		quarantined: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_journal_quarantined_batches_total",
			Help: "Journaled batches PostgreSQL rejected as invalid data, moved to the quarantine directory.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_journal_errors_total",
			Help: "Journal failures by operation: full (size limit or disk full), append, sync, encode, drain.",
		}, []string{"op"}),
		appendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "options_record_journal_append_seconds",
			Help:    "Time to journal a batch: encode, write, fsync.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		drainSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "options_record_journal_drain_write_seconds",
			Help:    "Time of one drain transaction (several journaled batches merged).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
	}
	for _, op := range []string{"full", "append", "sync", "encode", "drain"} {
		m.errors.WithLabelValues(op)
	}
	highWater := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "options_record_journal_high_water_bytes", Help: "Backlog (options_record_journal_bytes) above which /readyz fails.",
	})
	highWater.Set(float64(j.opts.HighWater))
	gauge := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(j.Stats()) })
	}
	m.collectors = []prometheus.Collector{
		m.appended, m.drained, m.fallbacks, m.corrupt, m.quarantined, m.errors, m.appendSeconds, m.drainSeconds,
		gauge("options_record_journal_batches", "Batches acknowledged from the journal and not yet stored in PostgreSQL.",
			func(s Stats) float64 { return float64(s.Batches) }),
		gauge("options_record_journal_bytes", "Size of the journaled batches not yet stored.",
			func(s Stats) float64 { return float64(s.Bytes) }),
		gauge("options_record_journal_disk_bytes", "Size of the journal's segment files.",
			func(s Stats) float64 { return float64(s.DiskBytes) }),
		gauge("options_record_journal_oldest_age_seconds", "Age of the oldest batch not yet stored; 0 when none.",
			func(s Stats) float64 {
				if s.Oldest.IsZero() {
					return 0
				}
				return time.Since(s.Oldest).Seconds()
			}),
		highWater,
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range m.collectors {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("journal: register metrics: %w", err)
		}
	}
	return nil
}
