package pubsub

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Registerer registers the endpoint's metrics (a prometheus.Registerer;
// nil: not registered).
type Registerer = prometheus.Registerer

// metrics say how late GKE's entries arrive: the delivery delay (from
// publishTime, when the Log Router's sink published the entry, to the
// push) and the age of the events (from the request to its push), and the
// newest event's time per cluster, whose distance from now is the lag of
// the record (alert on time() minus it).
type metrics struct {
	pushes *prometheus.CounterVec
	delay  prometheus.Histogram
	age    prometheus.Histogram
	newest *prometheus.GaugeVec

	mu     sync.Mutex
	latest map[string]time.Time
}

func newMetrics(reg Registerer) *metrics {
	lag := []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}
	m := &metrics{
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_pubsub_pushes_total",
			Help: "Pub/Sub pushes of GKE audit log entries, by outcome (stored, unauthenticated, throttled, rejected, slow_body, store_failed).",
		}, []string{"outcome"}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "options_record_pubsub_delivery_delay_seconds",
			Help: "Time from a message's publishTime (the log sink published the entry) to its push.", Buckets: lag,
		}),
		age: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "options_record_pubsub_event_age_seconds",
			Help: "Time from a GKE audit event (the request) to its push.", Buckets: lag,
		}),
		newest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "options_record_pubsub_newest_event_timestamp_seconds",
			Help: "Time of the newest GKE audit event pushed, per cluster: time() minus it is how far the record lags.",
		}, []string{"cluster"}),
		latest: map[string]time.Time{},
	}
	if reg != nil {
		reg.MustRegister(m.pushes, m.delay, m.age, m.newest)
	}
	return m
}

func (m *metrics) observeEvent(cluster string, at, now time.Time) {
	m.age.Observe(now.Sub(at).Seconds())
	// Pushes arrive out of order: the gauge only moves forward.
	m.mu.Lock()
	defer m.mu.Unlock()
	if at.After(m.latest[cluster]) {
		m.latest[cluster] = at
		m.newest.WithLabelValues(cluster).Set(float64(at.UnixNano()) / 1e9)
	}
}
