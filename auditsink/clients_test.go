package auditsink_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	. "github.com/options-record/options-record/test/gen"
)

// TestClientsFileKeepsClustersApart: through the webhook handler, with a
// clients file of tokens and a client certificate, each credential writes
// under its own cluster only (the body cannot name another); the clients
// file and its token files are followed without a restart: a token moved
// to another cluster writes there once the file is re-read, a removed one
// is refused.
func TestClientsFileKeepsClustersApart(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prodTok, stagingTok := write("prod.token", "prod-secret\n"), write("staging.token", "staging-secret\n")
	clientsFile := write("clients.yaml", "clients:\n- cluster: prod\n  tokenFile: "+prodTok+
		"\n- cluster: staging\n  tokenFile: "+stagingTok+"\n- cluster: edge\n  commonName: apiserver-edge\n")
	auth, err := auditsink.NewReloadingAuthenticator(auditsink.AuthenticatorOptions{Interval: 10 * time.Millisecond,
		Load: func() ([]auditsink.ClientConfig, string, error) {
			c, err := auditsink.LoadClients(clientsFile)
			return c, "", err
		}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{Pipeline: e.pipe, Authenticator: auth})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certs.NewCA("apiserver clients", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	clientCert := func(cn string) *tls.Certificate {
		p, err := ca.Issue(cn, nil, false, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	post := func(name, token string, cert *tls.Certificate) int {
		t.Helper()
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		body := EventList(Event(Namespace("prod"), Name(name), Response(ConfigMap("prod", name, "uid-"+name, 10, nil))))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/audit", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	clusterOf := func(name string) []string {
		t.Helper()
		rows, err := e.pool.Query(t.Context(), `SELECT DISTINCT cluster FROM events WHERE name = $1 ORDER BY 1`, name)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		return out
	}
	for _, c := range []struct {
		name, token string
		cert        *tls.Certificate
		want        string // "" = refused
	}{
		{"by-prod", "prod-secret", nil, "prod"},
		{"by-staging", "staging-secret", nil, "staging"},
		{"by-edge", "", clientCert("apiserver-edge"), "edge"},
		{"by-edge-with-prod-token", "prod-secret", clientCert("apiserver-edge"), "edge"},
		{"by-unlisted-cert", "", clientCert("kubelet"), ""},
		{"by-unknown-token", "guess", nil, ""},
	} {
		code := post(c.name, c.token, c.cert)
		got := clusterOf(c.name)
		switch {
		case c.want == "" && (code != http.StatusUnauthorized || len(got) != 0):
			t.Errorf("%s: %d, stored under %v; want 401 and nothing stored", c.name, code, got)
		case c.want != "" && (code != http.StatusOK || len(got) != 1 || got[0] != c.want):
			t.Errorf("%s: %d, stored under %v; want 200 under %s only", c.name, code, got, c.want)
		}
	}

	// The operator moves the prod token to a new cluster name and removes
	// staging: no restart.
	write("clients.yaml", "clients:\n- cluster: prod-eu\n  tokenFile: "+prodTok+"\n- cluster: edge\n  commonName: apiserver-edge\n")
	deadline := time.Now().Add(10 * time.Second)
	for {
		time.Sleep(20 * time.Millisecond)
		if post("probe", "staging-secret", nil) == http.StatusUnauthorized || time.Now().After(deadline) {
			break
		}
	}
	if code := post("after-rotation", "prod-secret", nil); code != http.StatusOK {
		t.Fatalf("the prod token after the rotation: %d", code)
	}
	if got := clusterOf("after-rotation"); len(got) != 1 || got[0] != "prod-eu" {
		t.Errorf("after the clients file changed, the prod token writes under %v, want prod-eu", got)
	}
	if code := post("staging-after", "staging-secret", nil); code != http.StatusUnauthorized {
		t.Errorf("a token removed from the clients file: %d, want 401", code)
	}
}
