package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

// serveInProcess runs the serve command's Serve with o until the test
// ends, on a database of its own (o.Database.URL, a fresh one if empty),
// with a serving certificate and addresses on port 0. It returns the
// webhook's address, a client that trusts it, and the database.
func serveInProcess(t *testing.T, o ServeOptions) (webhook string, client *http.Client, dsn string) {
	t.Helper()
	if o.Database.URL == "" {
		o.Database.URL = pgtest.NewDatabase(t)
	}
	if o.SecretDigestKeyFile == "" {
		o.SecretDigestKeyFile = writeFile(t, t.TempDir(), "digest-key", "a test key of at least thirty-two bytes, not a secret\n")
	}
	if len(o.Rules.Files) == 0 {
		o.Rules = RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"}
	}
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("options-record", []string{"localhost"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSCertFile, o.TLSKeyFile, err = pair.Write(t.TempDir(), "tls"); err != nil {
		t.Fatal(err)
	}
	o.WebhookAddr, o.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	addrs := make(chan net.Addr, 1)
	o.OnListening = func(w, _ net.Addr) { addrs <- w }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, o) }()
	select {
	case a := <-addrs:
		webhook = a.String()
	case err := <-done:
		cancel()
		t.Fatalf("serve exited: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	return webhook, client, o.Database.URL
}

// post sends an EventList to the webhook with token and returns the status.
func post(t *testing.T, c *http.Client, webhook, token string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "https://"+webhook+"/audit", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeFollowsTheClientsFile: serve's own wiring re-reads the webhook
// clients file and the token files it names: after the clients file gains
// a client (its token in a new file) and a token file is rotated, the new
// credentials are accepted, each for its cluster, and the old one refused.
func TestServeFollowsTheClientsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenA := writeFile(t, dir, "token-a", "token-a-1\n")
	clients := writeFile(t, dir, "clients.yaml", "clients:\n- cluster: prod\n  tokenFile: "+tokenA+"\n")
	webhook, c, dsn := serveInProcess(t, ServeOptions{Cluster: "default", ClientsFile: clients,
		CredentialsInterval: time.Millisecond})
	event := func(name string) []byte {
		return gen.EventList(gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name(name),
			gen.Response(gen.ConfigMap("prod", name, "uid-"+name, 5, nil))))
	}
	if code := post(t, c, webhook, "token-a-1", event("a1")); code != http.StatusOK {
		t.Fatalf("the token in force: %d", code)
	}
	writeFile(t, dir, "token-a", "token-a-2\n")
	tokenB := writeFile(t, dir, "token-b", "token-b-1\n")
	writeFile(t, dir, "clients.yaml", "clients:\n- cluster: prod\n  tokenFile: "+tokenA+"\n- cluster: stage\n  tokenFile: "+tokenB+"\n")
	// Read again when a request comes a millisecond after the last reading;
	// a request refused meanwhile (401, or 429 past the failures allowed)
	// is tried again.
	accepted := func(token, name string) bool {
		for range 200 {
			if post(t, c, webhook, token, event(name)) == http.StatusOK {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	}
	if !accepted("token-a-2", "a2") {
		t.Fatal("the rotated token of a file the clients file names is refused")
	}
	if !accepted("token-b-1", "b1") {
		t.Fatal("the token of a client added to the clients file is refused")
	}
	if code := post(t, c, webhook, "token-a-1", event("a1-again")); code != http.StatusUnauthorized {
		t.Errorf("the rotated-out token: %d, want 401", code)
	}
	for _, tc := range []struct{ name, cluster string }{{"a1", "prod"}, {"a2", "prod"}, {"b1", "stage"}} {
		if n := count(t, dsn, "SELECT count(*) FROM object_history WHERE name = '"+tc.name+"' AND cluster = '"+tc.cluster+"'"); n != 1 {
			t.Errorf("%s: %d rows under cluster %s, want 1", tc.name, n, tc.cluster)
		}
	}
}
