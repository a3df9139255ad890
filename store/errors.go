package store

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/reads"
)

// ErrNotFound is returned by reads that find no row. It is an
// errs.ErrNotFound, so errs.Status answers it 404 (defined with the reads,
// which return it too).
var ErrNotFound = reads.ErrNotFound

// ErrExists is returned for a restore whose object name is already taken.
var ErrExists = errors.New("store: already exists")

// ErrNotPrepared is what a primary Store answers, without reaching the
// database, until Prepare has applied the migrations: nothing is read or
// written in a schema that may be behind the code. It is retryable.
var ErrNotPrepared = errors.New("store: the database is not prepared yet (migrations not applied)")

// IsRetryable reports whether the same work done again later can succeed:
// ErrNotPrepared, or a PostgreSQL error that running the same transaction
// again resolves (see isConflict).
func IsRetryable(err error) bool {
	return errors.Is(err, ErrNotPrepared) || isConflict(err)
}

// isConflict reports whether err is a PostgreSQL error that running the
// same transaction again at once resolves: a serialization failure
// (40001), a deadlock (40P01) or a unique violation (23505, a batch
// redelivered concurrently with itself: the retry sees the committed rows
// and skips them). Transact retries these.
func isConflict(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01", "23505":
		return true
	}
	return false
}

// IsPermanent reports whether err is about the data rather than the
// database's availability: writing the same batch again cannot succeed.
// These are PostgreSQL's data exceptions (SQLSTATE class 22, e.g. a NUL
// character in text), program limits (class 54, e.g. a value too long for
// an index entry) and integrity violations (class 23) other than a unique
// violation, which is retryable. Anything else, including an error that is
// not PostgreSQL's (a refused connection, a timeout), is not permanent.
func IsPermanent(err error) bool { return model.IsInvalidData(err) }
