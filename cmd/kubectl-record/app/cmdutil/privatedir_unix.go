//go:build unix

package cmdutil

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// privateDir refuses a directory of another user, or one that group or
// others may write into (they could replace a manifest before it is
// applied).
func privateDir(dir string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you: export writes into a directory of yours", format.Cell(dir), st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by others (%v): export writes into a directory only you can write (chmod go-w)", format.Cell(dir), fi.Mode().Perm())
	}
	return nil
}

// trustedLink refuses a symbolic link of another user than this one or
// root: whoever owns it chooses where the export goes.
func trustedLink(path string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is a symbolic link of uid %d: export follows only your links and root's (give the directory itself)", format.Cell(path), st.Uid)
	}
	return nil
}
