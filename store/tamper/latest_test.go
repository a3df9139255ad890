package tamper

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestLatestKeptWhenUnreadable: when latest cannot be read (a bucket the
// ingest may write but not read, or a read that fails), the integrator
// cannot tell whether its checkpoint advances along latest's log: latest
// is kept, the checkpoint is written by its size. (An unreadable latest
// is made with a symbolic link to itself: a chmod does not deny root.)
func TestLatestKeptWhenUnreadable(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 2))
	e.integrate()
	file := filepath.Join(e.dir, clusterPrefix("default")+"latest")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("latest", file); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTrusted(t.Context(), e.bucket, "default"); err == nil {
		t.Fatal("latest, a link to itself, was read")
	}
	e.write(e.batch("default", time.Now(), 1))
	e.integrate()
	if fi, err := os.Lstat(file); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("latest that could not be read was replaced: %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, clusterPrefix("default")+strconv.FormatInt(e.treeSize(), 10))); err != nil {
		t.Fatalf("the new checkpoint is not kept by its size: %v", err)
	}
}

// TestCheckpointFileModes: a checkpoint file is 0644 whatever the umask
// (fileblob creates 0666 less the umask): public, signed, and writable
// by its owner only. Not parallel: the umask is the process's.
func TestCheckpointFileModes(t *testing.T) {
	e := newEnv(t)
	old := syscall.Umask(0)
	e.write(e.batch("default", time.Now(), 2))
	e.integrate()
	if err := WriteVerified(t.Context(), e.bucket, "default", []byte("x")); err != nil {
		t.Fatal(err)
	}
	syscall.Umask(old)
	files, err := filepath.Glob(filepath.Join(e.dir, clusterPrefix("default")+"*"))
	if err != nil || len(files) < 3 {
		t.Fatalf("checkpoint files: %q, %v", files, err)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", filepath.Base(f), fi.Mode().Perm())
		}
	}
}
