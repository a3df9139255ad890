package store

// The restore API's own pool: the owner of the schema APISchema, which
// never reads what the ingest role owns.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/options-record/options-record/migrations"
)

// APISchema is the schema the restore API owns: its restores and plans, and
// its migrations' goose table. The ingest role and the record's reader have
// no privilege on it.
const APISchema = "options_record_api"

// APIStore is the restore API's log of restores and plans, in APISchema,
// on a pool of its own that logs in as the schema's owner. That pool never
// reads the record: PostgreSQL runs what a table's owner attached to it (a
// row-security policy, a function a view calls, a view) with the rights of
// the role that reads it, so the role that may write the restores must
// never read a table, view or function the ingest role owns. Its sessions'
// search_path is APISchema alone, and none of its statements names
// anything in public; the record is read through a Store that logs in as
// another role (the reader), and what the API needs from it (the
// retention cutoff) is passed as a parameter.
type APIStore struct {
	pool *gatedPool
	conn *pgx.ConnConfig
	log  *slog.Logger
}

// ConnectAPI makes the restore API's store without any I/O; it answers
// ErrNotPrepared until Prepare has applied its migrations. Of opts, URL,
// MaxConns, Logger and the timeouts apply.
func ConnectAPI(opts Options) (*APIStore, error) {
	cfg, err := poolConfig(&opts)
	if err != nil {
		return nil, err
	}
	// Nothing outside the API's own schema resolves (pg_catalog is always
	// searched first), whatever the URL says.
	cfg.ConnConfig.RuntimeParams["search_path"] = APISchema
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return &APIStore{pool: &gatedPool{raw: pool}, conn: cfg.ConnConfig, log: opts.Logger}, nil
}

// OpenAPI connects the restore API's store and prepares it (ConnectAPI,
// then Prepare with record).
func OpenAPI(ctx context.Context, opts Options, record *Store) (*APIStore, error) {
	a, err := ConnectAPI(opts)
	if err != nil {
		return nil, err
	}
	if err := a.Prepare(ctx, record); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Close releases the pool.
func (a *APIStore) Close() { a.pool.raw.Close() }

// Pool exposes the connection pool (tests, and read-side packages of this
// module).
func (a *APIStore) Pool() *pgxpool.Pool { return a.pool.raw }

// Ping checks that the database answers.
func (a *APIStore) Ping(ctx context.Context) error {
	if err := a.pool.raw.Ping(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Prepare applies the restore API's own migrations (migrations/api) to
// APISchema, creating the schema first if it does not exist and the role
// may (a database administrator who splits the roles creates it, owned by
// the API's role: deploy/components/postgres/roles.sql). The record's own
// migrations need not have run, nor be finished: nothing here reads the
// record. When it creates the restores table (the API's first start on
// this release), it copies the restores an older release kept in
// public.restores, read through record (the reader's pool; nil: none).
func (a *APIStore) Prepare(ctx context.Context, record *Store) error {
	if a.pool.prepared.Load() {
		return nil
	}
	cc := a.conn.Copy()
	cc.RuntimeParams["statement_timeout"] = "0"
	db := stdlib.OpenDB(*cc)
	defer db.Close()
	// One replica creates the schema: CREATE SCHEMA IF NOT EXISTS run by
	// two sessions at once fails one of them (a unique violation).
	err := pgx.BeginFunc(ctx, a.pool.raw, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(apiSchemaLockID)); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", APISchema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+APISchema); err != nil {
				return fmt.Errorf("create the schema %s (or have an administrator create it, owned by this role: deploy/components/postgres/roles.sql): %w", APISchema, err)
			}
		}
		return checkAPISchemaOwned(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("store: API schema: %w", err)
	}
	locker, err := newMigrationLocker(apiMigrationLockID)
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrations.FS, "api")
	if err != nil {
		return fmt.Errorf("store: API migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithSessionLocker(locker),
		goose.WithTableName(APISchema+".goose_db_version"))
	if err != nil {
		return fmt.Errorf("store: API migrations: %w", err)
	}
	if err := up(ctx, p, a.log); err != nil {
		return err
	}
	a.pool.prepared.Store(true)
	if record != nil {
		n, err := a.copyOldRestores(ctx, record)
		if err != nil {
			// The old rows stay in public.restores and the copy stays
			// pending for the next start; the API runs without them
			// rather than not at all.
			a.log.Error("restores of an older release not copied yet (they stay in public.restores; the next start tries again)", "err", err)
		} else if n > 0 {
			a.log.Info("restores of an older release copied", "rows", n)
		}
	}
	return nil
}

// foreignInAPISchemaSQL lists what in APISchema the current user does not
// own (the schema, a relation, a routine, a type, an operator and the
// other kinds a schema holds), and every trigger, rule and row-security
// policy on its tables (its migrations make none): each as a kind, a name
// and the role that owns it (of a trigger, its function's owner).
const foreignInAPISchemaSQL = `
WITH s AS (SELECT oid, nspowner FROM pg_namespace WHERE nspname = $1),
     me AS (SELECT oid FROM pg_roles WHERE rolname = current_user)
SELECT 'schema', $1::text, pg_get_userbyid(s.nspowner) FROM s WHERE s.nspowner <> (SELECT oid FROM me)
UNION ALL SELECT 'relation', c.oid::regclass::text, pg_get_userbyid(c.relowner) FROM pg_class c, s
    WHERE c.relnamespace = s.oid AND c.relowner <> (SELECT oid FROM me)
UNION ALL SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner) FROM pg_proc p, s
    WHERE p.pronamespace = s.oid AND p.proowner <> (SELECT oid FROM me)
UNION ALL SELECT 'type', t.oid::regtype::text, pg_get_userbyid(t.typowner) FROM pg_type t, s
    WHERE t.typnamespace = s.oid AND t.typowner <> (SELECT oid FROM me)
UNION ALL SELECT 'operator', o.oid::regoperator::text, pg_get_userbyid(o.oprowner) FROM pg_operator o, s
    WHERE o.oprnamespace = s.oid AND o.oprowner <> (SELECT oid FROM me)
UNION ALL SELECT 'collation', x.collname::text, pg_get_userbyid(x.collowner) FROM pg_collation x, s
    WHERE x.collnamespace = s.oid AND x.collowner <> (SELECT oid FROM me)
UNION ALL SELECT 'conversion', x.conname::text, pg_get_userbyid(x.conowner) FROM pg_conversion x, s
    WHERE x.connamespace = s.oid AND x.conowner <> (SELECT oid FROM me)
UNION ALL SELECT 'operator class', x.opcname::text, pg_get_userbyid(x.opcowner) FROM pg_opclass x, s
    WHERE x.opcnamespace = s.oid AND x.opcowner <> (SELECT oid FROM me)
UNION ALL SELECT 'operator family', x.opfname::text, pg_get_userbyid(x.opfowner) FROM pg_opfamily x, s
    WHERE x.opfnamespace = s.oid AND x.opfowner <> (SELECT oid FROM me)
UNION ALL SELECT 'text search configuration', x.cfgname::text, pg_get_userbyid(x.cfgowner) FROM pg_ts_config x, s
    WHERE x.cfgnamespace = s.oid AND x.cfgowner <> (SELECT oid FROM me)
UNION ALL SELECT 'text search dictionary', x.dictname::text, pg_get_userbyid(x.dictowner) FROM pg_ts_dict x, s
    WHERE x.dictnamespace = s.oid AND x.dictowner <> (SELECT oid FROM me)
UNION ALL SELECT 'statistics object', x.stxname::text, pg_get_userbyid(x.stxowner) FROM pg_statistic_ext x, s
    WHERE x.stxnamespace = s.oid AND x.stxowner <> (SELECT oid FROM me)
UNION ALL SELECT 'trigger', g.tgname || ' on ' || g.tgrelid::regclass::text, pg_get_userbyid(p.proowner)
    FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_proc p ON p.oid = g.tgfoid, s
    WHERE c.relnamespace = s.oid AND NOT g.tgisinternal
UNION ALL SELECT 'rule', w.rulename || ' on ' || w.ev_class::regclass::text, pg_get_userbyid(c.relowner)
    FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class, s
    WHERE c.relnamespace = s.oid AND w.rulename <> '_RETURN'
UNION ALL SELECT 'policy', y.polname || ' on ' || y.polrelid::regclass::text, pg_get_userbyid(c.relowner)
    FROM pg_policy y JOIN pg_class c ON c.oid = y.polrelid, s
    WHERE c.relnamespace = s.oid
LIMIT 20`

// checkAPISchemaOwned refuses APISchema unless this login owns it and all
// in it, and no trigger, rule or policy is on its tables. A schema another
// role made first (any role with CREATE on the database may: often the
// ingest role, as the database's owner) or put something into would let
// that role rewrite the plans the API executes as their owner.
func checkAPISchemaOwned(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, foreignInAPISchemaSQL, APISchema)
	if err != nil {
		return err
	}
	var found []string
	var kind, name, owner string
	_, err = pgx.ForEachRow(rows, []any{&kind, &name, &owner}, func() error {
		found = append(found, fmt.Sprintf("%s %s owned by %q", kind, name, owner))
		return nil
	})
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	var me string
	if err := tx.QueryRow(ctx, "SELECT current_user").Scan(&me); err != nil {
		return err
	}
	return fmt.Errorf("refusing the schema %s: not this role's (%q) alone: %s; an administrator must hand the schema and all in it to %q and drop what its migrations did not make, or drop the schema (deploy/components/postgres/roles.sql)",
		APISchema, me, strings.Join(found, "; "), me)
}

// oldRestoresSQL reads public.restores as the reader, each row as a JSON
// object: the columns an older release's record has (the record's
// migrations may be running at the same time, and add columns) are there,
// the others are absent.
const oldRestoresSQL = `SELECT to_jsonb(r) FROM public.restores r`

type oldRestore struct {
	Cluster         string          `json:"cluster"`
	ID              string          `json:"id"`
	Kind            string          `json:"kind"`
	CreatedAt       time.Time       `json:"created_at"`
	Username        string          `json:"username"`
	UserUID         *string         `json:"user_uid"`
	UserGroups      []string        `json:"user_groups"`
	UserExtra       json.RawMessage `json:"user_extra"`
	Request         json.RawMessage `json:"request"`
	Plan            json.RawMessage `json:"plan"`
	DryRun          bool            `json:"dry_run"`
	State           string          `json:"state"`
	ExecutedAt      *time.Time      `json:"executed_at"`
	FinishedAt      *time.Time      `json:"finished_at"`
	Outcome         json.RawMessage `json:"outcome"`
	PlanID          *string         `json:"plan_id"`
	ObjectNamespace *string         `json:"object_namespace"`
	ObjectName      *string         `json:"object_name"`
}

const copyRestoreSQL = `
INSERT INTO options_record_api.restores (cluster, id, kind, created_at, username, user_uid, user_groups, user_extra,
    request, plan, dry_run, state, executed_at, finished_at, outcome, plan_id, object_namespace, object_name)
VALUES ($1, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::uuid, $17, $18)
ON CONFLICT DO NOTHING`

// importedOutcome is the outcome of a plan or restore copied from
// public.restores in state planned or running: it is never executed.
var importedOutcome = []byte(`[{"index":0,"action":"","result":"failed","message":"imported from the record's table public.restores when the restore API moved to its own schema, and not executed: that table was writable by the record's owner, so neither who made the plan nor its steps can be trusted; plan it again"}]`)

// copyOldRestores copies the rows of public.restores, read through record,
// into the API's table, once: in the transaction that removes the pending
// mark the API's first migration set (none: copied already, or an install
// that copied in SQL), so a copy cut off is made again, and rows written
// into public.restores after it are never taken. It returns how many rows
// it copied. A record without that table (a new install whose ingest has
// not migrated yet) has none.
//
// The old table was the ingest role's: any of its rows may have been
// written by a stolen ingest credential, under any user's name. A row in
// state planned or running is copied as refused, with importedOutcome,
// so that it is never executed (nor left running forever); the rest are
// history, shown as they were. The rows are read one at a time.
func (a *APIStore) copyOldRestores(ctx context.Context, record *Store) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, a.pool.raw, func(tx pgx.Tx) error {
		var pending bool
		err := tx.QueryRow(ctx, `DELETE FROM options_record_api.old_restores_pending RETURNING singleton`).Scan(&pending)
		var pe *pgconn.PgError
		if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pe) && pe.Code == "42P01") {
			return nil
		}
		if err != nil {
			return err
		}
		return readOldRestores(ctx, record, func(raw []byte) error {
			var r oldRestore
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("a row of public.restores: %w", err)
			}
			outcome := jsonOrNil(r.Outcome)
			if r.State == RestorePlanned || r.State == RestoreRunning {
				r.State, outcome = RestoreRefused, importedOutcome
				if r.FinishedAt == nil {
					now := time.Now()
					r.FinishedAt = &now
				}
			}
			tag, err := tx.Exec(ctx, copyRestoreSQL, r.Cluster, r.ID, r.Kind, r.CreatedAt, r.Username, r.UserUID,
				nonNil(r.UserGroups), nullJSON(jsonOrNil(r.UserExtra)), []byte(r.Request), []byte(r.Plan), r.DryRun, r.State,
				r.ExecutedAt, r.FinishedAt, nullJSON(outcome), r.PlanID, r.ObjectNamespace, r.ObjectName)
			if err != nil {
				return fmt.Errorf("copy restore %s: %w", r.ID, err)
			}
			n += tag.RowsAffected()
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// readOldRestores reads public.restores through record, the reader's pool
// (no statement of the API's own login reads what the ingest role owns),
// calling each with one row at a time: the table is never held in memory
// whole.
func readOldRestores(ctx context.Context, record *Store, each func([]byte) error) error {
	rows, err := record.pool.raw.Query(ctx, oldRestoresSQL)
	if err == nil {
		var raw []byte
		_, err = pgx.ForEachRow(rows, []any{&raw}, func() error { return each(raw) })
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return nil
	}
	return err
}

// jsonOrNil is nil for an absent or null JSON value.
func jsonOrNil(m json.RawMessage) []byte {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}
