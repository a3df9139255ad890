package journal

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back (its
// size), not its times: fdatasync(2).
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
