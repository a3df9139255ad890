package app

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/cmd/options-record/app/importer"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/tamper"
)

// ImportOptions configure `options-record import`.
type ImportOptions struct {
	Database  DatabaseOptions
	Rules     RulesOptions
	Cluster   string
	BatchSize int
	// SecretDigestKeyFile: as for serve (the same key gives the same digests).
	SecretDigestKeyFile string
	// TamperLog writes the tamper-evident log's pending rows, which the
	// ingest's integrator logs (a record whose ingest keeps a log).
	TamperLog bool
	Files     []string
	Out       io.Writer // summary
	Progress  io.Writer // progress bar; nil for none
	Logger    *slog.Logger
}

// Import runs audit log files (the log backend's JSON lines, or EventList
// JSON documents) through the same pipeline as the webhook. It stops at the
// first file it cannot read or parse, after storing the batches before the
// bad spot and nothing of the batch it could not fully decode.
func Import(ctx context.Context, o ImportOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Cluster == "" {
		o.Cluster = "default"
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 400
	}
	if len(o.Files) == 0 {
		return errors.New("import: no files given")
	}
	rules, err := loadRules(o.Rules, log)
	if err != nil {
		return err
	}
	digester, err := loadSecretDigester(o.SecretDigestKeyFile, o.Database.DataDir, log)
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, o.Database, true, log)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	st, err := store.Open(ctx, store.Options{URL: db.URL, Logger: log, TamperLog: o.TamperLog, VersionDigest: tamper.VersionDigest, EventDigest: tamper.EventDigest})
	if err != nil {
		return err
	}
	defer st.Close()
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, st, nil, log).WithSecretDigester(digester)

	total, err := importer.Files(ctx, pipe, o.Files, importer.Options{Cluster: o.Cluster, BatchSize: o.BatchSize, Progress: o.Progress})
	importer.PrintSummary(o.Out, &total)
	return err
}
