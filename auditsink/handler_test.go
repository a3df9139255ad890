package auditsink_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/options-record/options-record/auditsink"
	. "github.com/options-record/options-record/test/gen"
)

const token = "s3cret-webhook-token"

// server is the real handler over a real store, behind TLS.
func (e *env) server(maxBody int64) *httptest.Server {
	e.t.Helper()
	return e.serverOf(auditsink.HandlerOptions{Pipeline: e.pipe, MaxBodyBytes: maxBody})
}

// serverWith is the handler over another pipeline.
func (e *env) serverWith(p *auditsink.Pipeline) *httptest.Server {
	e.t.Helper()
	return e.serverOf(auditsink.HandlerOptions{Pipeline: p})
}

func (e *env) serverOf(opts auditsink.HandlerOptions) *httptest.Server {
	e.t.Helper()
	tf := filepath.Join(e.t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte(token+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	auth, err := auditsink.NewAuthenticator([]auditsink.ClientConfig{{Cluster: "default", TokenFile: tf}}, "")
	if err != nil {
		e.t.Fatal(err)
	}
	opts.Authenticator = auth
	h, err := auditsink.NewHandler(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	e.t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, tok, contentType string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/audit?timeout=30s", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestWebhookRequests(t *testing.T) {
	e := newEnv(t)
	srv := e.server(64 << 10)
	good := EventList(Event(Name("h1"), Response(ConfigMap("default", "h1", "uid-h1", 10, nil))))
	tests := []struct {
		name        string
		tok, ct     string
		body        []byte
		wantCode    int
		wantMessage string
	}{
		{"no credentials", "", "application/json", good, 401, "unauthenticated"},
		{"wrong token", "nope", "application/json", good, 401, "unauthenticated"},
		{"bad JSON", token, "application/json", []byte(`{"kind":"EventList",`), 400, "not a JSON EventList"},
		{"wrong kind", token, "application/json", []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`), 400, "want kind EventList"},
		{"wrong apiVersion", token, "application/json", []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1beta1","items":[]}`), 400, "want kind EventList"},
		{"wrong content type", token, "text/plain", good, 415, "unsupported content type"},
		{"oversized", token, "application/json", bytes.Repeat([]byte(" "), 65<<10), 413, "body exceeds"},
		{"good", token, "application/json; charset=utf-8", good, 200, `"kept":1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := post(t, srv, tt.tok, tt.ct, tt.body)
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMessage) {
				t.Errorf("got %d %q, want %d containing %q", code, msg, tt.wantCode, tt.wantMessage)
			}
		})
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Errorf("events = %d, want only the good batch's one", n)
	}
}

func TestOneMalformedEventKeepsTheRest(t *testing.T) {
	e := newEnv(t)
	srv := e.server(1 << 20)
	a := Event(Name("m1"), Response(ConfigMap("default", "m1", "uid-m1", 10, nil)))
	b := Event(Name("m2"), Response(ConfigMap("default", "m2", "uid-m2", 11, nil)))
	body := EventList(a, b)
	// Break the second item's type (verb as a number) and add one with no
	// stage timestamp: both are skipped and counted, the first is kept.
	body = bytes.Replace(body, []byte(`"verb":"create","user":{"username":"alice"`), []byte(`"verb":7,"user":{"username":"alice"`), 1)
	body = append(bytes.TrimSuffix(body, []byte(`]}`)), `,{"auditID":"x","stage":"ResponseComplete","verb":"create"}]}`...)
	code, msg := post(t, srv, token, "application/json", body)
	if code != 200 {
		t.Fatalf("got %d %s", code, msg)
	}
	if !strings.Contains(msg, `"received":3`) || !strings.Contains(msg, `"kept":1`) {
		t.Errorf("answer %s, want 3 received and 1 kept", msg)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Errorf("events = %d, want 1", n)
	}
}
