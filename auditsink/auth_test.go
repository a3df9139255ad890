package auditsink_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
)

// TestAuthenticator maps callers to clusters: by the verified client
// certificate's common name (a listed one only, unless any certificate of the
// CA is allowed) or by bearer token; a credential listed for two clusters is
// refused at start.
func TestAuthenticator(t *testing.T) {
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert := func(cn string) *http.Request {
		p, err := ca.Issue(cn, nil, false, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodPost, "/audit", nil)
		r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{p.Cert, ca.Cert}}}
		return r
	}
	token := func(tok string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "/audit", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	dir := t.TempDir()
	tokenFile := func(name, tok string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prodTok, stagingTok := tokenFile("prod", "prod-token"), tokenFile("staging", "staging-token")

	listed, err := auditsink.NewAuthenticator([]auditsink.ClientConfig{
		{Cluster: "prod", CommonName: "kube-apiserver-prod"},
		{Cluster: "prod", TokenFile: prodTok},
		{Cluster: "staging", TokenFile: stagingTok},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	anyCert, err := auditsink.NewAuthenticator(nil, "default")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		a       *auditsink.Authenticator
		r       *http.Request
		cluster string // "" = refused
	}{
		{"listed common name", listed, cert("kube-apiserver-prod"), "prod"},
		{"a kubelet's certificate from the same CA", listed, cert("system:node:worker-1"), ""},
		{"token of prod", listed, token("prod-token"), "prod"},
		{"token of staging", listed, token("staging-token"), "staging"},
		{"wrong token", listed, token("prod-token2"), ""},
		{"no credential", listed, token(""), ""},
		{"any certificate of the CA, when allowed", anyCert, cert("system:node:worker-1"), "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := tc.a.Authenticate(tc.r)
			if ok != (tc.cluster != "") || c != tc.cluster {
				t.Errorf("Authenticate = %q, %v; want %q", c, ok, tc.cluster)
			}
		})
	}

	for name, clients := range map[string][]auditsink.ClientConfig{
		"one token for two clusters":       {{Cluster: "prod", TokenFile: prodTok}, {Cluster: "staging", TokenFile: tokenFile("copy", "prod-token")}},
		"one common name for two clusters": {{Cluster: "prod", CommonName: "apiserver"}, {Cluster: "staging", CommonName: "apiserver"}},
	} {
		if _, err := auditsink.NewAuthenticator(clients, ""); err == nil || !strings.Contains(err.Error(), "also cluster") {
			t.Errorf("%s: %v, want it refused", name, err)
		}
	}
}
