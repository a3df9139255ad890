package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
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
// when it is installed and pgx otherwise.
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
	if psql, err := exec.LookPath("psql"); err == nil {
		args := []string{"--no-psqlrc", "-v", "ON_ERROR_STOP=1", db.URL}
		if o.Query != "" {
			args = append(args, "-c", o.Query)
		}
		cmd := exec.CommandContext(ctx, psql, args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Out, o.Err
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("psql: %w", err)
		}
		return nil
	}
	if o.Query == "" {
		return fmt.Errorf("psql is not installed: give a query (connection string: %s)", db.URL)
	}
	return runQuery(ctx, db.URL, o.Query, o.Out)
}

func runQuery(ctx context.Context, url, query string, out io.Writer) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, query)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, f.Name)
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				cells[i] = ""
			} else {
				cells[i] = fmt.Sprint(v)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	tw.Flush()
	fmt.Fprintf(out, "(%d rows)\n", n)
	return nil
}
