package ui

import (
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultHandoverDir is where the hand-over file's private directory is
// made unless one is given: on Linux the user's home, when it is the
// user's own (not another's, as under sudo) and others may not write it;
// else the temporary directory.
//
// The home, because the default browser of Ubuntu (22.04 and later) is a
// snap: it has its own /tmp and its own $XDG_RUNTIME_DIR, and its "home"
// interface reads only non-hidden files of $HOME (~/.local/share, where
// notebook servers put theirs, is hidden from it). The directory made
// there is named kubectl-record-ui-<random> and goes with the server.
func DefaultHandoverDir() string {
	if runtime.GOOS == "linux" {
		if home := os.Getenv("HOME"); home != "" && filepath.IsAbs(home) {
			if fi, err := os.Stat(home); err == nil && mine(fi) && checkHandoverBase(home, fi) == nil {
				return filepath.Clean(home)
			}
		}
	}
	return os.TempDir()
}

// Handover writes a page that opens URL (query appended to it, as
// "&k=v") into a new private directory (0700, the file 0600, created,
// never followed) and returns its file:// URL: what a browser is started
// with instead of the token. The directory is made in Options.HandoverDir
// (default: DefaultHandoverDir), which must be the user's or root's and
// not writable by others unless sticky: whoever can rename in it could
// put a directory of theirs where the token is written. Close removes it.
func (s *Server) Handover(query string) (string, error) {
	bases := []string{s.opts.HandoverDir}
	if bases[0] == "" {
		// The default, or the temporary directory when the home
		// refuses it (a home of root's the user cannot write, say).
		bases = []string{DefaultHandoverDir(), os.TempDir()}
	}
	var dir string
	var err error
	for _, base := range bases {
		if dir, err = makeHandoverDir(base); err == nil {
			break
		}
	}
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.handover = dir
	s.mu.Unlock()
	path := filepath.Join(dir, "open.html")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL: never through a link
	if err != nil {
		return "", fmt.Errorf("ui: hand-over file: %w", err)
	}
	err = handoverPage.Execute(f, template.URL(s.URL()+query))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("ui: hand-over file: %w", err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String(), nil
}

// makeHandoverDir makes the private directory in base, once base is
// checked, and checks the directory made as it is: a real directory, the
// user's, 0700 (the umask only takes bits away).
func makeHandoverDir(base string) (string, error) {
	base = filepath.Clean(base)
	fi, err := os.Stat(base)
	if err == nil {
		err = checkHandoverBase(base, fi)
	}
	if err != nil {
		return "", fmt.Errorf("ui: hand-over directory: %w", err)
	}
	dir, err := os.MkdirTemp(base, "kubectl-record-ui-")
	if err != nil {
		return "", fmt.Errorf("ui: hand-over directory: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !mine(fi) {
		_ = os.Remove(dir)
		return "", fmt.Errorf("ui: hand-over directory %s is not the private directory made (%v)", dir, err)
	}
	return dir, nil
}

// errNotADirectory is a hand-over directory that is not one.
var errNotADirectory = errors.New("not a directory")

func checkHandoverBase(dir string, fi os.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w", dir, errNotADirectory)
	}
	return privateBase(dir, fi)
}
