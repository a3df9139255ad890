package pubsub_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/pubsub"
	"github.com/options-record/options-record/auditsink/pubsub/pubsubtest"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

// sink is the push endpoint over a real database, served over TLS.
type sink struct {
	t      *testing.T
	dsn    string
	st     *store.Store
	pool   *pgxpool.Pool
	google *pubsubtest.Google
	reg    *prometheus.Registry
	lag    *auditsink.SourceLag
	srv    *httptest.Server
	url    string
	modify func(*auditsink.HandlerOptions)
}

func newSink(t *testing.T, g *pubsubtest.Google) *sink {
	t.Helper()
	s := &sink{t: t, dsn: pgtest.NewDatabase(t), google: g}
	s.open()
	return s
}

// open opens the store and serves a handler over it (again, after close).
func (s *sink) open() {
	t := s.t
	st, err := store.Open(t.Context(), store.Options{URL: s.dsn})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	objs, err := filter.LoadFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	dg, err := model.NewSecretDigester([]byte("options-record-test-digest-key"))
	if err != nil {
		t.Fatal(err)
	}
	s.reg = prometheus.NewRegistry()
	s.lag = auditsink.NewSourceLag(s.reg)
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, st, auditsink.NewMetrics(nil), nil).WithSecretDigester(dg)
	d, err := pubsub.New(pubsub.Options{Cluster: "prod", Verifier: s.google.Verifier(t), Registerer: s.reg})
	if err != nil {
		t.Fatal(err)
	}
	// The webhook's handler serves the delivery, as serve does (its own
	// clients: any verified certificate, which this server asks none for).
	auth, err := auditsink.NewAuthenticator(nil, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	o := auditsink.HandlerOptions{Pipeline: pipe, Authenticator: auth, Lag: s.lag}
	if s.modify != nil {
		s.modify(&o)
	}
	h, err := auditsink.NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.srv != nil {
		s.srv.Close()
	}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeDelivery(w, r, d) }))
	t.Cleanup(s.srv.Close)
	s.st, s.pool, s.url = st, st.Pool(), s.srv.URL+pubsub.Path
}

func (s *sink) push(token string, body []byte) int {
	s.t.Helper()
	return push(s.t, s.srv.Client(), s.url, token, body)
}

func (s *sink) count(sql string) int {
	s.t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// historyRow is a row of object_history, as the tests compare it.
type historyRow struct {
	Verb, Username                  string
	ImpersonatedUser                *string
	Namespace, Name                 string
	ResourceVersion                 *int64
	PriorKnown, Deleted, SecretDigd bool
	Object                          map[string]any
}

func (s *sink) history() []historyRow {
	s.t.Helper()
	rows, err := s.pool.Query(context.Background(), `
		SELECT verb, username, impersonated_user, namespace, name, resource_version, prior_known, deleted, secret_digested, object
		FROM object_history WHERE cluster = 'prod'
		ORDER BY namespace, name, changed_at, resource_version NULLS LAST`)
	if err != nil {
		s.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[historyRow])
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// sample is one converted event of the captured testdata.
func sample(t *testing.T, verb, name string) pubsub.LogEntry {
	t.Helper()
	for _, ev := range captured(t) {
		if ev.Verb == verb && ev.ObjectRef.Name == name {
			return toGKE(t, &ev)
		}
	}
	t.Fatalf("no %s of %s in testdata", verb, name)
	return pubsub.LogEntry{}
}

func TestPushIsRefusedWithoutAValidToken(t *testing.T) {
	t.Parallel()
	g := newGoogle(t)
	s := newSink(t, g)
	body := pushBody(t, sample(t, "create", "settings"), time.Now())
	other := newGoogle(t) // another key, same kid: a forged token
	tests := []struct {
		name  string
		token string
	}{
		{"no token", ""},
		{"not a JWT", "swordfish"},
		{"wrong audience", g.Token(t, func(c *claims) { c.Audience = jwt.Audience{"https://other.example/push"} })},
		{"expired", g.Token(t, func(c *claims) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour)) })},
		{"wrong issuer", g.Token(t, func(c *claims) { c.Issuer = "https://evil.example" })},
		{"another push service account", g.Token(t, func(c *claims) { c.Email = "other@proj.iam.gserviceaccount.com" })},
		{"email not verified", g.Token(t, func(c *claims) { c.EmailVerified = false })},
		{"signed by another key", other.Sign(t, other.Key, claims{Issuer: "https://accounts.google.com", Audience: jwt.Audience{testAudience},
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), Email: testAccount, EmailVerified: true})},
	}
	for _, tc := range tests {
		if code := s.push(tc.token, body); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tc.name, code)
		}
	}
	if n := s.count(`SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("refused pushes stored %d events", n)
	}
	if got := gathered(t, s.reg, "options_record_pubsub_pushes_total", "unauthenticated"); got != float64(len(tests)) {
		t.Errorf("unauthenticated pushes counted %v, want %d", got, len(tests))
	}
	// The same push, with the token Pub/Sub would send (either spelling of
	// Google's issuer), is stored.
	if code := s.push(g.Token(t, func(c *claims) { c.Issuer = "accounts.google.com" }), body); code != http.StatusOK {
		t.Fatalf("valid push: status %d", code)
	}
	if n := s.count(`SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("valid push stored %d events, want 1", n)
	}
}

// gathered is the value of the series of metric name whose labels
// include the value label ("" for a series without labels).
// gatheredCount counts the series of name carrying every label value.
func gatheredCount(t *testing.T, reg *prometheus.Registry, name string, values ...string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]bool{}
			for _, l := range m.GetLabel() {
				have[l.GetValue()] = true
			}
			all := true
			for _, v := range values {
				all = all && have[v]
			}
			if all {
				n++
			}
		}
	}
	return n
}

func gathered(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetValue() == label
			}
			if !match {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

func TestPushAcknowledgesOnlyWhatIsStored(t *testing.T) {
	t.Parallel()
	g := newGoogle(t)
	s := newSink(t, g)
	body := pushBody(t, sample(t, "delete", "creds"), time.Now())
	// The database is gone: the push is refused with a status Pub/Sub
	// retries, and nothing is acknowledged.
	s.st.Close()
	if code := s.push(g.Token(t), body); code != http.StatusServiceUnavailable {
		t.Fatalf("push with the store down: status %d, want 503", code)
	}
	if at, ok := s.lag.Newest(pubsub.Source, "prod"); ok {
		t.Errorf("the lag counts an event that was not stored (newest at %v)", at)
	}
	// Pub/Sub pushes it again once the sink is back: stored once.
	s.open()
	for range 2 {
		if code := s.push(g.Token(t), body); code != http.StatusOK {
			t.Fatalf("push again: status %d", code)
		}
	}
	if _, ok := s.lag.Newest(pubsub.Source, "prod"); !ok {
		t.Error("the lag does not count the event once stored")
	}
	if n := s.count(`SELECT count(*) FROM events`); n != 1 {
		t.Fatalf("stored %d events, want 1", n)
	}
}

func TestPushOfAnotherEntryIsAcknowledgedAndCounted(t *testing.T) {
	t.Parallel()
	g := newGoogle(t)
	s := newSink(t, g)
	e := sample(t, "delete", "creds")
	e.ProtoPayload.ServiceName = "container.googleapis.com"
	if code := s.push(g.Token(t), pushBody(t, e, time.Now())); code != http.StatusOK {
		t.Fatalf("status %d, want 200 (a refusal would be pushed again forever)", code)
	}
	if code := s.push(g.Token(t), []byte(`{"message":{"data":"bm90IGpzb24="}}`)); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	if code := s.push(g.Token(t), []byte(`not a push`)); code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", code)
	}
	if n := s.count(`SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("stored %d events, want 0", n)
	}
}

func TestPushBounds(t *testing.T) {
	t.Parallel()
	g := newGoogle(t)
	s := &sink{t: t, dsn: pgtest.NewDatabase(t), google: g, modify: func(o *auditsink.HandlerOptions) {
		o.MaxBodyBytes = 4 << 10
		o.Horizon = func() time.Duration { return 48 * time.Hour }
	}}
	s.open()
	e := sample(t, "delete", "creds")
	big := e
	big.Labels = map[string]string{"padding": strings.Repeat("x", 8<<10)}
	if code := s.push(g.Token(t), pushBody(t, big, time.Now())); code != http.StatusRequestEntityTooLarge {
		t.Errorf("push over the size cap: %d, want 413", code)
	}
	old := e
	old.Timestamp = time.Now().Add(-72 * time.Hour)
	if code := s.push(g.Token(t), pushBody(t, old, time.Now())); code != http.StatusOK {
		t.Errorf("push of an event older than the record keeps: %d, want 200 (skipped, counted)", code)
	}
	if n := s.count(`SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("stored %d events, want 0", n)
	}
	req, _ := http.NewRequest(http.MethodGet, s.url, nil)
	req.Header.Set("Authorization", "Bearer "+g.Token(t))
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
}

func TestPushLagMetrics(t *testing.T) {
	t.Parallel()
	g := newGoogle(t)
	s := newSink(t, g)
	older, newer := sample(t, "create", "settings"), sample(t, "delete", "creds")
	for _, e := range []pubsub.LogEntry{newer, older} { // out of order
		if code := s.push(g.Token(t), pushBody(t, e, e.Timestamp.Add(2*time.Second))); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	// The same metrics as every managed source's, labelled pubsub.
	got, ok := s.lag.Newest(pubsub.Source, "prod")
	if !ok || !got.Equal(newer.Timestamp) {
		t.Errorf("newest event %v (%v), want %v (the newer event's, not the last pushed)", got, ok, newer.Timestamp)
	}
	if n := gatheredCount(t, s.reg, "options_record_source_newest_event_age_seconds", pubsub.Source, "prod"); n != 1 {
		t.Errorf("newest event age series for source pubsub, cluster prod: %d, want 1", n)
	}
	if n := gathered(t, s.reg, "options_record_source_delivery_delay_seconds", pubsub.Source); n != 2 {
		t.Errorf("delivery delays observed %v, want 2", n)
	}
}

// TestPushesFromARealAPIServer: a real kube-apiserver writes its audit
// log, the shipper pushes its lines as GKE's entries, signed; the record
// says who deleted the ConfigMap and the Secret (a digest, never the
// value). Pushed in order to one sink, and out of order and twice to
// another (Pub/Sub delivers at least once, in no order), the two records
// are the same.
func TestPushesFromARealAPIServer(t *testing.T) {
	t.Parallel()
	events := runWorkload(t)
	g := newGoogle(t)
	inOrder, shuffled := newSink(t, g), newSink(t, g)
	entries := make([]pubsub.LogEntry, len(events))
	for i := range events {
		entries[i] = toGKE(t, &events[i])
	}
	for _, e := range entries {
		if code := inOrder.push(g.Token(t), pushBody(t, e, e.Timestamp)); code != http.StatusOK {
			t.Fatalf("push: %d", code)
		}
	}
	again := slices.Clone(entries)
	slices.Reverse(again)
	again = append(again, entries...)
	for _, e := range again {
		if code := shuffled.push(g.Token(t), pushBody(t, e, e.Timestamp.Add(time.Minute))); code != http.StatusOK {
			t.Fatalf("push: %d", code)
		}
	}
	for _, s := range []*sink{inOrder, shuffled} {
		if n := s.count(`SELECT count(*) FROM events`); n != len(events) {
			t.Errorf("stored %d events of %d pushed: a redelivery added rows, or an event was lost", n, len(events))
		}
	}
	h := inOrder.history()
	if diff := cmp.Diff(h, shuffled.history()); diff != "" {
		t.Errorf("the record of pushes out of order and redelivered differs (-in order +shuffled):\n%s", diff)
	}
	deletedBy := map[string]string{}
	for _, r := range h {
		if r.Deleted {
			deletedBy[r.Name] = r.Username
		}
		if r.Name == "creds" && !r.SecretDigd {
			t.Errorf("Secret version stored without digesting: %+v", r)
		}
		if r.Name == "by-carol" && (r.ImpersonatedUser == nil || *r.ImpersonatedUser != "carol" || r.Username != "options-record-e2e-admin") {
			t.Errorf("impersonated create: user %q as %v", r.Username, r.ImpersonatedUser)
		}
	}
	if deletedBy["settings"] != "bob" || deletedBy["creds"] != "bob" {
		t.Errorf("deleted by %v, want bob for the ConfigMap settings and the Secret creds", deletedBy)
	}
	var leaked int
	if err := inOrder.pool.QueryRow(t.Context(), `SELECT count(*) FROM object_versions WHERE object::text LIKE '%aHVudGVyMg%' OR object::text LIKE '%hunter2%'`).Scan(&leaked); err != nil {
		t.Fatal(err)
	}
	if leaked != 0 {
		t.Errorf("the Secret's value is stored in clear in %d versions", leaked)
	}
	// The apiserver's annotations came through GKE's labels.
	var ann string
	if err := inOrder.pool.QueryRow(t.Context(), `SELECT annotations::text FROM events WHERE verb = 'delete' AND response_code = 403`).Scan(&ann); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ann, `"authorization.k8s.io/decision": "forbid"`) {
		t.Errorf("the refused delete's annotations = %s", ann)
	}
}
