package shipcheck

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestPluginArchivesAreReproducible: make plugin's script, run twice from
// two umasks (022 and 077, as two builders may have), writes the same
// archive bytes; in it the binaries are 0755 and the README and LICENSE 0644, owned
// by 0:0; and the binary carries no VCS stamp and no local paths, built by
// the toolchain the script pins.
func TestPluginArchivesAreReproducible(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	script := filepath.Join(root, "hack", "plugin", "build.sh")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`GO_TOOLCHAIN:-(go[0-9.]+)`).FindSubmatch(src)
	if pin == nil {
		t.Fatal("build.sh pins no Go toolchain (GO_TOOLCHAIN:-goX.Y.Z)")
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	name := "kubectl-record_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"
	build := func(umask string) []byte {
		t.Helper()
		out := t.TempDir()
		cmd := exec.Command("bash", "-c", "umask "+umask+" && exec bash \"$0\"", script)
		// GOFLAGS empty: a builder whose environment does not turn the VCS
		// stamp off.
		cmd.Env = append(os.Environ(), "OUT="+out, "PLATFORMS="+platform, "VERSION=v0.1.0", "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("umask %s: hack/plugin/build.sh: %v\n%s", umask, err, b)
		}
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := build("022"), build("077")
	if !bytes.Equal(a, b) {
		t.Errorf("the archives built under umask 022 and 077 differ:\n%s\n%s", listing(t, a), listing(t, b))
	}
	want := map[string]int64{"README.md": 0o644, "LICENSE": 0o644, "kubectl-record": 0o755, "kubectl_complete-record": 0o755}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode != want[h.Name] || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mode %o, owner %d:%d %q:%q; want %o, 0:0", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, want[h.Name])
		}
		delete(want, h.Name)
		if h.Name != "kubectl-record" {
			continue
		}
		bin := filepath.Join(t.TempDir(), "kubectl-record")
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(bin, data, 0o700); err != nil {
			t.Fatal(err)
		}
		info, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m: %v %s", err, info)
		}
		if s := string(info); strings.Contains(s, "vcs.") || !strings.Contains(s, "-trimpath=true") ||
			!strings.HasPrefix(s, bin+": "+string(pin[1])+"\n") || strings.Contains(s, root) {
			t.Errorf("the binary's build information:\n%s\nwant %s, -trimpath, no vcs stamp, no path of the builder", s, pin[1])
		}
	}
	if len(want) != 0 {
		t.Errorf("missing from the archive: %v", want)
	}
}

// listing is the archive's members, for a failure's message.
func listing(t *testing.T, archive []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(tr)
		fmt.Fprintf(&b, "%s %v %d:%d %s %d bytes sha256 %x\n", h.Name, os.FileMode(h.Mode), h.Uid, h.Gid, h.ModTime.UTC(), len(data), sha256.Sum256(data))
	}
	return b.String()
}
