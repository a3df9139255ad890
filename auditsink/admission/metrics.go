package admission

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the observing webhook's Prometheus metrics. (Confirmations
// are the store's: options_record_observations_confirmed_total.)
type Metrics struct {
	observed *prometheus.CounterVec
	stored   prometheus.Counter
	dropped  *prometheus.CounterVec
	expired  prometheus.Counter
	refused  *prometheus.CounterVec
	queued   prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		observed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_observations_received_total", Help: "Admission reviews of an UPDATE or DELETE that showed the stored object (oldObject), by cluster.",
		}, []string{"cluster"}),
		stored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_observations_stored_total", Help: "Admission observations stored, unconfirmed until an audit event names them.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_observations_dropped_total", Help: "Admission observations not stored, by reason (queue_full, source_bound, store_error, rejected_by_database, invalid_object); their writes are recorded with state unknown.",
		}, []string{"reason"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_observations_expired_total", Help: "Admission observations no audit event named in time (forged, dry run, or their event not kept), deleted.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_admission_refused_total", Help: "Admission requests answered with an error (the apiserver ignores it), by reason (bad_review, busy, slow_body, unauthenticated).",
		}, []string{"reason"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "options_record_observations_queued_bytes", Help: "Bytes of admission observations held in memory, waiting to be stored.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.observed, m.stored, m.dropped, m.expired, m.refused, m.queued)
	}
	return m
}
