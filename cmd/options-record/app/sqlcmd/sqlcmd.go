// Package sqlcmd runs a query for `options-record sql` on a database it is
// given: with psql when it is installed, its password kept off psql's
// command line, else with pgx, printing a table whose cells are escaped by
// api/escape's rule (recorded strings are hostile). It never starts or
// chooses the database: package app does.
package sqlcmd

import (
	"context"
	"fmt"
	"io"
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

// Run runs query on the database at dsn, with psql when it is installed
// (interactively when query is empty) and pgx otherwise.
func Run(ctx context.Context, dsn, query string, stdin io.Reader, stdout, stderr io.Writer) error {
	if psql, err := exec.LookPath("psql"); err == nil {
		cmd := psqlCommand(ctx, psql, dsn, query)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("psql: %w", err)
		}
		return nil
	}
	if query == "" {
		safe, _ := splitPassword(dsn)
		return fmt.Errorf("psql is not installed: give a query (connection string without its password: %s)", safe)
	}
	return runQuery(ctx, dsn, query, stdout)
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
