package firehose_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/firehose"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
	. "github.com/options-record/options-record/test/gen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const accessKey = "firehose-test-access-key"

// endpoint is the Firehose endpoint over a fresh real database.
type endpoint struct {
	t    *testing.T
	srv  *httptest.Server
	pool *pgxpool.Pool
	reg  *prometheus.Registry
}

func newEndpoint(t *testing.T, o firehose.Options) *endpoint {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	objs, err := filter.LoadFile("../testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	dg, err := model.NewSecretDigester([]byte("firehose-test-digest-key"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := auditsink.NewMetrics(reg)
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, st, m, nil).WithSecretDigester(dg)
	// The webhook's own clients (none of them posts here).
	auth, err := auditsink.NewAuthenticator(nil, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{Pipeline: pipe, Authenticator: auth,
		Metrics: m, Lag: auditsink.NewSourceLag(reg)})
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(accessKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.AccessKeyFile = keyFile
	o.Registerer = reg
	if o.DefaultCluster == "" && o.Clusters == nil {
		o.DefaultCluster = "default"
	}
	d, err := firehose.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeDelivery(w, r, d) }))
	t.Cleanup(srv.Close)
	return &endpoint{t: t, srv: srv, pool: st.Pool(), reg: reg}
}

// logEvent is one CloudWatch Logs log event.
type logEvent struct {
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"`
	Message   string `json:"message"`
}

// dataMessage is what a CloudWatch Logs subscription filter writes to
// Firehose for the audit log lines of one log stream: a DATA_MESSAGE,
// gzipped.
func dataMessage(logGroup, stream string, lines ...string) []byte {
	evs := make([]logEvent, len(lines))
	for i, l := range lines {
		evs[i] = logEvent{ID: fmt.Sprintf("3719524388817%019d", i), Timestamp: Base.Add(time.Duration(i) * time.Second).UnixMilli(), Message: l}
	}
	return gz(mustJSON(map[string]any{
		"messageType": "DATA_MESSAGE", "owner": "123456789012", "logGroup": logGroup, "logStream": stream,
		"subscriptionFilters": []string{"options-record"}, "logEvents": evs,
	}))
}

// controlMessage is the message CloudWatch Logs sends to check that the
// destination is reachable.
func controlMessage() []byte {
	return gz(mustJSON(map[string]any{
		"messageType": "CONTROL_MESSAGE", "owner": "CloudwatchLogs", "logGroup": "", "logStream": "",
		"subscriptionFilters": []string{},
		"logEvents":           []logEvent{{ID: "", Timestamp: Base.UnixMilli(), Message: "CWL CONTROL MESSAGE: Checking health of destination Firehose."}},
	}))
}

// body is a Firehose delivery request's body.
func body(id string, records ...[]byte) []byte {
	recs := make([]map[string][]byte, len(records))
	for i, r := range records {
		recs[i] = map[string][]byte{"data": r} // base64, as encoding/json writes []byte
	}
	return mustJSON(map[string]any{"requestId": id, "timestamp": Base.UnixMilli(), "records": recs})
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// line is an event as the log backend writes it.
func line(ev *auditv1.Event) string { return strings.TrimSuffix(string(Lines(ev)), "\n") }

type answer struct {
	status       int
	RequestID    string `json:"requestId"`
	Timestamp    int64  `json:"timestamp"`
	ErrorMessage string `json:"errorMessage"`
}

// post delivers a request as Firehose does.
func (e *endpoint) post(id, key string, b []byte, header ...string) answer {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/firehose", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(firehose.HeaderRequestID, id)
	req.Header.Set(firehose.HeaderProtocolVersion, "1.0")
	req.Header.Set("X-Amz-Firehose-Source-Arn", "arn:aws:firehose:us-east-1:123456789012:deliverystream/eks-audit")
	if key != "" {
		req.Header.Set(firehose.HeaderAccessKey, key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		e.t.Fatalf("answer %d is not the specification's JSON: %q", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("answer content type %q", ct)
	}
	a.status = resp.StatusCode
	return a
}

func (e *endpoint) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

const group = "/aws/eks/prod/cluster"

// lifecycle is a ConfigMap created, updated (a body CloudWatch Logs cuts)
// and deleted with an admission observation's annotation.
func lifecycle() (create, update, del *auditv1.Event) {
	const uid = "22222222-0000-0000-0000-000000000001"
	create = Event(Verb("create"), User("alice"), Name("app"),
		Request(ConfigMap("default", "app", "", 0, map[string]string{"k": "v1"})),
		Response(ConfigMap("default", "app", uid, 100, map[string]string{"k": "v1"})))
	big := strings.Repeat("x", 300<<10)
	update = Event(Verb("update"), User("bob"), Name("app"),
		Request(ConfigMap("default", "app", uid, 100, map[string]string{"k": big})),
		Response(ConfigMap("default", "app", uid, 105, map[string]string{"k": big})))
	del = Event(Verb("delete"), User("carol"), Name("app"), Code(200),
		Response(Status("", "configmaps", "app", uid)))
	del.Annotations = map[string]string{"observe.optionsrecord.io/state": "obs-1234"}
	return create, update, del
}

// cut is a line as CloudWatch Logs stores one over its 256 KiB limit.
func cut(l string) string { return l[:256<<10-len(`[Truncated...]`)] + `[Truncated...]` }

func TestFirehoseDeliveryIsRecordedOnceAndAnsweredAsSpecified(t *testing.T) {
	e := newEndpoint(t, firehose.Options{})
	create, update, del := lifecycle()
	req := body("f5a1c9e2-0000-4000-8000-000000000001",
		controlMessage(),
		dataMessage(group, "kube-apiserver-audit-0a1b2c", line(create), cut(line(update))),
		// Another stream of the group: the apiserver's own log, not audit.
		dataMessage(group, "kube-apiserver-0a1b2c", "I1126 10:00:00.000000 1 controller.go:1] started"),
		dataMessage(group, "kube-apiserver-audit-3d4e5f", line(del)),
	)
	a := e.post("f5a1c9e2-0000-4000-8000-000000000001", accessKey, req)
	if a.status != http.StatusOK || a.RequestID != "f5a1c9e2-0000-4000-8000-000000000001" || a.Timestamp == 0 || a.ErrorMessage != "" {
		t.Fatalf("answer %+v, want 200 with the request id and a timestamp", a)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 3 {
		t.Fatalf("%d events stored, want 3 (create, the cut update, delete)", n)
	}
	// Who deleted it, and the state it had: the create's.
	var who string
	var prior map[string]any
	if err := e.pool.QueryRow(context.Background(),
		`SELECT username, prior_object FROM deletions WHERE cluster = 'default' AND name = 'app'`).Scan(&who, &prior); err != nil {
		t.Fatal(err)
	}
	if who != "carol" {
		t.Errorf("deleted by %q, want carol", who)
	}
	// The cut update is kept as what it proves: bob updated app, without
	// the state it wrote; the delete's prior state is then the last one
	// known (v1) or unknown, never invented.
	var user, annotations string
	if err := e.pool.QueryRow(context.Background(),
		`SELECT username, annotations::text FROM events WHERE verb = 'update' AND name = 'app'`).Scan(&user, &annotations); err != nil {
		t.Fatal(err)
	}
	if user != "bob" || !strings.Contains(annotations, `"audit.k8s.io/truncated": "true"`) {
		t.Errorf("cut update: user %q annotations %s, want bob and audit.k8s.io/truncated", user, annotations)
	}
	// The admission observation's annotation survives the wrapping.
	if n := e.count(`SELECT count(*) FROM events WHERE verb = 'delete' AND annotations ->> 'observe.optionsrecord.io/state' = 'obs-1234'`); n != 1 {
		t.Errorf("the delete's observe.optionsrecord.io annotation was not stored")
	}
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "options_record_firehose_records_total", "CONTROL_MESSAGE")); got != 1 {
		t.Errorf("control messages counted %v, want 1", got)
	}
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "options_record_firehose_truncated_lines_kept_total", "")); got != 1 {
		t.Errorf("truncated lines kept %v, want 1", got)
	}

	// Firehose retries the same request (same id) when it did not see the
	// answer: nothing is stored twice.
	versions := e.count(`SELECT count(*) FROM object_versions`)
	if a := e.post("f5a1c9e2-0000-4000-8000-000000000001", accessKey, req); a.status != http.StatusOK {
		t.Fatalf("retry answered %+v", a)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 3 {
		t.Errorf("after the retry %d events, want 3", n)
	}
	if n := e.count(`SELECT count(*) FROM object_versions`); n != versions {
		t.Errorf("after the retry %d versions, want %d", n, versions)
	}
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "options_record_versions_stored_total", "duplicate_event")); got != 3 {
		t.Errorf("duplicate events counted %v, want 3", got)
	}
}

func TestFirehoseRefusesAsSpecified(t *testing.T) {
	e := newEndpoint(t, firehose.Options{})
	create, _, _ := lifecycle()
	req := body("r-1", dataMessage(group, "kube-apiserver-audit-1", line(create)))
	for _, c := range []struct {
		name   string
		key    string
		b      []byte
		header []string
		want   int
	}{
		{"no key", "", req, nil, http.StatusUnauthorized},
		{"wrong key", accessKey + "x", req, nil, http.StatusUnauthorized},
		{"a key's prefix", accessKey[:5], req, nil, http.StatusUnauthorized},
		{"another protocol", accessKey, req, []string{firehose.HeaderProtocolVersion, "2.0"}, http.StatusBadRequest},
		{"not JSON", accessKey, []byte("{"), nil, http.StatusBadRequest},
		{"ids differ", accessKey, body("r-2"), nil, http.StatusBadRequest},
		{"brotli", accessKey, req, []string{"Content-Encoding", "br"}, http.StatusUnsupportedMediaType},
	} {
		a := e.post("r-1", c.key, c.b, c.header...)
		if a.status != c.want || a.RequestID != "r-1" || a.ErrorMessage == "" || a.Timestamp == 0 {
			t.Errorf("%s: answered %+v, want %d with requestId, timestamp and errorMessage", c.name, a, c.want)
		}
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d events stored from refused requests", n)
	}
	// A gzip-compressed body (Content-Encoding: gzip) is taken.
	if a := e.post("r-1", accessKey, gz(req), "Content-Encoding", "gzip"); a.status != http.StatusOK {
		t.Fatalf("gzip body answered %+v", a)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 1 {
		t.Errorf("%d events stored from the gzip body, want 1", n)
	}
}

func TestFirehoseCompressionBombIsRefused(t *testing.T) {
	e := newEndpoint(t, firehose.Options{MaxDecodedBytes: 1 << 20})
	bomb := gz(bytes.Repeat([]byte(" "), 4<<20))
	a := e.post("bomb", accessKey, body("bomb", bomb))
	if a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a record inflating past the limit answered %+v, want 413", a)
	}
}

func TestFirehoseLogGroupsMapToClusters(t *testing.T) {
	e := newEndpoint(t, firehose.Options{Clusters: map[string]string{group: "prod", "/aws/eks/staging/cluster": "staging"}})
	create, _, _ := lifecycle()
	other := Event(Verb("create"), User("dave"), Name("other"))
	a := e.post("m-1", accessKey, body("m-1",
		dataMessage(group, "kube-apiserver-audit-1", line(create)),
		dataMessage("/aws/eks/staging/cluster", "kube-apiserver-audit-1", line(other)),
		dataMessage("/aws/eks/unknown/cluster", "kube-apiserver-audit-1", line(Event(Name("x")))),
	))
	if a.status != http.StatusOK {
		t.Fatalf("answered %+v", a)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE cluster = 'prod' AND name = 'app'`); n != 1 {
		t.Errorf("prod has %d events of app, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE cluster = 'staging' AND name = 'other'`); n != 1 {
		t.Errorf("staging has %d events of other, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 2 {
		t.Errorf("%d events, want 2: the unknown log group's are not recorded", n)
	}
	if got := testutil.ToFloat64(mustCounter(t, e.reg, "options_record_firehose_log_events_skipped_total", "unknown_log_group")); got != 1 {
		t.Errorf("unknown log group's events counted %v, want 1", got)
	}
}

// Two apiservers write their own audit logs (their own log streams); a
// delivery brings them late and out of order: the record is the one the
// events in order give.
func TestFirehoseOutOfOrderAcrossApiservers(t *testing.T) {
	const uid = "33333333-0000-0000-0000-000000000001"
	evs := []*auditv1.Event{
		Event(Verb("create"), User("alice"), Name("d"), Response(ConfigMap("default", "d", uid, 10, map[string]string{"k": "1"}))),
		Event(Verb("update"), User("bob"), Name("d"), Response(ConfigMap("default", "d", uid, 20, map[string]string{"k": "2"}))),
		Event(Verb("update"), User("carol"), Name("d"), Response(ConfigMap("default", "d", uid, 30, map[string]string{"k": "3"}))),
		Event(Verb("delete"), User("dave"), Name("d"), Code(200), Response(Status("", "configmaps", "d", uid))),
	}
	history := func(e *endpoint) string {
		rows, err := e.pool.Query(context.Background(),
			`SELECT verb, username, coalesce(prior_object->'data'->>'k', '-'), coalesce(object->'data'->>'k', '-')
			 FROM object_history WHERE name = 'd' ORDER BY resource_version NULLS LAST, changed_at`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var v, u, p, o string
			_ = rows.Scan(&v, &u, &p, &o)
			fmt.Fprintf(&b, "%s %s %s→%s\n", v, u, p, o)
		}
		return b.String()
	}
	inOrder := newEndpoint(t, firehose.Options{})
	inOrder.post("o-1", accessKey, body("o-1", dataMessage(group, "kube-apiserver-audit-a", line(evs[0]), line(evs[1]), line(evs[2]), line(evs[3]))))
	late := newEndpoint(t, firehose.Options{})
	// apiserver b served the second update and the delete; its stream is
	// delivered first, apiserver a's after.
	if a := late.post("o-2", accessKey, body("o-2", dataMessage(group, "kube-apiserver-audit-b", line(evs[3]), line(evs[2])))); a.status != http.StatusOK {
		t.Fatal(a)
	}
	if a := late.post("o-3", accessKey, body("o-3", dataMessage(group, "kube-apiserver-audit-a", line(evs[1]), line(evs[0])))); a.status != http.StatusOK {
		t.Fatal(a)
	}
	want, got := history(inOrder), history(late)
	if want == "" || got != want {
		t.Errorf("out of order:\n%s\nin order:\n%s", got, want)
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name, label string) prometheus.Collector {
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
			if label == "" || (len(m.GetLabel()) > 0 && m.GetLabel()[len(m.GetLabel())-1].GetValue() == label) {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	return c
}
