package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/notify"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// rig is the ingest (the real pipeline over a real PostgreSQL) and the
// sender's configuration, for one test.
type rig struct {
	t    *testing.T
	st   *store.Store
	pipe *auditsink.Pipeline
	cfg  *notify.Config
	// statuses are the rules' compile results.
	statuses []filter.RuleStatus
}

func newRig(t *testing.T, cfg *notify.Config, rules ...v1alpha1.OptionsRecordController) *rig {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	compiled, statuses := filter.Compile(rules, filter.Options{NotifyAllowed: cfg.Allowed})
	dg, err := model.NewSecretDigester([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: compiled}, st, auditsink.NewMetrics(prometheus.NewRegistry()),
		slog.New(slog.DiscardHandler)).WithSecretDigester(dg)
	return &rig{t: t, st: st, pipe: pipe, cfg: cfg, statuses: statuses}
}

// ingest stores events as the webhook would, and returns once committed.
func (r *rig) ingest(events ...auditv1.Event) auditsink.Outcome {
	r.t.Helper()
	out, err := r.pipe.Process(context.Background(), "default", events, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// start runs a sender until the test ends; it returns its registry.
func (r *rig) start(o notify.Options) *prometheus.Registry {
	r.t.Helper()
	reg := prometheus.NewRegistry()
	o.Config, o.Registerer = r.cfg, reg
	if o.Window == 0 {
		o.Window = time.Millisecond
	}
	if o.Poll == 0 {
		o.Poll = 20 * time.Millisecond
	}
	if o.Backoff.Duration == 0 {
		o.Backoff = wait.Backoff{Duration: 20 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 200 * time.Millisecond}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); notify.New(r.st, o).Run(ctx) }()
	r.t.Cleanup(func() { cancel(); <-done })
	return reg
}

// count is a single-row count from the outbox tables.
func (r *rig) count(sql string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.st.Pool().QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// rule is a trusted OptionsRecordController (no namespace: the operator's)
// routing to dests.
func rule(name, ns string, dests ...string) v1alpha1.OptionsRecordController {
	o := v1alpha1.OptionsRecordController{}
	o.Name, o.Namespace = name, ns
	for _, d := range dests {
		o.Spec.Notify = append(o.Spec.Notify, v1alpha1.NotifyRoute{Destination: d})
	}
	return o
}

// event reads a real audit event of filter/testdata/events.
func event(t *testing.T, name string, mods ...func(*auditv1.Event)) auditv1.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "filter", "testdata", "events", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev auditv1.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		m(&ev)
	}
	return ev
}

// receiver is an HTTP destination that keeps what it was sent; fail makes
// it answer 503 while it returns true.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	tries  int
	fail   func() bool
	got    chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{got: make(chan struct{}, 1000)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		rc.mu.Lock()
		rc.tries++
		if rc.fail != nil && rc.fail() {
			rc.mu.Unlock()
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		rc.bodies, rc.heads = append(rc.bodies, b), append(rc.heads, req.Header.Clone())
		rc.mu.Unlock()
		rc.got <- struct{}{}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// wait returns once n messages arrived (and fails after a minute).
func (rc *receiver) wait(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(time.Minute)
	for range n {
		select {
		case <-rc.got:
		case <-timeout:
			t.Fatalf("waited a minute for %d messages", n)
		}
	}
}

// quiet reports whether no further message arrives while the sender makes
// and sends every message due (it waits for the outbox to have nothing
// left to send).
func (r *rig) drained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if r.count(`SELECT count(*) FROM notification_outbox WHERE message_id IS NULL`) == 0 &&
			r.count(`SELECT count(*) FROM notification_messages WHERE sent_at IS NULL AND dropped_at IS NULL`) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the outbox did not drain in a minute")
}

func secretFile(t *testing.T, secret string) string {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
