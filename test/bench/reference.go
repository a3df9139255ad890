package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// The reference writer is the floor the sink is measured against: the
// least a service can do to store the same rows from the same EventLists.
// It decodes each body with the sink's decoder, selects and converts the
// events with the sink's rules and model (so the rows are the same), and
// COPYs them in one transaction per batch before it answers. Nothing else:
// no duplicate lookup (a redelivered batch fails on the primary key), no journal, no
// admission control, no streaming of large bodies, no per-rule statistics.
// `options-record-bench -reference` runs it as a third sink, as a separate
// process started like the sink (`options-record-bench serve` with the
// flags the bench gives the sink).

// referenceMain runs the reference writer until SIGTERM or SIGINT.
func referenceMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", "", "PostgreSQL URL")
	dataDir := fs.String("data-dir", "", "where the CA and the webhook token are written")
	rulesFile := fs.String("rules-file", "", "OptionsRecordController YAML")
	webhookAddr := fs.String("webhook-bind-address", "", "HTTPS address of the webhook")
	metricsAddr := fs.String("metrics-bind-address", "", "HTTP address of /metrics and /readyz")
	fs.String("log-level", "warn", "ignored: the reference writer logs only errors")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := runReference(ctx, *dsn, *dataDir, *rulesFile, *webhookAddr, *metricsAddr); err != nil {
		fmt.Fprintf(stderr, "reference writer: %v\n", err)
		return 1
	}
	return 0
}

func runReference(ctx context.Context, dsn, dataDir, rulesFile, webhookAddr, metricsAddr string) error {
	objs, err := filter.LoadFile(rulesFile)
	if err != nil {
		return err
	}
	rules, _ := filter.Compile(objs, filter.Options{})
	st, err := store.Open(ctx, store.Options{URL: dsn})
	if err != nil {
		return err
	}
	defer st.Close()

	tlsDir := filepath.Join(dataDir, "tls")
	_, certFile, keyFile, err := certs.EnsureSelfSigned(tlsDir, []string{"127.0.0.1", "localhost"})
	if err != nil {
		return err
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return err
	}
	token := hex.EncodeToString(tok[:])
	if err := os.WriteFile(filepath.Join(dataDir, "webhook-token"), []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	key, err := model.NewSecretDigester(tok[:])
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, copyWriter{st}, auditsink.NewMetrics(reg), nil).
		WithSecretDigester(key)
	want := "Bearer " + token
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		// One read into a buffer of the announced size, as the sink does.
		buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+bytes.MinRead))
		if _, err := buf.ReadFrom(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		events, skipped, err := decode.EventList(buf.Bytes(), time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := pipe.Process(r.Context(), "default", events, skipped)
		if err != nil {
			slog.Error("write", "err", err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"received":%d,"kept":%d}`, out.Received, out.Kept)
	})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

	wl, err := net.Listen("tcp", webhookAddr)
	if err != nil {
		return err
	}
	ml, err := net.Listen("tcp", metricsAddr)
	if err != nil {
		return err
	}
	webhook := &http.Server{Handler: hook, ReadHeaderTimeout: 10 * time.Second}
	metrics := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errs := make(chan error, 2)
	go func() { errs <- webhook.ServeTLS(wl, certFile, keyFile) }()
	go func() { errs <- metrics.Serve(ml) }()
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = webhook.Shutdown(sctx)
	_ = metrics.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// copyWriter writes a batch with COPY in one transaction, nothing more.
type copyWriter struct{ st *store.Store }

func (c copyWriter) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	days := make([]time.Time, 0, len(b.Events))
	for i := range b.Events {
		days = append(days, b.Events[i].StageAt)
	}
	if err := c.st.EnsurePartitionsFor(ctx, days); err != nil {
		return model.WriteResult{}, err
	}
	var res model.WriteResult
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		var err error
		res.Events, res.Versions, err = store.CopyRows(ctx, tx, b)
		return err
	})
	return res, err
}
