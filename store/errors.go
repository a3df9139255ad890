package store

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsRetryable reports whether err is a PostgreSQL error that running the
// same transaction again resolves: a serialization failure (40001), a
// deadlock (40P01) or a unique violation (23505, a batch redelivered
// concurrently with itself: the retry sees the committed rows and skips
// them). Transact retries these.
func IsRetryable(err error) bool {
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
func IsPermanent(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) != 5 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "54":
		return true
	case "23":
		return pe.Code != "23505"
	}
	return false
}
