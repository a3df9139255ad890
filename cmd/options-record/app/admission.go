package app

import (
	"context"
	"net/http"
	"time"

	"github.com/options-record/options-record/auditsink/admission"
)

// DefaultObservationTTL is --admission-observation-ttl's default
// (admission.DefaultTTL: longer than managed sources' delivery lag).
const DefaultObservationTTL = admission.DefaultTTL

// AdmissionOptions configure the observing webhook (ValidatingWebhook
// observe.optionsrecord.io) of the ingest role: its own HTTPS listener,
// with the audit webhook's serving certificate, path /observe.
type AdmissionOptions struct {
	// Addr is its address; empty disables it.
	Addr string
	// RequireAuth refuses reviews that present none of the audit
	// webhook's client credentials (where the apiserver authenticates to
	// webhooks: --admission-control-config-file). Without it anonymous
	// reviews are taken (a managed cluster's apiserver presents none) and
	// stay untrusted until an audit event confirms them.
	RequireAuth bool
	// TTL is how long an unconfirmed observation is kept (default
	// DefaultObservationTTL).
	TTL time.Duration
	// MaxSourceBytes bounds the unconfirmed bytes kept per source address
	// (default 64 MiB); QueueBytes the observations held in memory
	// before they are stored (default 32 MiB).
	MaxSourceBytes int64
	QueueBytes     int64
}

// admissionLimits: reviews are small and the apiserver waits at most its
// timeout (at most 30 s) for the answer.
var admissionLimits = limits{readHeader: 5 * time.Second, read: 15 * time.Second,
	write: 15 * time.Second, idle: 120 * time.Second, maxHeaderBytes: 64 << 10}

// serveAdmission starts the queue's writer and serves the observing
// webhook. The writer stops after the listener (components stop in
// reverse): no review is answered with an annotation it will not write.
func (p *ingestProcess) serveAdmission(ctx context.Context) (func(context.Context) error, error) {
	a := p.o.Admission
	m := admission.NewMetrics(p.reg)
	q := admission.NewQueue(admission.QueueOptions{Store: p.st, MaxBytes: a.QueueBytes,
		MaxSourceBytes: a.MaxSourceBytes, TTL: a.TTL, Metrics: m, Logger: p.log})
	h, err := admission.NewHandler(admission.HandlerOptions{Cluster: p.o.Cluster, Authenticator: p.auth,
		RequireAuth: a.RequireAuth, Digester: p.digester, Queue: q, Metrics: m, Logger: p.log,
		MinBodyRate: p.o.MinBodyRate, BodyTimeout: p.o.BodyTimeout})
	if err != nil {
		return nil, err
	}
	stopQueue, _ := background("admission queue", q.Run).start(ctx)
	mux := http.NewServeMux()
	mux.Handle("POST "+WebhookPath, h) // the path the generated configuration names
	srv := newHTTPServer("admission", mux, p.tlsCfg, admissionLimits, p.log)
	stopSrv, err := srv.component(a.Addr, p.o.listen, p.lc).start(ctx)
	if err != nil {
		_ = stopQueue(ctx)
		return nil, err
	}
	p.log.Info("serving the observing webhook", "address", srv.addr.String())
	return func(ctx context.Context) error {
		err := stopSrv(ctx)
		_ = stopQueue(ctx)
		return err
	}, nil
}
