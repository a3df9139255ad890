package app

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/options-record/options-record/auditsink/pubsub"
)

// TestServeGKEPushEndpoint: with --gke-pubsub-audience, serve takes GKE's
// entries pushed to /gke/pubsub on the webhook's address, checks their
// OIDC token against the configured key set, and stores them in the same
// record; the webhook is served as before.
func TestServeGKEPushEndpoint(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	}))
	defer jwks.Close()
	const audience, account = "https://sink.example/gke/pubsub", "push@proj.iam.gserviceaccount.com"
	token := func(aud string) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(sig).Claims(map[string]any{"iss": "https://accounts.google.com", "aud": aud, "email": account, "email_verified": true,
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	webhookToken := "a webhook token of the apiserver"
	webhook, client, dsn := serveInProcess(t, ServeOptions{
		TokenFile: writeFile(t, t.TempDir(), "token", webhookToken+"\n"),
		GKE:       &GKEOptions{Audience: audience, ServiceAccount: account, JWKSURL: jwks.URL, Cluster: "gke-prod", jwksClient: jwks.Client()},
	})
	now := time.Now().UTC()
	entry := pubsub.LogEntry{InsertID: "ins-1", Timestamp: now, Labels: map[string]string{"authorization.k8s.io/decision": "allow"},
		Operation: &pubsub.Operation{ID: "ins-1", Producer: "k8s.io", First: true, Last: true},
		ProtoPayload: &pubsub.AuditLog{Type: "type.googleapis.com/google.cloud.audit.AuditLog", ServiceName: "k8s.io",
			MethodName: "io.k8s.core.v1.configmaps.delete", ResourceName: "core/v1/namespaces/prod/configmaps/x",
			AuthenticationInfo: &pubsub.AuthenticationInfo{PrincipalEmail: "alice@example.com"},
			RequestMetadata:    &pubsub.RequestMetadata{CallerIP: "203.0.113.7", CallerSuppliedUserAgent: "kubectl/v1.34.0"}}}
	data, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"message": map[string]any{"data": data, "messageId": "1", "publishTime": now.Format(time.RFC3339Nano)},
		"subscription": "projects/proj/subscriptions/options-record"})
	send := func(tok string) int {
		req, _ := http.NewRequest(http.MethodPost, "https://"+webhook+pubsub.Path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tok := range []string{webhookToken, token("https://other.example")} {
		if code := send(tok); code != http.StatusUnauthorized {
			t.Fatalf("push with a token that is not the subscription's: %d, want 401", code)
		}
	}
	if n := count(t, dsn, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("refused pushes stored %d events", n)
	}
	for range 2 { // a redelivery adds nothing
		if code := send(token(audience)); code != http.StatusOK {
			t.Fatalf("push: %d", code)
		}
	}
	if n := count(t, dsn, `SELECT count(*) FROM events WHERE cluster = 'gke-prod' AND username = 'alice@example.com' AND verb = 'delete'`); n != 1 {
		t.Fatalf("stored %d events of the push, want 1", n)
	}
	// The apiserver's webhook is still served on the same address.
	if code := post(t, client, webhook, "not the token", []byte(`{}`)); code != http.StatusUnauthorized {
		t.Fatalf("webhook with a wrong token: %d, want 401", code)
	}
}
