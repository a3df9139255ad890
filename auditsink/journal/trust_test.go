//go:build unix

package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnUntrustedDirectoryIsRefused: the journal refuses, at start-up and
// saying why, a directory (or quarantine/) another user could write to:
// owned by another user, writable by every user, or by a group that is
// not the process's. Its own directory, also group-writable by its own
// group (a volume mounted with fsGroup = runAsGroup), is taken.
func TestAnUntrustedDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	other := os.Geteuid() + 4242
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // in the error; "" opens
	}{
		{"its own, 0700", func(*testing.T, string) {}, ""},
		{"group-writable by its own group", func(t *testing.T, dir string) { chmod(t, dir, 0o770) }, ""},
		{"writable by every user", func(t *testing.T, dir string) { chmod(t, dir, 0o777) }, "writable by every user"},
		{"world-writable quarantine", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, quarantineDir))
			chmod(t, filepath.Join(dir, quarantineDir), 0o703)
		}, "writable by every user"},
		{"owned by another user", func(t *testing.T, dir string) { chown(t, dir, other, os.Getegid()) }, "owned by uid"},
		{"group-writable by another group", func(t *testing.T, dir string) {
			chown(t, dir, os.Geteuid(), other)
			chmod(t, dir, 0o770)
		}, "writable by group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want != "" && strings.Contains(tt.name, "another") && os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away") // the CI runs the tests as root
			}
			dir := filepath.Join(t.TempDir(), "journal")
			mkdir(t, dir)
			tt.setup(t, dir)
			j, err := Open(dir, &fakeStore{}, fast)
			if err == nil {
				_ = j.Close()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("open: %v; want it taken", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir)):
				t.Errorf("open: %v; want an error naming %s and saying %q", err, dir, tt.want)
			}
		})
	}
}

// TestTheCursorIsNeverWrittenThroughALink: the cursor is written to a new
// file and renamed into place: links planted at its name or its temporary
// name are replaced, never followed, and the cursor reads back.
func TestTheCursorIsNeverWrittenThroughALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{cursorFile, cursorFile + ".tmp"} {
		if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	want := cursor{seq: 7, off: 4096}
	if err := writeCursor(dir, want); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the file a link pointed to was written: %q", b)
	}
	if got, err := readCursor(dir); err != nil || got != want {
		t.Errorf("cursor read back %+v, %v; want %+v", got, err, want)
	}
	if fi, err := os.Lstat(filepath.Join(dir, cursorFile)); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("cursor file: %v, %v; want a regular 0600 file", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, cursorFile+".tmp")); !os.IsNotExist(err) {
		t.Errorf("the temporary cursor is left: %v", err)
	}
	// A link planted at the cursor is not read through either.
	if err := os.Remove(filepath.Join(dir, cursorFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, cursorFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := readCursor(dir); err == nil {
		t.Error("a cursor that is a link was read")
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, path string, uid, gid int) {
	t.Helper()
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}
