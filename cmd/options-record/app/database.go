package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/pgembed"
)

// DatabaseOptions say which PostgreSQL to use: URL, or else the embedded
// default in DataDir.
type DatabaseOptions struct {
	URL     string
	DataDir string
	// APIURL is the restore API's own login (serve): the owner of the
	// schema options_record_api, which never reads the record; the API
	// reads the record through URL. Empty: URL for both (one role, as the
	// embedded default has it: no separation of the two).
	APIURL string
}

// dsnFile is where a running embedded server's connection string is kept,
// so `options-record sql` can reach the database `serve` is using.
const dsnFile = "postgres.dsn"

// database is an open database choice: a URL and how to release it.
type database struct {
	URL string
	// APIURL is the restore API's own login (DatabaseOptions.APIURL), URL
	// when none is given.
	APIURL string
	stop   func(context.Context) error
}

// Close stops a database this process started.
func (d *database) Close(ctx context.Context) error {
	if d.stop == nil {
		return nil
	}
	return d.stop(ctx)
}

// openDatabase returns the configured URL, or starts the embedded default
// (a private PostgreSQL from the installed server binaries) in DataDir. With
// reuse, an embedded server another command already runs there is used.
func openDatabase(ctx context.Context, o DatabaseOptions, reuse bool, log *slog.Logger) (*database, error) {
	if o.URL != "" {
		api := o.APIURL
		if api == "" {
			api = o.URL
		}
		return &database{URL: o.URL, APIURL: api}, nil
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.DataDir == "" {
		return nil, errors.New("no --database-url and no --data-dir for the embedded PostgreSQL")
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if reuse {
		if url, ok := runningEmbedded(ctx, dir); ok {
			return &database{URL: url, APIURL: url}, nil
		}
	}
	// Private: it holds the generated keys and tokens and the connection
	// string. (pgembed moves the PostgreSQL cluster elsewhere when the
	// server account cannot enter it.)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("the data directory is open to other users; it holds keys and tokens: chmod 700 it", "data_dir", dir, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
	srv, err := pgembed.Start(ctx, pgembed.Options{DataDir: dir, Fsync: true, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start embedded PostgreSQL in %s: %w", dir, err)
	}
	url := srv.ConnString()
	_ = os.WriteFile(filepath.Join(dir, dsnFile), []byte(url+"\n"), 0o600)
	log.Info("embedded PostgreSQL started", "data_dir", dir)
	return &database{URL: url, APIURL: url, stop: func(ctx context.Context) error {
		_ = os.Remove(filepath.Join(dir, dsnFile))
		return srv.Stop(ctx)
	}}, nil
}

// runningEmbedded finds the connection string of an embedded server that
// answers in dir.
func runningEmbedded(ctx context.Context, dir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(dir, dsnFile))
	if err != nil {
		return "", false
	}
	url := strings.TrimSpace(string(data))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", false
	}
	_ = conn.Close(ctx)
	return url, true
}
