//go:build !unix

package journal

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir creates dir/LOCK; without flock(2) it cannot keep another
// process out.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: lock: %w", err)
	}
	return f, nil
}
