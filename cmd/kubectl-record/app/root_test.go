package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestImpersonationNeedsTheAPIServer: --as with --record-server is refused
// before any request, not dropped (the request would run as the token's
// owner).
func TestImpersonationNeedsTheAPIServer(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: shop}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, as := range [][]string{{"--as", "alice"}, {"--as-group", "admins"}, {"--as-uid", "1234"}} {
		var out, errOut bytes.Buffer
		args := append([]string{"deletions", "--record-server", srv.URL, "--record-token", "t0ken", "--kubeconfig", kubeconfig}, as...)
		code := Main(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code != 2 || !strings.Contains(errOut.String(), "kube-apiserver") {
			t.Errorf("%v: exit %d, %q; want a usage error", as, code, errOut.String())
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the record server", n)
	}
}

// TestTheCommandsErrorReachesStderrEscaped: an error quoting what the
// server answered (which may quote a recorded string) is written by the
// command itself, through Main as the binary runs it, with every control
// and direction character escaped.
func TestTheCommandsErrorReachesStderrEscaped(t *testing.T) {
	const hostile = "deployments \"web\x1b]0;owned\x07\u009b2J\u202etxt.exe\" is forbidden\r\n\x1b[2Kall clear"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: hostile})
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := Main([]string{"deletions", "-n", "shop", "--record-server", srv.URL, "--record-token", "t0ken"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	got := errOut.String()
	if code != 3 || strings.ContainsAny(strings.TrimSuffix(got, "\n"), "\x1b\x07\r\n\u009b\u202e") ||
		!strings.Contains(got, `web\x1b]0;owned\a\u009b2J\u202etxt.exe`) || !strings.HasPrefix(got, "error: you may not") {
		t.Errorf("exit %d, stderr %q", code, got)
	}
}
