package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/filter/rulesync"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
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

// TestSecretDigestsAgreeAcrossPaths: a Secret value is stored as the same
// digest whichever way it comes in, with one key file: the webhook, the
// baseline LIST of rule sync (against a real kube-apiserver) and import.
func TestSecretDigestsAgreeAcrossPaths(t *testing.T) {
	t.Parallel()
	cp := controlplane.Start(t, controlplane.Options{DisableControllerManager: true})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret, err := admin.CoreV1().Secrets("prod").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Data: map[string][]byte{"password": []byte("hunter2")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := writeFile(t, dir, "digest-key", "the one key of serve and import, thirty-two bytes or more\n")
	token := writeFile(t, dir, "token", "webhook-token\n")
	webhook, c, dsn := serveInProcess(t, ServeOptions{Cluster: "default", TokenFile: token, SecretDigestKeyFile: key,
		Kube: &KubeOptions{Config: cp.AdminConfig(), Sync: rulesync.Options{Baseline: true, Identity: "digest-test", StatusInterval: time.Second}}})
	digests := func(dsn, origin string) []string {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, _ := conn.Query(ctx, `SELECT object::jsonb->'data'->>'password' FROM object_versions
			WHERE cluster = 'default' AND name = 'db' AND origin = $1`, origin)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The baseline: rule sync LISTs the Secrets the rules cover.
	var baseline []string
	for i := 0; len(baseline) == 0; i++ {
		if i == 600 {
			t.Fatal("no baseline of the Secret prod/db")
		}
		time.Sleep(50 * time.Millisecond)
		baseline = digests(dsn, "baseline")
	}
	// The webhook and import: the same value in an update of the same Secret.
	obj := gen.Secret("prod", "db", string(secret.UID), 1<<40, map[string]string{"password": "hunter2"})
	events := gen.EventList(gen.Event(gen.At(time.Now()), gen.Verb("update"), gen.Resource("", "v1", "secrets"),
		gen.Namespace("prod"), gen.Name("db"), gen.Response(obj)))
	if code := post(t, c, webhook, "webhook-token", events); code != http.StatusOK {
		t.Fatalf("webhook: %d", code)
	}
	importDSN := pgtest.NewDatabase(t)
	file := writeFile(t, dir, "audit.json", string(events))
	var out bytes.Buffer
	if err := Import(ctx, ImportOptions{Database: DatabaseOptions{URL: importDSN}, Rules: RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"},
		SecretDigestKeyFile: key, Files: []string{file}, Out: &out}); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	webhookDigests, imported := digests(dsn, "change"), digests(importDSN, "change")
	if len(baseline) != 1 || len(webhookDigests) != 1 || len(imported) != 1 || !strings.HasPrefix(baseline[0], "hmac-sha256-") {
		t.Fatalf("digests: baseline %q, webhook %q, import %q; want one each", baseline, webhookDigests, imported)
	}
	if baseline[0] != webhookDigests[0] || imported[0] != webhookDigests[0] {
		t.Errorf("one value, one key, three digests: baseline %s, webhook %s, import %s", baseline[0], webhookDigests[0], imported[0])
	}
}
