package store

import (
	"fmt"

	"github.com/pressly/goose/v3/lock"
)

// migrationLockID is the advisory lock key that serialises migrations across
// sink replicas ("optrec" in ASCII).
const migrationLockID = 0x6f70747265630001

// apiMigrationLockID serialises the restore API's migrations across its
// replicas.
const apiMigrationLockID = 0x6f70747265630002

// apiSchemaLockID serialises the creation of the restore API's schema
// across its replicas (before its migrations, whose goose table is in it).
const apiSchemaLockID = 0x6f70747265630004

func newMigrationLocker(id int64) (lock.SessionLocker, error) {
	l, err := lock.NewPostgresSessionLocker(lock.WithLockID(id))
	if err != nil {
		return nil, fmt.Errorf("store: migration lock: %w", err)
	}
	return l, nil
}
