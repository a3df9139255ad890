//go:build unix

package app

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// privateDir refuses a directory of another user, or one that group or
// others may write into (they could replace a manifest before it is
// applied).
func privateDir(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you: export writes into a directory of yours", cell(dir), st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (%v): export writes into a directory only you can write (chmod go-w)", cell(dir), fi.Mode().Perm())
	}
	return nil
}
