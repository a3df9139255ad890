package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/options-record/options-record/store/partitions"
)

func TestErrorClassification(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return &pgconn.PgError{Code: code} }
	for _, tc := range []struct {
		name                 string
		err                  error
		retryable, permanent bool
	}{
		{"serialization failure", pg("40001"), true, false},
		{"deadlock", pg("40P01"), true, false},
		{"unique violation: a concurrent writer, resolved by a retry", pg("23505"), true, false},
		{"invalid byte sequence", pg("22021"), false, true},
		{"string too long", pg("22001"), false, true},
		{"not-null violation", pg("23502"), false, true},
		{"foreign key violation", pg("23503"), false, true},
		{"check violation", pg("23514"), false, true},
		{"index row size exceeds the maximum", pg("54000"), false, true},
		{"admin shutdown", pg("57P01"), false, false},
		{"query canceled (statement timeout)", pg("57014"), false, false},
		{"connection failure", pg("08006"), false, false},
		{"disk full: the database's, it comes back", pg("53100"), false, false},
		{"insufficient privilege: an operator fixes it", pg("42501"), false, false},
		{"undefined table", pg("42P01"), false, false},
		{"malformed code", pg("22"), false, false},
		{"wrapped", fmt.Errorf("store: write batch of 3 events: %w", pg("22021")), false, true},
		{"wrapped retryable", fmt.Errorf("store: write: %w", pg("40001")), true, false},
		{"joined", errors.Join(errors.New("rollback failed"), pg("23502")), false, true},
		{"not PostgreSQL's", errors.New("dial tcp 10.0.0.5:5432: connect: connection refused"), false, false},
		{"deadline", context.DeadlineExceeded, false, false},
		{"store not prepared yet", fmt.Errorf("store: write batch of 3 events: %w", ErrNotPrepared), true, false},
		{"nil", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := IsRetryable(tc.err); got != tc.retryable {
				t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.retryable)
			}
			if got := IsPermanent(tc.err); got != tc.permanent {
				t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.permanent)
			}
		})
	}
}

// TestAdvisoryLockKeysAreDistinct: each advisory lock serialises one kind
// of work; two sharing a key make one wait for the other (partition DDL,
// and so every write of a replica, behind the restore API's migrations).
func TestAdvisoryLockKeysAreDistinct(t *testing.T) {
	keys := map[string]int64{"migration": migrationLockID, "api migration": apiMigrationLockID, "api schema": apiSchemaLockID,
		"partition": partitions.LockID, "retention": retentionLock, "key index": partitions.KeyIndexLockID}
	seen := map[int64]string{}
	for name, k := range keys {
		if other, ok := seen[k]; ok {
			t.Errorf("the %s and %s locks share the key %#x", name, other, k)
		}
		seen[k] = name
	}
}
