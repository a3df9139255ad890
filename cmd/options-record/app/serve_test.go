package app

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
)

// TestWebhookSecurityRefusesAnyClientCertificate: a client CA with no
// allow-list of names would take every certificate the CA verifies (with the
// cluster CA: every kubelet's) for the apiserver. Serve refuses to start so
// unless --webhook-allow-any-client-cert says it is meant.
func TestWebhookSecurityRefusesAnyClientCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := certs.NewCA("cluster CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue("options-record", []string{"localhost"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := srv.Write(dir, "tls")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	clientsFile := filepath.Join(dir, "clients.yaml")
	if err := os.WriteFile(clientsFile, []byte("clients:\n- cluster: prod\n  commonName: kube-apiserver\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mod     func(*ServeOptions)
		wantErr string // "" = starts
	}{
		{"client CA alone", func(*ServeOptions) {}, "--webhook-client-cn"},
		{"client CA and a token, no name", func(o *ServeOptions) { o.TokenFile = writeFile(t, dir, "token", "tok\n") }, "--webhook-client-cn"},
		{"client CA and names", func(o *ServeOptions) { o.ClientCNs = []string{"kube-apiserver"} }, ""},
		{"client CA and a clients file", func(o *ServeOptions) { o.ClientsFile = clientsFile }, ""},
		{"any certificate, said explicitly", func(o *ServeOptions) { o.AllowAnyClientCert = true }, ""},
		{"any certificate and names", func(o *ServeOptions) { o.AllowAnyClientCert, o.ClientCNs = true, []string{"a"} }, "contradicts"},
		{"any certificate without a CA", func(o *ServeOptions) { o.AllowAnyClientCert, o.ClientCAFile = true, "" }, "needs --webhook-client-ca"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := ServeOptions{Cluster: "default", TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: caFile}
			tc.mod(&o)
			_, _, err := webhookSecurity(&o, slog.New(slog.DiscardHandler))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("webhookSecurity: %v, want it to start", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("webhookSecurity: %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWebhookCredentialsRotateWithoutRestart: a rotated token file is taken
// without a restart (the new token accepted, the old refused), and a
// broken one keeps the tokens in force.
func TestWebhookCredentialsRotateWithoutRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", "old-token\n")
	o := ServeOptions{Cluster: "default", Database: DatabaseOptions{DataDir: dir}, TokenFile: tokenFile,
		CredentialsInterval: 10 * time.Millisecond}
	var logged syncBuffer // what the reloader says: a refused file is an event to wait for
	_, auth, err := webhookSecurity(&o, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	accepts := func(tok string) bool {
		r, _ := http.NewRequest(http.MethodPost, "/audit", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		_, ok := auth.Authenticate(r)
		return ok
	}
	if !accepts("old-token") {
		t.Fatal("the token in force is refused")
	}
	writeFile(t, dir, "token", "new-token\n")
	deadline := time.Now().Add(20 * time.Second)
	for !accepts("new-token") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !accepts("new-token") || accepts("old-token") {
		t.Fatalf("after rotation: new token accepted %v, old token accepted %v; want true, false", accepts("new-token"), accepts("old-token"))
	}
	// An empty token file (half-written, a broken Secret) is not taken.
	writeFile(t, dir, "token", "\n")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logged.String(), "not reloaded"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the empty token file was never read (log: %s)", logged.String())
		}
		if !accepts("new-token") {
			t.Fatal("an empty token file replaced the token in force")
		}
	}
	if !accepts("new-token") {
		t.Fatal("an empty token file replaced the token in force")
	}
}

// syncBuffer is a bytes.Buffer that a logger writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
