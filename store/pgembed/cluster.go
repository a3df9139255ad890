package pgembed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

const (
	port = 5432
	// socketFile is the name of the server's socket in its socket directory.
	socketFile = ".s.PGSQL.5432"
	// maxSocketPath is the longest socket path the kernel accepts (sun_path is 108 bytes with NUL).
	maxSocketPath = 107
)

// ErrAlreadyRunning reports that a live postgres already serves the cluster in the data directory.
var ErrAlreadyRunning = errors.New("pgembed: cluster already running")

// safePath is what a socket directory may contain: it goes unquoted into the
// unix_socket_directories list and into a DSN's host, where commas separate hosts.
var safePath = regexp.MustCompile(`^[A-Za-z0-9/._+-]+$`)

// socketDirFits reports whether dir can hold the server socket.
func socketDirFits(dir string) bool {
	return safePath.MatchString(dir) && len(filepath.Join(dir, socketFile)) <= maxSocketPath
}

// runningPID returns the pid of a live postmaster serving pgdata, or 0. A stale postmaster.pid
// (its process gone or not a postgres) is left for postgres, which replaces it.
func runningPID(pgdata string) int {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil &&
		!strings.HasPrefix(strings.TrimSpace(string(comm)), "postgres") {
		return 0 // the pid was reused by something else
	}
	return pid
}

// clusterMajor returns the PostgreSQL major version of the cluster in pgdata, or "" if there is none.
func clusterMajor(pgdata string) string {
	b, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// initdb creates the cluster in pgdata (an empty directory the account owns).
func (s *Server) initdb(ctx context.Context, binDir string, fsync bool) error {
	args := []string{
		"--pgdata=" + s.pgdata,
		"--username=" + s.account.name,
		"--encoding=UTF8",
		"--no-locale", // byte-order collation: no glibc collation upgrades to worry about
		"--auth-local=trust",
		"--auth-host=reject",
		"--no-instructions",
	}
	if fsync {
		args = append(args, "--data-checksums")
	} else {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), args...)
	cmd.Dir = s.dataDir
	cmd.Env = s.account.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.account.cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgembed: initdb %s: %w: %s", s.pgdata, err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// prepareSocketDir returns a private directory for the socket: DataDir/run, or a fresh one
// under os.TempDir() (then /tmp) when that path is too long; temp reports the latter.
func (s *Server) prepareSocketDir() (dir string, temp bool, err error) {
	dir = filepath.Join(s.dataDir, "run")
	if socketDirFits(dir) {
		if err := s.account.mkdirOwned(dir); err != nil {
			return "", false, err
		}
		// The directory is pgembed's: whatever happened to it, make it private again.
		if s.account.cred != nil {
			if err := os.Chown(dir, int(s.account.uid), int(s.account.gid)); err != nil {
				return "", false, fmt.Errorf("pgembed: socket dir: %w", err)
			}
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", false, fmt.Errorf("pgembed: socket dir: %w", err)
		}
		return dir, false, nil
	}
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		if !socketDirFits(filepath.Join(parent, "pgembed-0000000000")) {
			continue
		}
		dir, err := os.MkdirTemp(parent, "pgembed-") // mode 0700
		if err != nil {
			return "", false, fmt.Errorf("pgembed: socket dir: %w", err)
		}
		if err := s.account.own(dir); err != nil {
			_ = os.Remove(dir)
			return "", false, err
		}
		if err := s.account.checkReachable(dir); err != nil {
			_ = os.Remove(dir)
			return "", false, err
		}
		return dir, true, nil
	}
	return "", false, fmt.Errorf("pgembed: no short enough directory for the server socket (%s and %s are too long)", filepath.Join(s.dataDir, "run"), os.TempDir())
}
