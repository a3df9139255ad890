package app

import (
	"context"
	"log/slog"

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
	p := newProcess(o, digester, log)
	err = p.lc.run(ctx,
		component{"database", p.openDatabase},
		// On a database of its own (--database-url), the API neither
		// migrates the record nor creates partitions: ingest owns the
		// record, so the API reads it as a role that may only read it
		// (--database-url) and keeps its restores as another
		// (--api-database-url), which reads nothing of the record
		// (deploy/README.md). The embedded database it starts itself, it
		// prepares.
		p.openStore(store.Options{Logger: log, MaxConns: 2, Secondary: o.Database.URL != ""}, false),
		// Ready (/readyz) once every component has started.
		p.metricsSrv.component(o.MetricsAddr, o.listen, p.lc),
		component{"restore API", p.startAPI},
		component{"announce", func(context.Context) (func(context.Context) error, error) {
			log.Info("serving the restore API only (--roles=api)", "metrics", p.metricsSrv.addr.String())
			if o.OnListening != nil {
				o.OnListening(nil, p.metricsSrv.addr)
			}
			return nil, nil
		}},
	)
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
