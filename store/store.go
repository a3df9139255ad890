package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/migrations"
	"github.com/options-record/options-record/store/partitions"
	"github.com/options-record/options-record/store/pgarray"
	"github.com/options-record/options-record/store/reads"
	"github.com/options-record/options-record/store/tamper/rowenc"
)

// Options configure a Store.
type Options struct {
	// URL is a PostgreSQL connection string (DSN or URL).
	URL string
	// MaxConns caps the pool; 0 means pgxpool's default.
	MaxConns int32
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// PartitionsAhead is how many days of event partitions exist ahead of
	// today (default 2).
	PartitionsAhead int
	// StatementTimeout and IdleInTransactionTimeout, when set, are the
	// session's statement_timeout and idle_in_transaction_session_timeout:
	// PostgreSQL cancels a statement (or ends a session idle in a
	// transaction) that runs longer.
	StatementTimeout         time.Duration
	IdleInTransactionTimeout time.Duration
	// Registerer, when set, registers the store's metrics
	// (options_record_partition_failures_total).
	Registerer prometheus.Registerer
	// TamperLog makes each batch also write a pending row per stored row
	// for the tamper-evident log's integrator (store/tamper), and retention
	// log its cutoff there before it deletes. Every ingest replica of a
	// record with a log sets it.
	TamperLog bool
	// VersionDigest, with TamperLog, begins the log's encoding of an
	// object_versions row (tamper.VersionDigest; store cannot import
	// store/tamper, whose tests import store), whose columns the batch
	// then encodes with the encoder (rowenc, the log's one encoding): a
	// batch writes each version's digest in its pending row, and the
	// integrator does not read the version back. Nil: it does.
	VersionDigest func(e *rowenc.Encoder, columns int)
	// EventDigest, with TamperLog, is the same for an events row
	// (tamper.EventDigest): a batch writes each event's digest in its
	// pending row when it knows the row's text for sure (its jsonb as
	// PostgreSQL prints it); the integrator reads back the others. Nil:
	// it reads every event back.
	EventDigest func(e *rowenc.Encoder, columns int)
	// Secondary opens another pool on a database that the process's main
	// Store has migrated and keeps partitions for: no migrations, no
	// partition upkeep, usable at once (the restore API's own pool).
	Secondary bool
}

// Store is the PostgreSQL record. Its reads (Changes, Version,
// StateBefore, Newest, AsOf, ObjectsAsOf, ResourcesIn, Objects, Deletions,
// FailedMutations, FailedMutation, RequestObjects, Activity) are those of
// the embedded reads.Reader, on the same gated pool.
type Store struct {
	*reads.Reader
	pool      *gatedPool
	conn      *pgx.ConnConfig // what Prepare migrates with
	log       *slog.Logger
	parts     *partitions.Manager
	secondary bool
	tamperLog bool
	// versionDigest and eventDigest are Options.VersionDigest and EventDigest.
	versionDigest, eventDigest func(*rowenc.Encoder, int)
	// confirmed counts the admission observations an audit event confirmed.
	confirmed prometheus.Counter
}

// Connect makes a Store without any I/O: its pool connects when a
// statement first needs a connection. A Secondary store is usable at once;
// a primary one answers ErrNotPrepared, without reaching the database,
// until Prepare has succeeded.
func Connect(opts Options) (*Store, error) {
	cfg, err := poolConfig(&opts)
	if err != nil {
		return nil, err
	}
	// pgxpool connects lazily (no minimum of idle connections is set): this
	// context is used for no I/O.
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	// partitionFailures counts the days whose partition could not be made,
	// at each attempt.
	partitionFailures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "options_record_partition_failures_total",
		Help: "Attempts to make a day's partition of events that failed (a relation of another role under its name, or an error); that day's events are refused until it is made.",
	})
	confirmed := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "options_record_observations_confirmed_total",
		Help: "Admission observations an authenticated audit event named, stored as the object's state before the write.",
	})
	gated := &gatedPool{raw: pool}
	s := &Store{Reader: reads.New(gated), pool: gated, conn: cfg.ConnConfig, log: opts.Logger,
		parts:     partitions.New(opts.PartitionsAhead, opts.Logger, partitionFailures),
		secondary: opts.Secondary, tamperLog: opts.TamperLog, versionDigest: opts.VersionDigest,
		eventDigest: opts.EventDigest, confirmed: confirmed}
	if opts.Registerer != nil && !opts.Secondary {
		for _, c := range []prometheus.Collector{partitionFailures, confirmed} {
			if err := opts.Registerer.Register(c); err != nil {
				pool.Close()
				return nil, fmt.Errorf("store: metrics: %w", err)
			}
		}
	}
	s.pool.prepared.Store(opts.Secondary)
	return s, nil
}

// poolConfig is the pool configuration of opts, with opts' defaults set.
func poolConfig(opts *Options) (*pgxpool.Config, error) {
	if opts.URL == "" {
		return nil, errors.New("store: no database URL")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PartitionsAhead <= 0 {
		opts.PartitionsAhead = 2
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("store: parse database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	params := cfg.ConnConfig.RuntimeParams
	// The write path's duplicate lookups run as prepared statements; a
	// generic plan cached before the first ANALYZE of a new partition would
	// scan it sequentially on every batch. Plan each execution instead.
	if _, ok := params["plan_cache_mode"]; !ok {
		params["plan_cache_mode"] = "force_custom_plan"
	}
	// Every query of the store reads or writes a page of rows by index. JIT
	// compiles a query whose estimate passes jit_above_cost, a guess that a
	// skewed estimate passes easily: a user's day of changes on a record of
	// 5 million versions spent 40-50 ms compiling a query that runs in 2.
	if _, ok := params["jit"]; !ok {
		params["jit"] = "off"
	}
	// No row-security policy ever filters or rewrites what the store reads:
	// a policy that would apply to a query makes it an error. The record's
	// tables have none; one planted by whoever owns a table (the ingest
	// role, for the API's reads) is refused instead of run as the reader.
	// Not overridable from the URL.
	params["row_security"] = "off"
	// The record is in public and nowhere else: PostgreSQL's default
	// search_path, "$user", public, would let a schema named after the
	// role (any role with CREATE on the database may make one) shadow the
	// record's tables and views. Not overridable from the URL.
	params["search_path"] = "public"
	// The log's array parameters (store/pgarray) are encoded in the text
	// format too, as a URL's default_query_exec_mode=simple_protocol (a
	// pgbouncer in transaction mode) asks: pgx must know their types.
	afterConnect := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		pgarray.Register(conn.TypeMap())
		if afterConnect != nil {
			return afterConnect(ctx, conn)
		}
		return nil
	}
	for param, d := range map[string]time.Duration{
		"statement_timeout":                   opts.StatementTimeout,
		"idle_in_transaction_session_timeout": opts.IdleInTransactionTimeout,
	} {
		if d > 0 {
			params[param] = strconv.FormatInt(max(d.Milliseconds(), 1), 10)
		}
	}
	return cfg, nil
}

// Prepare applies the migrations and creates the event partitions around
// today; then the store takes reads and writes. It may be called again
// after a failure (a database that does not answer yet). A Secondary store
// has nothing to prepare.
func (s *Store) Prepare(ctx context.Context) error {
	if s.secondary || s.pool.prepared.Load() {
		return nil
	}
	if err := Migrate(ctx, s.conn, s.log); err != nil {
		return err
	}
	// A day up to today that cannot be made stops ingest (its events have
	// nowhere to go); a coming day's failure is logged and counted by
	// the partitions' Manager and tried again at the next upkeep.
	now := time.Now()
	if err := s.parts.Ensure(ctx, s.pool.raw, s.parts.Around(now), partitions.Day(now)); err != nil {
		return err
	}
	s.pool.prepared.Store(true)
	return nil
}

// Open connects to PostgreSQL and prepares the store (Connect, then
// Prepare).
func Open(ctx context.Context, opts Options) (*Store, error) {
	s, err := Connect(opts)
	if err != nil {
		return nil, err
	}
	if err := s.Prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the pool.
func (s *Store) Close() { s.pool.raw.Close() }

// Pool exposes the connection pool to read-side packages of this module.
func (s *Store) Pool() *pgxpool.Pool { return s.pool.raw }

// Ping checks that the database answers (prepared or not).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.raw.Ping(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Migrate applies the embedded migrations with goose. It is safe to run from
// several replicas at once: goose serialises them with a session lock.
func Migrate(ctx context.Context, cc *pgx.ConnConfig, log *slog.Logger) error {
	// A migration may rebuild an index or a key of a large record: the
	// statement timeout of the reads and writes does not apply to it.
	cc = cc.Copy()
	cc.RuntimeParams["statement_timeout"] = "0"
	db := stdlib.OpenDB(*cc)
	defer db.Close()
	return migrate(ctx, db, log)
}

func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	locker, err := newMigrationLocker(migrationLockID)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	return up(ctx, p, log)
}

func up(ctx context.Context, p *goose.Provider, log *slog.Logger) error {
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("store: apply migrations: %w", err)
	}
	for _, r := range res {
		log.Info("applied migration", "version", r.Source.Version, "path", r.Source.Path, "duration", r.Duration)
	}
	return nil
}

// Transact runs fn in a transaction and commits it, retrying the whole
// transaction a few times on serialization failures, deadlocks and unique
// violations (a batch redelivered concurrently with itself: the retry sees
// the committed rows and skips them). It retries at once, without a
// backoff: the retry finds the other transaction's rows committed, or
// waits on its locks in PostgreSQL, so a pause of our own gains nothing
// and would only hold the webhook's request longer.
func (s *Store) Transact(ctx context.Context, fn func(pgx.Tx) error) error {
	const attempts = 4
	var err error
	for i := 0; i < attempts; i++ {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || !isConflict(err) {
			return err
		}
		s.log.Debug("retrying transaction", "attempt", i+1, "err", err)
	}
	return err
}
