package store

import (
	"fmt"

	"github.com/pressly/goose/v3/lock"
)

// migrationLockID is the advisory lock key that serialises migrations across
// sink replicas ("optrec" in ASCII).
const migrationLockID = 0x6f70747265630001

func newMigrationLocker() (lock.SessionLocker, error) {
	l, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return nil, fmt.Errorf("store: migration lock: %w", err)
	}
	return l, nil
}
