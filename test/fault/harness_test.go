package fault

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/pgembed"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

// The binary under test, built once per test binary.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binary builds cmd/options-record from this module into a temporary
// directory, once.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("fault tests run real processes on a real PostgreSQL; skipped with -short")
	}
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if buildDir, buildErr = os.MkdirTemp("", "options-record-fault-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "options-record")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/options-record")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/options-record: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// cluster is a throwaway PostgreSQL (fsync on) and the directories of the
// sinks that use it.
type cluster struct {
	t    *testing.T
	dir  string
	pg   *pgembed.Server
	dsn  string
	opts pgembed.Options
}

// newCluster starts PostgreSQL in a fresh directory. The directory comes
// from os.MkdirTemp, made enterable (0755): as root, PostgreSQL runs as the
// postgres account, which cannot enter t.TempDir()'s parents.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	binary(t)
	dir, err := os.MkdirTemp("", "orfault-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := pgembed.Installed(); err != nil {
		pgtest.Unavailable(t, "the PostgreSQL server binaries", "make test-fault", err)
	}
	c := &cluster{t: t, dir: dir, opts: pgembed.Options{DataDir: filepath.Join(dir, "pg"), Fsync: true}}
	t.Cleanup(func() {
		if c.pg != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = c.pg.Stop(ctx)
		}
		if t.Failed() && os.Getenv("FAULT_KEEP") != "" {
			t.Logf("kept %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	c.startPG()
	return c
}

func (c *cluster) startPG() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pgembed.Start(ctx, c.opts)
	if err != nil {
		c.t.Fatalf("start PostgreSQL: %v", err)
	}
	c.pg = pg
	if c.dsn != "" && c.dsn != pg.ConnString() {
		c.t.Fatalf("PostgreSQL came back on %s, the sinks use %s", pg.ConnString(), c.dsn)
	}
	c.dsn = pg.ConnString()
}

func (c *cluster) stopPG() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.pg.Stop(ctx); err != nil {
		c.t.Fatalf("stop PostgreSQL: %v", err)
	}
	c.pg = nil
}

func (c *cluster) conn(ctx context.Context) *pgx.Conn {
	c.t.Helper()
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		c.t.Fatalf("connect: %v", err)
	}
	return conn
}

// stored returns how many times each of ids is in the events table.
func (c *cluster) stored(ids []string) map[string]int {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := c.conn(ctx)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT audit_id, count(*) FROM events WHERE audit_id = ANY($1) GROUP BY audit_id`, ids)
	if err != nil {
		c.t.Fatalf("count events: %v", err)
	}
	got := map[string]int{}
	var id string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { got[id] = n; return nil }); err != nil {
		c.t.Fatalf("count events: %v", err)
	}
	return got
}

const rulesYAML = `apiVersion: optionsrecord.io/v1alpha1
kind: OptionsRecordController
metadata: {name: fault, namespace: options-record}
spec:
  namespaces: ["default"]
`

// sink is an `options-record serve` process.
type sink struct {
	t          *testing.T
	name       string
	dir        string // --data-dir: TLS and token
	journal    string // --journal-dir; empty: none
	webhook    string
	metrics    string
	log        string
	cmd        *exec.Cmd
	done       chan struct{}
	err        error
	client     *http.Client
	token      string
	extraFlags []string
}

// newSink prepares (does not start) a sink using the cluster's database.
func (c *cluster) newSink(name, journalDir string, extra ...string) *sink {
	s := &sink{t: c.t, name: name, dir: filepath.Join(c.dir, name), journal: journalDir,
		log: filepath.Join(c.dir, name+".log"), extraFlags: extra}
	if err := os.WriteFile(filepath.Join(c.dir, "rules.yaml"), []byte(rulesYAML), 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		s.kill()
		if c.t.Failed() {
			c.t.Logf("%s", s.logTail())
		}
	})
	return s
}

// start runs the sink and waits until /readyz answers 200. The sink binds
// port 0 and the addresses are read from its "serving the audit webhook"
// log line: a port chosen here and bound later could be taken meanwhile.
func (s *sink) start(dsn string) {
	s.t.Helper()
	args := []string{"serve",
		"--database-url", dsn,
		"--data-dir", s.dir,
		"--rules-file", filepath.Join(filepath.Dir(s.dir), "rules.yaml"),
		"--webhook-bind-address", "127.0.0.1:0",
		"--metrics-bind-address", "127.0.0.1:0",
		"--log-level", "info",
	}
	if s.journal != "" {
		args = append(args, "--journal-dir", s.journal)
	}
	args = append(args, s.extraFlags...)
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- start %s\n", time.Now().Format(time.RFC3339Nano))
	logStart, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(binPath, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "OPTIONS_RECORD_DATABASE_URL=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start sink: %v", err)
	}
	s.cmd, s.done, s.err = cmd, make(chan struct{}), nil
	go func() { s.err = cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(60 * time.Second)
	s.webhook, s.metrics = "", ""
	for {
		if s.metrics == "" {
			s.webhook, s.metrics = s.listening(logStart)
		}
		if s.metrics != "" {
			if code, _ := s.get("/readyz"); code == http.StatusOK {
				break
			}
		}
		select {
		case <-s.done:
			s.t.Fatalf("sink %s exited before it was ready: %v\n%s", s.name, s.err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sink %s not ready after 60 s\n%s", s.name, s.logTail())
		}
	}
	if s.client == nil {
		s.client = s.newClient()
	}
	if s.journal != "" {
		if _, body := s.get("/metrics"); !strings.Contains(body, "\noptions_record_journal_batches ") {
			s.t.Fatalf("sink %s runs with --journal-dir but exposes no journal metrics: "+
				"serve does not put the journal in front of the store (cmd/options-record/app.wrapJournal)", s.name)
		}
	}
}

// listening returns the addresses the sink's announcement (written after
// offset of its log) names, or empty strings before it is written.
func (s *sink) listening(offset int64) (webhook, metrics string) {
	f, err := os.Open(s.log)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		s.t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Msg, Webhook, Metrics string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving the audit webhook" && l.Webhook != "" && l.Metrics != "" {
			return l.Webhook, l.Metrics
		}
	}
	return "", ""
}

func (s *sink) newClient() *http.Client {
	s.t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.dir, "tls", "ca.crt"))
	if err != nil {
		s.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tok, err := os.ReadFile(filepath.Join(s.dir, "webhook-token"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.token = strings.TrimSpace(string(tok))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16}
	// The apiserver's webhook client times out after 30 s.
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// post sends an EventList and returns the status code (0 on a transport
// error) and how long the answer took.
func (s *sink) post(body []byte) (int, time.Duration, error) {
	req, _ := http.NewRequest(http.MethodPost, "https://"+s.webhook+"/audit?timeout=30s", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), nil
}

func (s *sink) get(path string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + s.metrics + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of an unlabelled metric, or of the series whose
// labels are given as `name{label="value"}`.
func (s *sink) metric(series string) float64 {
	s.t.Helper()
	code, body := s.get("/metrics")
	if code != http.StatusOK {
		s.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				s.t.Fatalf("metric %s: %q", series, line)
			}
			return v
		}
	}
	s.t.Fatalf("no metric %s", series)
	return 0
}

// waitDrained waits until the journal holds nothing.
func (s *sink) waitDrained(timeout time.Duration) time.Duration {
	s.t.Helper()
	start := time.Now()
	for s.metric("options_record_journal_batches") > 0 {
		if time.Since(start) > timeout {
			s.t.Fatalf("journal of %s not drained after %s: %v batches", s.name, timeout, s.metric("options_record_journal_batches"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

func (s *sink) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits.
func (s *sink) kill() {
	if s.cmd == nil || !s.alive() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// terminate sends SIGTERM and waits for the exit, at most timeout.
func (s *sink) terminate(timeout time.Duration) error {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return s.err
	case <-time.After(timeout):
		s.kill()
		return fmt.Errorf("sink %s did not stop within %s after SIGTERM", s.name, timeout)
	}
}

func (s *sink) logTail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return fmt.Sprintf("log of sink %s:\n%s", s.name, b)
}

// batch is one EventList with events whose identities are unique.
type batch struct {
	ids  []string
	body []byte
}

var batchSeq struct {
	sync.Mutex
	n int
}

// newBatch builds an EventList of n ConfigMap creates in namespace default,
// each with about 1 KB of data, stamped now.
func newBatch(prefix string, n int) batch {
	batchSeq.Lock()
	batchSeq.n++
	b := batchSeq.n
	batchSeq.Unlock()
	now := time.Now().UTC()
	evs := make([]*auditv1.Event, n)
	ids := make([]string, n)
	for i := range evs {
		id := fmt.Sprintf("%s-%06d-%03d", prefix, b, i)
		name := "cm-" + id
		ids[i] = id
		data := map[string]string{"payload": strings.Repeat("x", 1000), "id": id}
		evs[i] = gen.Event(gen.AuditID(id), gen.Namespace("default"), gen.Name(name), gen.At(now),
			gen.Response(gen.ConfigMap("default", name, "uid-"+id, int64(1000+b), data)))
	}
	return batch{ids: ids, body: gen.EventList(evs...)}
}

// loadResult is what a load run got acknowledged and what it gave up on.
type loadResult struct {
	mu      sync.Mutex
	acked   []batch
	dropped []batch // every attempt failed: the apiserver would drop the batch
	codes   map[int]int
	slowest time.Duration // slowest single answer
}

func (r *loadResult) ackedIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, b := range r.acked {
		ids = append(ids, b.ids...)
	}
	return ids
}

func (r *loadResult) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d batches acknowledged, %d dropped, answers %v, slowest %s",
		len(r.acked), len(r.dropped), r.codes, r.slowest.Round(time.Millisecond))
}

func (r *loadResult) ackedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked)
}

// waitAcked waits until n batches in all are acknowledged; the minute only
// stops a test whose sink acknowledges nothing ("did not happen").
func (r *loadResult) waitAcked(t *testing.T, n int, what string) {
	t.Helper()
	r.waitFor(t, what, func() bool { return len(r.acked) >= n })
}

// waitDropped waits until a batch has been given up on.
func (r *loadResult) waitDropped(t *testing.T, what string) {
	t.Helper()
	r.waitFor(t, what, func() bool { return len(r.dropped) > 0 })
}

func (r *loadResult) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within a minute: %s", what, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// loadSpec describes a load run: workers post batches of size events; a
// batch that gets no 2xx is retried like the apiserver does (attempts in
// all, the first retry after backoff, then ×1.5 each time), then dropped.
type loadSpec struct {
	workers, size, attempts int
	backoff                 time.Duration
	interval                time.Duration // between a worker's batches (the apiserver throttles to 10/s)
	prefix                  string
}

// runLoad posts batches to s until stop is closed; the returned function
// waits for the workers (each finishes its batch's attempts).
func runLoad(s *sink, spec loadSpec, stop <-chan struct{}) (*loadResult, func()) {
	r := &loadResult{codes: map[int]int{}}
	spec.attempts = max(spec.attempts, 1)
	var wg sync.WaitGroup
	for range spec.workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				b := newBatch(spec.prefix, spec.size)
				ok, wait := false, spec.backoff
				for a := 0; a < spec.attempts && !ok; a++ {
					if a > 0 {
						time.Sleep(wait)
						wait = wait * 3 / 2
					}
					code, d, _ := s.post(b.body)
					ok = code >= 200 && code < 300
					r.mu.Lock()
					r.codes[code]++
					r.slowest = max(r.slowest, d)
					r.mu.Unlock()
				}
				r.mu.Lock()
				if ok {
					r.acked = append(r.acked, b)
				} else {
					r.dropped = append(r.dropped, b)
				}
				r.mu.Unlock()
				time.Sleep(spec.interval)
			}
		})
	}
	return r, wg.Wait
}

// checkStoredOnce fails unless every id is stored exactly once.
func (c *cluster) checkStoredOnce(ids []string) {
	c.t.Helper()
	got := c.stored(ids)
	missing, twice := 0, 0
	for _, id := range ids {
		switch n := got[id]; {
		case n == 0:
			if missing++; missing <= 5 {
				c.t.Errorf("acknowledged event %s is not stored", id)
			}
		case n > 1:
			if twice++; twice <= 5 {
				c.t.Errorf("event %s stored %d times", id, n)
			}
		}
	}
	if missing > 0 || twice > 0 {
		c.t.Errorf("%d of %d acknowledged events missing, %d stored more than once", missing, len(ids), twice)
	}
}
