package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/api/aggregated"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

// TestRolesRefuseTheOtherRolesOptions: a process refuses options of a role
// it does not run, so that a misplaced flag is seen at start, not ignored.
func TestRolesRefuseTheOtherRolesOptions(t *testing.T) {
	t.Parallel()
	api := &APIOptions{Addr: "127.0.0.1:8444"}
	tests := []struct {
		name        string
		o           ServeOptions
		ingest, api bool
		wantErr     string
	}{
		{"default: ingest", ServeOptions{}, true, false, ""},
		{"default with an API address: both", ServeOptions{API: api}, true, true, ""},
		{"ingest", ServeOptions{Roles: []Role{RoleIngest}, JournalDir: "j"}, true, false, ""},
		{"api", ServeOptions{Roles: []Role{RoleAPI}, API: api}, false, true, ""},
		{"both", ServeOptions{Roles: []Role{RoleIngest, RoleAPI}, API: api}, true, true, ""},
		{"api without an address", ServeOptions{Roles: []Role{RoleAPI}}, false, false, "--api-bind-address"},
		{"ingest with an API address", ServeOptions{Roles: []Role{RoleIngest}, API: api}, false, false, "without the role api"},
		{"api with a journal", ServeOptions{Roles: []Role{RoleAPI}, API: api, JournalDir: "j"}, false, false, "--journal-dir"},
		{"unknown role", ServeOptions{Roles: []Role{"webhook"}}, false, false, "unknown role"},
		{"ingest keeps the log", ServeOptions{Roles: []Role{RoleIngest}, LogSigningKeyFile: "k", CheckpointDir: "c"}, true, false, ""},
		{"api with the log's key", ServeOptions{Roles: []Role{RoleAPI}, API: api, LogSigningKeyFile: "k"}, false, false, "--log-signing-key-file"},
		{"checkpoints without a key", ServeOptions{CheckpointDir: "c"}, false, false, "--checkpoint-dir or --checkpoint-url needs"},
		{"checkpoints in a bucket without a key", ServeOptions{CheckpointURL: "s3://b"}, false, false, "--checkpoint-dir or --checkpoint-url needs"},
		{"checkpoints in a bucket", ServeOptions{Roles: []Role{RoleIngest}, LogSigningKeyFile: "k", CheckpointURL: "s3://b"}, true, false, ""},
		{"checkpoints in two places", ServeOptions{LogSigningKeyFile: "k", CheckpointDir: "c", CheckpointURL: "s3://b"}, false, false, "give one"},
		{"a witness", ServeOptions{LogSigningKeyFile: "k", CheckpointDir: "c", Witnesses: []string{"https://w.example/a=w.example+03d0ed27+BDoByd+zBHL99I895i78y8y1N4Tu41Ul6Fr/dfsUng01"}}, true, false, ""},
		{"a witness without checkpoints", ServeOptions{LogSigningKeyFile: "k", Witnesses: []string{"https://w.example/a=w.example+03d0ed27+BDoByd+zBHL99I895i78y8y1N4Tu41Ul6Fr/dfsUng01"}}, false, false, "--witness needs --checkpoint-dir or --checkpoint-url"},
		{"a witness without its key", ServeOptions{LogSigningKeyFile: "k", CheckpointDir: "c", Witnesses: []string{"https://w.example/a"}}, false, false, "want URL=VERIFIERKEY"},
		{"a witness's log key", ServeOptions{LogSigningKeyFile: "k", CheckpointDir: "c", Witnesses: []string{"https://w.example/a=w.example+42419981+AToByd+zBHL99I895i78y8y1N4Tu41Ul6Fr/dfsUng01"}}, false, false, "not a cosignature/v1 verifier key"},
		{"a quorum above the witnesses", ServeOptions{LogSigningKeyFile: "k", CheckpointDir: "c", Witnesses: []string{"https://w.example/a=w.example+03d0ed27+BDoByd+zBHL99I895i78y8y1N4Tu41Ul6Fr/dfsUng01"}, WitnessQuorum: 2}, false, false, "--witness-quorum 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ingest, api, err := tc.o.roles()
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("roles: %v, want an error naming %s", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Errorf("roles: %v", err)
			case tc.wantErr == "" && (ingest != tc.ingest || api != tc.api):
				t.Errorf("roles: ingest %v, api %v; want %v, %v", ingest, api, tc.ingest, tc.api)
			}
		})
	}
}

// startServe runs Serve until the test ends and returns the addresses
// OnListening reported.
func startServe(t *testing.T, o ServeOptions) (webhook, metrics net.Addr) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type addrs struct{ webhook, metrics net.Addr }
	up := make(chan addrs, 1)
	done := make(chan error, 1)
	o.OnListening = func(w, m net.Addr) { up <- addrs{w, m} }
	go func() { done <- Serve(ctx, o) }()
	var a addrs
	select {
	case a = <-up:
	case err := <-done:
		cancel()
		t.Fatalf("serve exited: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return a.webhook, a.metrics
}

// listenRecorder hands Serve a listener bound in advance for one address
// (no port chosen free and bound later) and records every address Serve
// asks to listen on.
type listenRecorder struct {
	mu    sync.Mutex
	addrs []string
	bound map[string]net.Listener
}

// bind binds a loopback listener and returns its address.
func (r *listenRecorder) bind(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bound == nil {
		r.bound = map[string]net.Listener{}
	}
	r.bound[l.Addr().String()] = l
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

func (r *listenRecorder) listen(addr string) (net.Listener, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs = append(r.addrs, addr)
	if l, ok := r.bound[addr]; ok {
		delete(r.bound, addr)
		return l, nil
	}
	return net.Listen("tcp", addr)
}

func (r *listenRecorder) asked(addr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.addrs, addr)
}

func tlsClient(t *testing.T, dataDir string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dataDir, "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// TestServeAPIRoleOnly: with --roles=api the process answers the restore
// API and its probes, opens no webhook port and needs no webhook
// credentials (it generates none). It logs in as the shipped roles: the
// record's reader (--database-url) and the owner of the API's schema
// (--api-database-url), which may not read the record.
func TestServeAPIRoleOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ls listenRecorder
	// The webhook address is never bound: an api-only process must not
	// ask for it.
	webhookAddr, apiAddr := "127.0.0.1:1", ls.bind(t)
	// Ingest owns the schema: on a database of its own the API role does
	// not migrate it (so it can log in with a role that only reads the
	// record), and reads what ingest prepared.
	roles := pgtest.NewRoles(t)
	ingest, err := store.Open(context.Background(), store.Options{URL: roles.Ingest})
	if err != nil {
		t.Fatal(err)
	}
	ingest.Close()
	webhook, metrics := startServe(t, ServeOptions{
		Roles:       []Role{RoleAPI},
		Database:    DatabaseOptions{URL: roles.Reader, APIURL: roles.API, DataDir: dir},
		WebhookAddr: webhookAddr, MetricsAddr: "127.0.0.1:0",
		API: &APIOptions{Addr: apiAddr}, Listen: ls.listen,
	})
	if webhook != nil {
		t.Errorf("an api-only process reports a webhook listener at %s", webhook)
	}
	if ls.asked(webhookAddr) {
		t.Errorf("an api-only process listens on the webhook address %s", webhookAddr)
	}
	if _, err := os.Stat(filepath.Join(dir, "webhook-token")); !os.IsNotExist(err) {
		t.Errorf("an api-only process made webhook credentials: %v", err)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+apiAddr+"/api/v1/clusters/default/deletions", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := tlsClient(t, dir).Do(req)
	if err != nil {
		t.Fatalf("restore API: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("restore API answered %d: %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		r, err := http.Get("http://" + metrics.String() + path)
		if err != nil || r.StatusCode != http.StatusOK {
			t.Errorf("%s: %v %v", path, err, r)
		}
	}
	// One connection holds as few streams as the record door's (Go's
	// default is 250, each a request to authenticate).
	ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	if v, ok := maxStreams(t, apiAddr, pool); !ok || v != aggregated.DirectMaxStreamsPerConnection {
		t.Errorf("restore API: SETTINGS_MAX_CONCURRENT_STREAMS = %d (sent %v); want %d", v, ok, aggregated.DirectMaxStreamsPerConnection)
	}
}

// TestServeIngestRoleOnly: with --roles=ingest the process takes batches
// and serves no restore API (so it never impersonates).
func TestServeIngestRoleOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	webhook, metrics := startServe(t, ServeOptions{
		Roles:       []Role{RoleIngest},
		Database:    DatabaseOptions{URL: pgtest.NewDatabase(t), DataDir: dir},
		Rules:       RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"},
		WebhookAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
	})
	if webhook == nil {
		t.Fatal("an ingest process reports no webhook listener")
	}
	tok, err := os.ReadFile(filepath.Join(dir, "webhook-token"))
	if err != nil {
		t.Fatal(err)
	}
	client := tlsClient(t, dir)
	body := gen.EventList(gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name("x"),
		gen.Response(gen.ConfigMap("prod", "x", "uid-x", 5, nil))))
	req, _ := http.NewRequest(http.MethodPost, "https://"+webhook.String()+"/audit", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(msg), `"kept":1`) {
		t.Fatalf("webhook answered %d %s", resp.StatusCode, msg)
	}
	// No API: no token for it, no route on either listener.
	if _, err := os.Stat(filepath.Join(dir, "api-token")); !os.IsNotExist(err) {
		t.Errorf("an ingest-only process set up the restore API: %v", err)
	}
	req, _ = http.NewRequest(http.MethodGet, "https://"+webhook.String()+"/api/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	if r, err := client.Do(req); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Error("the webhook listener serves the restore API")
		}
	}
	if r, err := http.Get("http://" + metrics.String() + "/api/v1/openapi.json"); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Error("the metrics listener serves the restore API")
		}
	}
	// An API address with the ingest role alone is refused, not ignored.
	err = Serve(context.Background(), ServeOptions{Roles: []Role{RoleIngest}, API: &APIOptions{Addr: "127.0.0.1:0"},
		Database: DatabaseOptions{DataDir: dir}})
	if err == nil || !strings.Contains(err.Error(), "without the role api") {
		t.Errorf("ingest with --api-bind-address: %v, want it refused", err)
	}
}

// TestMetricsServerTimeouts: the plain-HTTP metrics listener, reachable
// from the pod network, bounds every phase of a connection, so that slow
// or idle clients cannot hold its goroutines and sockets.
func TestMetricsServerTimeouts(t *testing.T) {
	t.Parallel()
	srv := metricsServer(prometheus.NewRegistry(), func(context.Context) error { return nil }, slog.New(slog.DiscardHandler))
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 {
			t.Errorf("metrics server %s is unset", name)
		}
	}
}
