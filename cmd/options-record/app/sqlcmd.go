package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/options-record/options-record/api/escape"
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
		cmd := psqlCommand(ctx, psql, db.URL, o.Query)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Out, o.Err
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("psql: %w", err)
		}
		return nil
	}
	if o.Query == "" {
		dsn, _ := splitPassword(db.URL)
		return fmt.Errorf("psql is not installed: give a query (connection string without its password: %s)", dsn)
	}
	return runQuery(ctx, db.URL, o.Query, o.Out)
}

// psqlCommand runs psql on dsn. The password goes to psql in PGPASSWORD,
// not on its command line, which every user of the machine can read
// (/proc/<pid>/cmdline, ps).
func psqlCommand(ctx context.Context, psql, dsn, query string) *exec.Cmd {
	dsn, password := splitPassword(dsn)
	args := []string{"--no-psqlrc", "-v", "ON_ERROR_STOP=1", dsn}
	if query != "" {
		args = append(args, "-c", query)
	}
	cmd := exec.CommandContext(ctx, psql, args...)
	if password != "" {
		cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	}
	return cmd
}

// splitPassword returns a connection string without its password, and the
// password. It takes both forms libpq does: a postgres:// URL (the password
// in its user info or a password query parameter) and key=value pairs.
func splitPassword(dsn string) (string, string) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable connection string)", ""
		}
		var password string
		if u.User != nil {
			password, _ = u.User.Password()
			u.User = url.User(u.User.Username())
		}
		q := u.Query()
		if p := q.Get("password"); p != "" {
			password = p
			q.Del("password")
			u.RawQuery = q.Encode()
		}
		return u.String(), password
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "(unparsable connection string)", ""
	}
	if cfg.Password == "" {
		return dsn, ""
	}
	return keywordPassword.ReplaceAllString(dsn, ""), cfg.Password
}

// keywordPassword matches a password=... pair of a key=value connection
// string, quoted ('a b\'c') or not.
var keywordPassword = regexp.MustCompile(`(^|\s)password\s*=\s*('(\\.|[^'\\])*'|\S*)`)

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
			if v != nil {
				// Recorded strings were written by cluster users: a tab, a
				// newline or an escape sequence could forge rows or drive
				// the operator's terminal.
				cells[i] = escape.Quote(fmt.Sprint(v))
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
