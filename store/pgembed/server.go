package pgembed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// defaultStartTimeout bounds Start when its context has no deadline; crash recovery of a
	// large cluster may take a while.
	defaultStartTimeout = 2 * time.Minute
	// killGrace is how long Stop waits after escalating to SIGQUIT before SIGKILL.
	killGrace = 5 * time.Second
)

// Server is a running postgres started by Start.
type Server struct {
	log       *slog.Logger
	account   account
	dataDir   string
	pgdata    string
	socketDir string
	tempDir   bool // socketDir is a temporary directory Stop removes
	database  string

	cmd      *exec.Cmd
	output   *tail
	done     chan struct{}
	exitErr  error // set before done is closed
	stopping atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

// Start initializes opts.DataDir if needed, starts postgres on a private Unix socket, waits
// until it accepts connections and creates opts.Database if it does not exist. ctx bounds only
// the start (default two minutes without a deadline); stop the server with Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	started := time.Now()
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}
	s := &Server{
		log:      opts.Logger,
		dataDir:  opts.DataDir,
		pgdata:   filepath.Join(opts.DataDir, "pgdata"),
		database: opts.Database,
		done:     make(chan struct{}),
		output:   &tail{max: 16 << 10},
	}
	if s.account, err = serverAccount(); err != nil {
		return nil, err
	}
	if err := s.relocateIfUnreachable(); err != nil {
		return nil, err
	}
	if pid := runningPID(s.pgdata); pid != 0 {
		return nil, fmt.Errorf("%w: postgres (pid %d) is serving %s; stop it or choose another --data-dir", ErrAlreadyRunning, pid, s.pgdata)
	}
	major := clusterMajor(s.pgdata)
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = findBinDir(major); err != nil {
			return nil, err
		}
	}
	if err := s.prepareDataDir(); err != nil {
		return nil, err
	}
	if major == "" {
		t := time.Now()
		if err := s.initdb(ctx, binDir, opts.Fsync); err != nil {
			return nil, err
		}
		s.log.Info("pgembed: initialized cluster", "data_dir", s.pgdata, "user", s.account.name, "elapsed", time.Since(t))
	}
	if s.socketDir, s.tempDir, err = s.prepareSocketDir(); err != nil {
		return nil, err
	}
	if err := s.launch(binDir, opts.settings(s.socketDir)); err != nil {
		s.removeTempDir()
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, errors.Join(err, s.abort())
	}
	if err := s.createDatabase(ctx); err != nil {
		return nil, errors.Join(err, s.abort())
	}
	s.log.Info("pgembed: started", "pid", s.cmd.Process.Pid, "data_dir", s.pgdata, "socket_dir", s.socketDir,
		"database", s.database, "elapsed", time.Since(started))
	return s, nil
}

// prepareDataDir creates DataDir and pgdata for the account and checks it can reach them.
func (s *Server) prepareDataDir() error {
	if err := os.MkdirAll(filepath.Dir(s.dataDir), 0o755); err != nil {
		return fmt.Errorf("pgembed: data dir: %w", err)
	}
	if err := s.account.mkdirOwned(s.dataDir); err != nil {
		return err
	}
	if err := s.account.checkReachable(s.dataDir); err != nil {
		return err
	}
	return s.account.mkdirOwned(s.pgdata)
}

// launch starts the postmaster and the goroutine that reaps it.
func (s *Server) launch(binDir string, settings map[string]string) error {
	args := append([]string{"-D", s.pgdata}, settingsArgs(settings)...)
	cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
	cmd.Dir = s.dataDir
	cmd.Env = s.account.env()
	cmd.Stdout, cmd.Stderr = s.output, s.output
	cmd.SysProcAttr = sysProcAttr(s.account.cred)
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgembed: start postgres: %w", err)
	}
	s.cmd = cmd
	go func() {
		err := cmd.Wait()
		if !s.stopping.Load() {
			if err == nil {
				err = errors.New("exit status 0")
			}
			s.exitErr = fmt.Errorf("pgembed: postgres exited unexpectedly: %w: %s", err, s.output)
			s.log.Error("pgembed: postgres exited unexpectedly", "err", err, "output", s.output.String())
		}
		close(s.done)
	}()
	return nil
}

// waitReady polls the server with pgx until it accepts a connection.
func (s *Server) waitReady(ctx context.Context) error {
	dsn := s.ConnStringFor("postgres")
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(attempt, dsn)
		if err == nil {
			err = conn.Ping(attempt)
			_ = conn.Close(attempt)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return s.exitErr
		case <-ctx.Done():
			return fmt.Errorf("pgembed: waiting for postgres to accept connections: %w (last error: %v): %s", ctx.Err(), err, s.output)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// createDatabase creates s.database unless it exists.
func (s *Server) createDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.ConnStringFor("postgres"))
	if err != nil {
		return fmt.Errorf("pgembed: create database %s: %w", s.database, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, s.database).Scan(&exists); err != nil {
		return fmt.Errorf("pgembed: create database %s: %w", s.database, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.database}.Sanitize())
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
		err = nil
	}
	if err != nil {
		return fmt.Errorf("pgembed: create database %s: %w", s.database, err)
	}
	s.log.Info("pgembed: created database", "database", s.database)
	return nil
}

// ConnString returns a pgx/libpq keyword/value DSN for Options.Database over the private socket.
func (s *Server) ConnString() string { return s.ConnStringFor(s.database) }

// ConnStringFor returns a DSN like ConnString's for database db.
func (s *Server) ConnStringFor(db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		dsnValue(s.socketDir), port, dsnValue(s.account.name), dsnValue(db))
}

// dsnValue quotes v for a keyword/value connection string.
func dsnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Done is closed when postgres has exited, after Stop or unexpectedly (then Err says why).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns why postgres exited if it did so without Stop, else nil.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.exitErr
	default:
		return nil
	}
}

// Stop shuts postgres down (SIGINT: fast shutdown, which rolls back open transactions and
// checkpoints) and waits for it. If ctx ends first it escalates to SIGQUIT (immediate shutdown,
// crash recovery on next start) and then SIGKILL of the process group, and returns ctx's error.
// Pass a context that is still live (not the one whose cancellation triggered the shutdown).
// Stop is idempotent: later calls return the first call's result. If postgres had already
// exited, Stop returns nil and Err says why.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		s.stopErr = s.stop(ctx)
		s.removeTempDir()
		if s.stopErr != nil {
			s.stopErr = fmt.Errorf("pgembed: stop: %w", s.stopErr)
		} else {
			s.log.Info("pgembed: stopped", "data_dir", s.pgdata)
		}
	})
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	pid := s.cmd.Process.Pid
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = syscall.Kill(pid, syscall.SIGINT)
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("pgembed: fast shutdown timed out; immediate shutdown", "pid", pid)
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	select {
	case <-s.done:
	case <-time.After(killGrace):
		_ = syscall.Kill(-pid, syscall.SIGKILL) // the process group: postmaster and children
		<-s.done
	}
	return ctx.Err()
}

// abort stops a server whose start failed, quickly.
func (s *Server) abort() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Stop(ctx)
}

func (s *Server) removeTempDir() {
	if s.tempDir {
		_ = os.RemoveAll(s.socketDir)
	}
}

// tail keeps the last max bytes written to it: the server's output before its logging
// collector takes over, quoted in errors.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
