package pubsub

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Registerer registers the endpoint's metrics (a prometheus.Registerer;
// nil: not registered).
type Registerer = prometheus.Registerer

// Source names this source in the lag metrics (auditsink.SourceLag).
const Source = "pubsub"

// metrics count the pushes by outcome; their lag is the SourceLag's, as
// every managed source's.
type metrics struct {
	pushes *prometheus.CounterVec
}

func newMetrics(reg Registerer) *metrics {
	m := &metrics{
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_pubsub_pushes_total",
			Help: "Pub/Sub pushes of GKE audit log entries, by outcome (stored, unauthenticated, throttled, rejected, slow_body, store_failed).",
		}, []string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.pushes)
	}
	return m
}
