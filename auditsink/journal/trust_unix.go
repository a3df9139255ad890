//go:build unix

package journal

import (
	"fmt"
	"os"
	"syscall"
)

// oNoFollow makes an open fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// checkDir refuses a journal directory another user could write to: one
// not owned by this process's user, or writable by others, or by a group
// other than the process's own (a volume mounted with the pod's fsGroup
// as runAsGroup is group-writable by the process alone). Whoever can write
// there can plant records, which the sink would store as the apiserver's
// events, or links its files would be written through.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("journal: %s is not a directory", dir)
	case !ok:
		return nil
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("journal: %s is owned by uid %d, not by this process's user (uid %d): give the journal a directory of its own", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o002 != 0:
		return fmt.Errorf("journal: %s is writable by every user (mode %v): chmod o-w it, or give the journal a directory of its own", dir, fi.Mode().Perm())
	case fi.Mode().Perm()&0o020 != 0 && int(st.Gid) != os.Getegid():
		return fmt.Errorf("journal: %s is writable by group %d, not this process's group (gid %d): chmod g-w it", dir, st.Gid, os.Getegid())
	}
	return nil
}
