package ui_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/options-record/options-record/cmd/kubectl-record/app"
)

// TestUIPutsTheTokenOnNoCommandLine: kubectl record ui starts the
// desktop's opener (here a stand-in xdg-open that records its own
// /proc/self/cmdline, which every local user can read) with a file URL;
// the token is only in that file, which is the user's alone, in a
// non-hidden directory of $HOME (where a snap browser can read it), and
// goes with the server. The URL is printed all the same, with a hint for
// a browser that shows "File not found"; the hint carries no token.
func TestUIPutsTheTokenOnNoCommandLine(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	r := runUI(t)
	if strings.Contains(strings.Join(r.opener, "\n"), r.token) {
		t.Errorf("the opener's command line carries the token: %q", r.opener)
	}
	if !strings.HasPrefix(r.open, "file://"+home+"/kubectl-record-ui-") {
		t.Errorf("the opener was given %q, want the hand-over file in a non-hidden directory of $HOME", r.open)
	}
	if !strings.Contains(r.page, r.token) {
		t.Errorf("the hand-over file does not carry the token: %q", r.page)
	}
	if !strings.Contains(r.errOut, `If the browser shows "File not found"`) || !strings.Contains(r.errOut, "open the URL above") {
		t.Errorf("no hint for a browser that cannot read the hand-over file: stderr %q", r.errOut)
	}
	if strings.Contains(r.errOut, r.token) {
		t.Errorf("the hint carries the token: %q", r.errOut)
	}
}

// TestUIHandoverDir: --handover-dir, or KUBECTL_RECORD_HANDOVER_DIR,
// chooses where the hand-over directory is made; one that others may
// write is refused, no browser is opened, and the printed URL still
// opens the page.
func TestUIHandoverDir(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	chosen, fromEnv := t.TempDir(), t.TempDir()
	if r := runUI(t, "--handover-dir", chosen); !strings.HasPrefix(r.open, "file://"+chosen+"/kubectl-record-ui-") {
		t.Errorf("--handover-dir %s: the opener was given %q", chosen, r.open)
	}
	t.Setenv("KUBECTL_RECORD_HANDOVER_DIR", fromEnv)
	if r := runUI(t); !strings.HasPrefix(r.open, "file://"+fromEnv+"/kubectl-record-ui-") {
		t.Errorf("KUBECTL_RECORD_HANDOVER_DIR=%s: the opener was given %q", fromEnv, r.open)
	}
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	r := runUI(t, "--handover-dir", open, "--no-wait-for-opener")
	if r.open != "" || !strings.Contains(r.errOut, "writable by others") || !strings.Contains(r.errOut, "open the URL above") {
		t.Errorf("--handover-dir %s (0777): opener %q, stderr %q; want no browser and the URL", open, r.open, r.errOut)
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Errorf("%s: %d entries made", open, len(entries))
	}
}

type uiRun struct {
	token  string   // the printed URL's token
	opener []string // the opener's command line
	open   string   // the URL the opener was given
	page   string   // the hand-over file
	errOut string
}

// runUI runs kubectl record ui with args and a stand-in xdg-open, until
// the opener ran (unless args hold --no-wait-for-opener, a flag of this
// helper only), then stops it and checks that the hand-over file is gone.
func runUI(t *testing.T, args ...string) uiRun {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the stand-in opener is xdg-open")
	}
	wait := true
	if i := slices.Index(args, "--no-wait-for-opener"); i >= 0 {
		wait, args = false, slices.Delete(args, i, i+1)
	}
	bin := t.TempDir()
	seen := filepath.Join(bin, "cmdline")
	opener := "#!/bin/sh\ntr '\\0' '\\n' </proc/$$/cmdline >" + seen + ".tmp && mv " + seen + ".tmp " + seen + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(opener), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	outR, outW := io.Pipe()
	errOut := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := app.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: outW, ErrOut: errOut})
	cmd.SetArgs(append([]string{"ui", "-n", "shop", "--record-server", "https://127.0.0.1:1", "--record-token", "t0ken"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); outW.Close() }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl record ui: %v %s", err, errOut.String())
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	var r uiRun
	i := strings.Index(line, "?token=")
	if i < 0 {
		t.Fatalf("no token in %q", line)
	}
	r.token = strings.Fields(line[i+len("?token="):])[0]
	if j := strings.IndexByte(r.token, '&'); j >= 0 {
		r.token = r.token[:j]
	}
	// The opener runs on its own: wait for what it recorded, or, when
	// none is to run, for what kubectl record ui says of it.
	var argv []byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if wait {
			if argv, err = os.ReadFile(seen); err == nil || time.Now().After(deadline) {
				break
			}
		} else if strings.Contains(errOut.String(), "open the URL above") || time.Now().After(deadline) {
			break
		}
	}
	if wait && err != nil {
		t.Fatalf("the opener did not run: %v; stderr %q", err, errOut.String())
	}
	if wait {
		r.opener = strings.Split(strings.TrimSpace(string(argv)), "\n")
		t.Logf("the opener's command line: %q", r.opener)
		r.open = r.opener[len(r.opener)-1]
		page, err := os.ReadFile(strings.TrimPrefix(r.open, "file://"))
		if err != nil {
			t.Fatalf("the hand-over file: %v", err)
		}
		r.page = string(page)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.errOut = errOut.String()
	if r.open != "" {
		if _, err := os.Stat(filepath.Dir(strings.TrimPrefix(r.open, "file://"))); !os.IsNotExist(err) {
			t.Errorf("the hand-over directory outlives the page: %v", err)
		}
	}
	return r
}

// syncBuffer is a buffer written by the command and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
