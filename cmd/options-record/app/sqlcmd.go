package app

import (
	"context"
	"io"
	"log/slog"

	"github.com/options-record/options-record/cmd/options-record/app/sqlcmd"
)

// SQLOptions configure `options-record sql`.
type SQLOptions struct {
	Database DatabaseOptions
	// Query to run; empty opens psql interactively.
	Query  string
	Stdin  io.Reader
	Out    io.Writer
	Err    io.Writer
	Logger *slog.Logger
}

// SQL runs a query on the database in use (the embedded default that
// `serve` runs, started for the occasion if it is not running), with psql
// when it is installed and pgx otherwise (package sqlcmd).
func SQL(ctx context.Context, o SQLOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db, err := openDatabase(ctx, o.Database, true, log)
	if err != nil {
		return err
	}
	defer db.Close(context.WithoutCancel(ctx))
	return sqlcmd.Run(ctx, db.URL, o.Query, o.Stdin, o.Out, o.Err)
}
