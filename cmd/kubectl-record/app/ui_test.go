package app

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestUIPutsTheTokenOnNoCommandLine: kubectl record ui starts the
// desktop's opener (here a stand-in xdg-open that records its own
// /proc/self/cmdline, which every local user can read) with a file URL;
// the token is only in that file, which is the user's alone and goes
// with the server.
func TestUIPutsTheTokenOnNoCommandLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stand-in opener is xdg-open")
	}
	bin, tmp := t.TempDir(), t.TempDir()
	seen := filepath.Join(bin, "cmdline")
	opener := "#!/bin/sh\ntr '\\0' '\\n' </proc/$$/cmdline >" + seen + ".tmp && mv " + seen + ".tmp " + seen + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(opener), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("TMPDIR", tmp)

	outR, outW := io.Pipe()
	var errOut strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: outW, ErrOut: &errOut})
	cmd.SetArgs([]string{"ui", "-n", "shop", "--record-server", "https://127.0.0.1:1", "--record-token", "t0ken"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); outW.Close() }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl record ui: %v %s", err, errOut.String())
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	i := strings.Index(line, "?token=")
	if i < 0 {
		t.Fatalf("no token in %q", line)
	}
	token := strings.Fields(line[i+len("?token="):])[0]
	if j := strings.IndexByte(token, '&'); j >= 0 {
		token = token[:j]
	}
	// The opener runs on its own: wait for what it recorded.
	var argv []byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if argv, err = os.ReadFile(seen); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the opener did not run: %v; stderr %q", err, errOut.String())
	}
	args := strings.Split(strings.TrimSpace(string(argv)), "\n")
	t.Logf("the opener's command line: %q", args)
	if strings.Contains(string(argv), token) {
		t.Errorf("the opener's command line carries the token: %q", args)
	}
	open := args[len(args)-1]
	if !strings.HasPrefix(open, "file://"+tmp+"/") {
		t.Fatalf("the opener was given %q, want the hand-over file", open)
	}
	page, err := os.ReadFile(strings.TrimPrefix(open, "file://"))
	if err != nil || !strings.Contains(string(page), token) {
		t.Errorf("the hand-over file does not carry the token: %v %q", err, page)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.TrimPrefix(open, "file://")); !os.IsNotExist(err) {
		t.Errorf("the hand-over file outlives the page: %v", err)
	}
}
