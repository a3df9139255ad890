package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const rulesFile = "../../../deploy/samples/record-prod.yaml"

func count(t *testing.T, dsn, q string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImportLogLinesAndEventLists(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	cm := func(name string, rv int64) *gen.Obj {
		o := gen.ConfigMap("prod", name, "uid-"+name, rv, map[string]string{"k": name})
		return &o
	}
	lines := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(lines, gen.Lines(
		gen.Event(gen.Namespace("prod"), gen.Name("a"), gen.Response(*cm("a", 10))),
		gen.Event(gen.Namespace("prod"), gen.Name("b"), gen.Response(*cm("b", 11))),
		gen.Event(gen.Verb("get"), gen.Namespace("prod"), gen.Name("b")),
	), 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "batch.json")
	if err := os.WriteFile(list, gen.EventList(
		gen.Event(gen.Namespace("prod"), gen.Name("c"), gen.Response(*cm("c", 12))),
		gen.Event(gen.Resource("", "v1", "secrets"), gen.Namespace("prod"), gen.Name("db"),
			gen.Response(gen.Secret("prod", "db", "uid-db", 13, map[string]string{"password": "hunter2"}))),
	), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := ImportOptions{Database: DatabaseOptions{URL: dsn, DataDir: dir}, Rules: RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"},
		Files: []string{lines, list}, Out: &out, BatchSize: 2}
	if err := Import(context.Background(), o); err != nil {
		t.Fatalf("import: %v", err)
	}
	if !strings.Contains(out.String(), "read 5 events: kept 4, dropped 1") || !strings.Contains(out.String(), "read_only") {
		t.Errorf("summary:\n%s", out.String())
	}
	if n := count(t, dsn, "SELECT count(*) FROM object_history"); n != 4 {
		t.Errorf("history rows = %d, want 4", n)
	}
	// An imported Secret holds the keyed, place-bound digest the webhook
	// stores, never the value.
	if n := count(t, dsn, `SELECT count(*) FROM object_versions WHERE name = 'db' AND secret_digested
		AND object::jsonb->'data'->>'password' LIKE 'hmac-sha256-v2:%' AND object::text NOT LIKE '%aHVudGVyMg%'`); n != 1 {
		t.Errorf("the imported Secret is not stored as a keyed digest (%d rows)", n)
	}
	// The same files again add nothing: every event is found stored.
	events := count(t, dsn, "SELECT count(*) FROM events")
	out.Reset()
	if err := Import(context.Background(), o); err != nil {
		t.Fatalf("second import: %v", err)
	}
	if n, h := count(t, dsn, "SELECT count(*) FROM events"), count(t, dsn, "SELECT count(*) FROM object_history"); n != events || h != 4 {
		t.Errorf("after importing the same files twice: %d events (want %d), %d history rows (want 4)", n, events, h)
	}

	// A file that breaks mid-way: the first full batch is stored, nothing of
	// the unfinished one, and the error names the line.
	bad := filepath.Join(dir, "bad.log")
	good := gen.Lines(
		gen.Event(gen.Namespace("prod"), gen.Name("d"), gen.Response(*cm("d", 13))),
		gen.Event(gen.Namespace("prod"), gen.Name("e"), gen.Response(*cm("e", 14))),
		gen.Event(gen.Namespace("prod"), gen.Name("f"), gen.Response(*cm("f", 15))),
	)
	if err := os.WriteFile(bad, append(good, []byte("{\"kind\":\"Event\", oops\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	o.Files = []string{bad}
	err := Import(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "bad.log:4") {
		t.Fatalf("import of a broken file: err = %v, want one naming bad.log:4", err)
	}
	if n := count(t, dsn, "SELECT count(*) FROM object_history WHERE name IN ('d','e','f')"); n != 2 {
		t.Errorf("rows from the broken file = %d, want the 2 of its complete batch", n)
	}
}

func TestServeEmbeddedEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	// Not t.TempDir(): its parent is private, and the postgres account that
	// runs the embedded server (we may be root) must enter the directory.
	dir, err := os.MkdirTemp("", "or-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{
			Database:    DatabaseOptions{DataDir: dir},
			Rules:       RulesOptions{Files: []string{rulesFile}, Namespace: "options-record"},
			WebhookAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
			OnListening: func(w, m net.Addr) { addrs <- [2]net.Addr{w, m} },
		})
	}()
	var a [2]net.Addr
	select {
	case a = <-addrs:
	case err := <-done:
		t.Fatalf("serve exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	ca, err := os.ReadFile(filepath.Join(dir, "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tok, err := os.ReadFile(filepath.Join(dir, "webhook-token"))
	if err != nil {
		t.Fatal(err)
	}
	// The client prefers HTTP/2, as the apiserver's does; the webhook speaks
	// HTTP/1.1 unless --webhook-http2.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	// Stamped now: the webhook skips events older than the rules keep.
	body := gen.EventList(gen.Event(gen.At(time.Now()), gen.Namespace("prod"), gen.Name("x"),
		gen.Response(gen.ConfigMap("prod", "x", "uid-x", 5, nil))))
	req, _ := http.NewRequest(http.MethodPost, "https://"+a[0].String()+"/audit", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(msg), `"kept":1`) {
		t.Fatalf("webhook answered %d %s", resp.StatusCode, msg)
	}
	if resp.Proto != "HTTP/1.1" {
		t.Errorf("webhook answered over %s, want HTTP/1.1 by default", resp.Proto)
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		r, err := http.Get("http://" + a[1].String() + path)
		if err != nil || r.StatusCode != 200 {
			t.Errorf("%s: %v %v", path, err, r)
		}
	}
	r, err := http.Get("http://" + a[1].String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(m), `options_record_events_kept_total{cluster="default"} 1`) {
		t.Errorf("metrics do not count the kept event")
	}
	// sql reaches the running embedded server.
	var out bytes.Buffer
	if err := SQL(ctx, SQLOptions{Database: DatabaseOptions{DataDir: dir}, Query: "SELECT name FROM object_history", Out: &out, Err: &out}); err != nil {
		t.Fatalf("sql: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), " x") {
		t.Errorf("sql output:\n%s", out.String())
	}
}
