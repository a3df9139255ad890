package store

// The restores table: restores and plans the API records and executes, in
// the API's own schema (APIStore).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Restore states.
const (
	RestorePlanned   = "planned"
	RestoreRunning   = "running"
	RestoreSucceeded = "succeeded"
	RestorePartial   = "partial"
	RestoreFailed    = "failed"
	RestoreRefused   = "refused"
)

// RestoreRecord is a row of the restores table. Request, Plan and Outcome
// are JSON documents of the restore API.
type RestoreRecord struct {
	Cluster    string     `db:"cluster"`
	ID         string     `db:"id"`
	Kind       string     `db:"kind"` // version, as-of, undo
	CreatedAt  time.Time  `db:"created_at"`
	Username   string     `db:"username"`
	UserUID    string     `db:"user_uid"`
	UserGroups []string   `db:"user_groups"`
	UserExtra  []byte     `db:"user_extra"`
	Request    []byte     `db:"request"`
	Plan       []byte     `db:"plan"`
	DryRun     bool       `db:"dry_run"`
	State      string     `db:"state"`
	ExecutedAt *time.Time `db:"executed_at"`
	FinishedAt *time.Time `db:"finished_at"`
	Outcome    []byte     `db:"outcome"`
	PlanID     *string    `db:"plan_id"`
	// ObjectNamespace and ObjectName name a restore created as an object of
	// the aggregated API; empty otherwise.
	ObjectNamespace string `db:"object_namespace"`
	ObjectName      string `db:"object_name"`
}

const restoreColumns = `cluster, id::text AS id, kind, created_at, username, coalesce(user_uid, '') AS user_uid,
       user_groups, user_extra, request, plan, dry_run, state, executed_at, finished_at, outcome, plan_id::text AS plan_id,
       coalesce(object_namespace, '') AS object_namespace, coalesce(object_name, '') AS object_name`

const insertRestoreSQL = `
INSERT INTO options_record_api.restores (cluster, kind, username, user_uid, user_groups, user_extra, request, plan, dry_run,
                      state, executed_at, finished_at, outcome, plan_id, object_namespace, object_name)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::uuid, $15, $16)
RETURNING ` + restoreColumns

// InsertRestore records a restore (a plan to review, or one already carried
// out) and returns the stored row with its id and creation time.
func (s *APIStore) InsertRestore(ctx context.Context, r *RestoreRecord) (*RestoreRecord, error) {
	// A restore named as an object has a namespace, "" for a cluster
	// restore (not NULL: the name is unique within it).
	objNS := nullString(r.ObjectNamespace)
	if r.ObjectName != "" {
		objNS = r.ObjectNamespace
	}
	rows, err := s.pool.Query(ctx, insertRestoreSQL, r.Cluster, r.Kind, r.Username, nullString(r.UserUID),
		nonNil(r.UserGroups), nullJSON(r.UserExtra), r.Request, r.Plan, r.DryRun, r.State,
		r.ExecutedAt, r.FinishedAt, nullJSON(r.Outcome), r.PlanID, objNS, nullString(r.ObjectName))
	if err != nil {
		return nil, fmt.Errorf("store: record restore: %w", err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[RestoreRecord])
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "restores_object_name" {
		return nil, fmt.Errorf("restore %s/%s: %w", r.ObjectNamespace, r.ObjectName, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("store: record restore: %w", err)
	}
	return out, nil
}

const restoreByNameSQL = `SELECT ` + restoreColumns + ` FROM options_record_api.restores
WHERE cluster = $1 AND username = $2 AND coalesce(user_uid, '') = $3 AND object_namespace = $4 AND object_name = $5
  AND NOT dry_run`

// RestoreNamed returns the restore the user (name and uid, "" when the
// authenticator gives none) created as the object namespace/name (not a
// dry run), or ErrNotFound. Names are each user's own.
func (s *APIStore) RestoreNamed(ctx context.Context, cluster, username, userUID, namespace, name string) (*RestoreRecord, error) {
	return s.oneRestore(ctx, restoreByNameSQL, cluster, username, userUID, namespace, name)
}

const namedRestoresSQL = `SELECT ` + restoreColumns + ` FROM options_record_api.restores
WHERE cluster = $1 AND object_name IS NOT NULL AND NOT dry_run AND username = $2
  AND ($3::text IS NULL OR object_namespace = $3)
  AND ($4::boolean IS NULL OR (kind = 'version' OR plan_id IS NOT NULL) = $4)
  AND (NOT $5 OR object_namespace <> '')
  AND ($6::timestamptz IS NULL OR (created_at, id) < ($6, $7::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $8`

// NamedRestoreQuery selects the restores one user created as objects.
type NamedRestoreQuery struct {
	Cluster, Username string
	// Namespace, when set, is the only namespace ("" for cluster-scoped
	// restores and plans).
	Namespace *string
	// Namespaced leaves out cluster-scoped ones (a list across namespaces).
	Namespaced bool
	// Restores, when set, keeps restores (true) or plans (false) only.
	Restores *bool
	// After is the last row of the previous page: CreatedAt and ID.
	AfterAt time.Time
	AfterID string
	Limit   int
}

// NamedRestores returns the restores a user created as objects, newest
// first, a page at a time.
func (s *APIStore) NamedRestores(ctx context.Context, q NamedRestoreQuery) ([]RestoreRecord, error) {
	var afterAt *time.Time
	afterID := q.AfterID
	if !q.AfterAt.IsZero() {
		afterAt = &q.AfterAt
	}
	if afterID == "" {
		afterID = "00000000-0000-0000-0000-000000000000"
	}
	rows, err := s.pool.Query(ctx, namedRestoresSQL, q.Cluster, q.Username, q.Namespace,
		q.Restores, q.Namespaced, afterAt, afterID, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("store: named restores: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[RestoreRecord])
	if err != nil {
		return nil, fmt.Errorf("store: named restores: %w", err)
	}
	return out, nil
}

const restoreByIDSQL = `SELECT ` + restoreColumns + ` FROM options_record_api.restores WHERE cluster = $1 AND id = $2::uuid`

// Restore returns a recorded restore, or ErrNotFound (also for an id that
// is not a UUID).
func (s *APIStore) Restore(ctx context.Context, cluster, id string) (*RestoreRecord, error) {
	if !isUUID(id) {
		return nil, fmt.Errorf("restore %q: %w", id, ErrNotFound)
	}
	return s.oneRestore(ctx, restoreByIDSQL, cluster, id)
}

const claimRestoreSQL = `
UPDATE options_record_api.restores SET state = 'running', executed_at = now()
WHERE cluster = $1 AND id = $2::uuid AND state = 'planned' AND NOT dry_run
RETURNING ` + restoreColumns

// ClaimRestore moves a planned restore to running, so it runs once. It
// returns ErrNotFound when the plan does not exist or is no longer planned.
func (s *APIStore) ClaimRestore(ctx context.Context, cluster, id string) (*RestoreRecord, error) {
	if !isUUID(id) {
		return nil, fmt.Errorf("restore %q: %w", id, ErrNotFound)
	}
	return s.oneRestore(ctx, claimRestoreSQL, cluster, id)
}

const finishRestoreSQL = `
UPDATE options_record_api.restores SET state = $3, finished_at = now(), outcome = $4
WHERE cluster = $1 AND id = $2::uuid`

// FinishRestore stores the outcome of a restore that ran.
func (s *APIStore) FinishRestore(ctx context.Context, cluster, id, state string, outcome []byte) error {
	tag, err := s.pool.Exec(ctx, finishRestoreSQL, cluster, id, state, nullJSON(outcome))
	if err != nil {
		return fmt.Errorf("store: finish restore %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("finish restore %s: %w", id, ErrNotFound)
	}
	return nil
}

func (s *APIStore) oneRestore(ctx context.Context, sql string, args ...any) (*RestoreRecord, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("store: restore: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[RestoreRecord])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("restore: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: restore: %w", err)
	}
	return r, nil
}

// isUUID checks the textual form PostgreSQL's uuid type prints.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}
