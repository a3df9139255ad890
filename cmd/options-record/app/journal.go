package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/auditsink/journal"
	"github.com/options-record/options-record/store/model"
)

// JournalOptions configure the journal of `serve`. Zero values take the
// journal package's defaults (1 GiB, high water at 3/4, 5 s deadline).
type JournalOptions struct {
	// Dir is the journal's directory; empty: no journal, and a batch the
	// database cannot take gets 503.
	Dir           string
	MaxBytes      int64
	HighWater     int64
	WriteDeadline time.Duration
}

// wrapJournal puts the journal in front of the store when a directory is
// configured. It returns the writer for the pipeline, a function that stops
// the drainer and closes the journal (call it after the webhook server has
// shut down, so in-flight batches end stored or journaled), and the
// readiness check: nil without a journal (readiness is then the database's),
// else the journal's high-water check — with a journal the sink takes
// batches while the database is down, so that must not make it unready.
//
// drained, when set, is told of each journaled batch once stored (the
// sources' lag: see journal.Options.Drained).
func wrapJournal(ctx context.Context, o JournalOptions, st model.Writer, reg prometheus.Registerer, log *slog.Logger,
	drained func(context.Context, *model.Batch, time.Time)) (model.Writer, func(context.Context) error, func() error, error) {
	if o.Dir == "" {
		return st, nil, nil, nil
	}
	j, err := journal.Open(o.Dir, st, journal.Options{
		MaxBytes: o.MaxBytes, HighWater: o.HighWater, WriteDeadline: o.WriteDeadline,
		Registerer: reg, Logger: log.With("component", "journal"), Drained: drained,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("journal: %w", err)
	}
	// The drainer runs until stop, not until ctx ends: the webhook's
	// in-flight batches are still being stored then.
	stopDrainer, _ := background("journal drainer", func(ctx context.Context) {
		if err := j.Run(ctx); err != nil {
			log.Error("journal drainer", "err", err)
		}
	}).start(context.WithoutCancel(ctx))
	stop := func(ctx context.Context) error {
		_ = stopDrainer(ctx)
		err := j.Close()
		if s := j.Stats(); s.Batches > 0 {
			log.Warn("journal holds batches not yet stored; the next start stores them", "dir", o.Dir,
				"batches", s.Batches, "bytes", s.Bytes, "oldest", s.Oldest)
		}
		if err != nil {
			return fmt.Errorf("closing the journal: %w", err)
		}
		return nil
	}
	log.Info("journal enabled", "dir", o.Dir)
	return j, stop, j.Ready, nil
}
