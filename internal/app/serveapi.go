package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/options-record/options-record/store"
)

// serveAPI runs the restore API alone (--roles=api): no webhook listener, no
// webhook credentials, no rule sync, baselines, statuses or retention. It
// reads the record the ingest role writes, with the same secret digest key
// (its page cursors' key is derived from it), and serves /metrics, /healthz
// and /readyz (the database answers) on the metrics address.
func serveAPI(ctx context.Context, o ServeOptions, log *slog.Logger) error {
	digester, err := loadSecretDigester(o.SecretDigestKeyFile, o.Database.DataDir, log)
	if err != nil {
		return err
	}
	if o.API.TLSCertFile == "" {
		if err := ensureServingCert(&o, log); err != nil {
			return err
		}
	}
	db, err := openDatabase(ctx, o.Database, false, log)
	if err != nil {
		return err
	}
	defer db.closeOnExit(ctx, log)
	// On a database of its own (--database-url), the API role neither
	// migrates the schema nor creates partitions: ingest owns the record, so
	// the API can log in with a role that may only read it and write the
	// restores table (deploy/README.md). The embedded database it starts
	// itself, it prepares.
	st, _, err := openStore(ctx, store.Options{URL: db.URL, Logger: log, MaxConns: 2, Secondary: o.Database.URL != ""}, false, log)
	if err != nil {
		return err
	}
	defer st.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metricsLn, err := net.Listen("tcp", o.MetricsAddr)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	stopAPI, err := runAPI(ctx, o.API, &o, db.URL, digester, log)
	if err != nil {
		metricsLn.Close()
		return err
	}
	metricsSrv := metricsServer(reg, func(ctx context.Context) error { return pingStore(ctx, st) }, log)
	errc := make(chan error, 1)
	go func() { errc <- metricsSrv.Serve(metricsLn) }()
	log.Info("serving the restore API only (--roles=api)", "metrics", metricsLn.Addr().String())
	if o.OnListening != nil {
		o.OnListening(nil, metricsLn.Addr())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := stopAPI(shutCtx); err != nil {
		log.Error("restore API shutdown", "err", err)
	}
	_ = metricsSrv.Shutdown(shutCtx)
	if runErr != nil && !errors.Is(runErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", runErr)
	}
	log.Info("stopped")
	return nil
}
