package pgtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/options-record/options-record/store/pgembed"
)

// EnvDatabaseURL names the variable holding a superuser DSN of an existing server to test against.
const EnvDatabaseURL = "OPTIONS_RECORD_TEST_DATABASE_URL"

const (
	containerImage = "postgres:15"
	// dockerCheckTimeout bounds the probe for a Docker engine.
	dockerCheckTimeout = 3 * time.Second
)

// server is the PostgreSQL shared by a test binary.
type server struct {
	source string // for messages: where the server came from
	admin  string // superuser DSN of the maintenance database
	stop   func(context.Context) error
}

// dsnFor returns the admin DSN pointed at database db.
func (s *server) dsnFor(db string) string { return withDatabase(s.admin, db) }

// exec runs one statement on the maintenance database.
func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// startServer tries the sources in order and reports why each one failed.
func startServer(ctx context.Context) (*server, error) {
	logf := func(format string, args ...any) {
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "pgtest: "+format+"\n", args...)
		}
	}
	if dsn := os.Getenv(EnvDatabaseURL); dsn != "" {
		srv := &server{source: EnvDatabaseURL, admin: dsn, stop: func(context.Context) error { return nil }}
		if err := srv.exec(ctx, "SELECT 1"); err != nil {
			return nil, fmt.Errorf("  %s is set but unusable (no other source is tried when it is set): %w", EnvDatabaseURL, err)
		}
		logf("using the server at %s", EnvDatabaseURL)
		return srv, nil
	}
	reasons := []error{fmt.Errorf("  %s: not set", EnvDatabaseURL)}

	begin := time.Now()
	srv, err := startContainer(ctx)
	if err == nil {
		logf("using a %s container (started in %v)", containerImage, time.Since(begin).Round(time.Millisecond))
		return srv, nil
	}
	reasons = append(reasons, fmt.Errorf("  testcontainers (%s): %w", containerImage, err))

	begin = time.Now()
	srv, err = startEmbedded(ctx)
	if err == nil {
		logf("using %s (started in %v)", srv.source, time.Since(begin).Round(time.Millisecond))
		return srv, nil
	}
	reasons = append(reasons, fmt.Errorf("  local server binaries (pgembed): %w", err))
	return nil, errors.Join(reasons...)
}

// dockerAvailable asks the Docker engine testcontainers would use for its info, giving up
// after dockerCheckTimeout even if the client ignores its context.
func dockerAvailable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				errc <- fmt.Errorf("docker client panicked: %v", r)
			}
		}()
		p, err := testcontainers.ProviderDefault.GetProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
		if err != nil {
			errc <- err
			return
		}
		errc <- p.Health(ctx) // Health closes the provider
	}()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("no Docker engine: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no Docker engine answered within %v", dockerCheckTimeout)
	}
}

func startContainer(ctx context.Context) (*server, error) {
	if err := dockerAvailable(ctx); err != nil {
		return nil, err
	}
	var logger tclog.Logger = tclog.NewNoopLogger()
	if testing.Verbose() {
		logger = tclog.Default()
	}
	ctr, err := tcpostgres.Run(ctx, containerImage,
		testcontainers.WithLogger(logger),
		tcpostgres.BasicWaitStrategies(),
		// Like pgembed's test settings: durability off, production's TOAST compression.
		testcontainers.WithCmdArgs("-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "default_toast_compression=lz4"),
	)
	terminate := func(context.Context) error {
		if err := testcontainers.TerminateContainer(ctr); err != nil {
			return fmt.Errorf("terminate container: %w", err)
		}
		return nil
	}
	if err != nil {
		return nil, errors.Join(err, terminate(ctx))
	}
	dsn, err := ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return nil, errors.Join(err, terminate(ctx))
	}
	return &server{source: containerImage + " container " + ctr.GetContainerID(), admin: dsn, stop: terminate}, nil
}

func startEmbedded(ctx context.Context) (*server, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	// When the tests run as root the server runs as the postgres account, which must enter dir.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	pg, err := pgembed.Start(ctx, pgembed.Options{
		DataDir:  filepath.Join(dir, "data"),
		Database: "postgres",
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	stop := func(ctx context.Context) error {
		err := pg.Stop(ctx)
		if err == nil {
			err = pg.Err()
		}
		return errors.Join(err, os.RemoveAll(dir))
	}
	return &server{source: "pgembed in " + dir, admin: pg.ConnStringFor("postgres"), stop: stop}, nil
}

// withDatabase returns dsn, a URL or keyword/value connection string, naming database db.
func withDatabase(dsn, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Del("dbname")
			u.RawQuery = q.Encode()
			u.Path = "/" + db
			u.RawPath = ""
			return u.String()
		}
	}
	// In keyword/value strings the last occurrence of a keyword wins (pgx and libpq).
	return dsn + " dbname='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(db) + "'"
}
