//go:build unix

package ui

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// privateBase refuses a directory of another user than this one or root,
// and one that group or others may write without the sticky bit (which
// keeps them from renaming what is not theirs, as in /tmp).
func privateBase(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you (give a directory of yours with --handover-dir)", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("%s is writable by others (%v) and not sticky (give a directory of yours with --handover-dir)", dir, fi.Mode().Perm())
	}
	return nil
}

// mine is whether this user owns fi.
func mine(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
