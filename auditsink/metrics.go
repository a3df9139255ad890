package auditsink

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the ingest's Prometheus metrics.
type Metrics struct {
	received  *prometheus.CounterVec
	kept      *prometheus.CounterVec
	sanitized *prometheus.CounterVec
	truncated *prometheus.CounterVec
	dropped   *prometheus.CounterVec
	skipped   *prometheus.CounterVec
	versions  *prometheus.CounterVec
	batches   *prometheus.CounterVec
	ack       prometheus.Histogram
	write     prometheus.Histogram
	inFlight  prometheus.Gauge

	authFailures *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, as in tests and import).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_events_received_total", Help: "Audit events received, by cluster.",
		}, []string{"cluster"}),
		kept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_events_kept_total", Help: "Audit events selected by a rule and stored, by cluster.",
		}, []string{"cluster"}),
		sanitized: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_events_sanitized_total", Help: "Kept events in which NUL characters, invalid UTF-8 or unpaired UTF-16 surrogate escapes, which PostgreSQL cannot store or read as jsonb, were replaced with U+FFFD.",
		}, []string{"cluster"}),
		truncated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_events_truncated_total", Help: "Events of a streamed batch longer than --webhook-max-event-bytes, kept without their bodies (or a deletecollection's List items as their metadata) or longest values, and marked audit.k8s.io/truncated.",
		}, []string{"cluster"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_events_dropped_total", Help: "Audit events not stored, by reason (filtered out, malformed, invalid).",
		}, []string{"cluster", "reason"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_versions_skipped_total", Help: "Kept events from which no object version could be derived, by reason.",
		}, []string{"reason"}),
		versions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_versions_stored_total", Help: "Object versions stored, and changes found to be no-ops or redeliveries.",
		}, []string{"result"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_batches_total", Help: "Webhook requests by outcome.",
		}, []string{"outcome"}),
		ack: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "options_record_batch_ack_seconds", Help: "Time from receiving a webhook request to acknowledging it.",
			Buckets: prometheus.ExponentialBuckets(0.002, 2, 14),
		}),
		write: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "options_record_store_write_seconds", Help: "Time to write one batch to PostgreSQL (one transaction).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "options_record_batches_in_flight", Help: "Webhook requests being processed.",
		}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_webhook_auth_failures_total", Help: "Webhook requests that failed to authenticate: refused (401), or throttled (429) beyond the failures allowed per client address.",
		}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.received, m.kept, m.sanitized, m.truncated, m.dropped, m.skipped, m.versions, m.batches, m.ack, m.write, m.inFlight, m.authFailures)
	}
	return m
}
