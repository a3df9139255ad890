package eventhubs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/eventhubs"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
	. "github.com/options-record/options-record/test/gen"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	hub     = "aks-audit"
	connStr = "Endpoint=sb://test.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0"
)

// hubs is an in-process Kafka standing in for Event Hubs' Kafka endpoint:
// SASL PLAIN with the user $ConnectionString, as Event Hubs asks.
func hubs(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, hub),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", eventhubs.ConnectionStringUser, connStr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// record is one resource-log record as Azure Monitor exports AKS's audit
// log: the Event as a string in properties.log.
func record(category string, ev *auditv1.Event) map[string]any {
	line := strings.TrimSuffix(string(Lines(ev)), "\n")
	return map[string]any{
		"operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
		"category":      category,
		"ccpNamespace":  "65f1a2b3c4d5e6f7a8b9c0d1",
		"resourceId":    "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000000/RESOURCEGROUPS/RG/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/PROD",
		"properties":    map[string]any{"log": line, "stream": "stdout", "pod": "kube-apiserver-6d4f8b7c9-x2x7k"},
		"time":          ev.StageTimestamp.Time.UTC().Format(time.RFC3339Nano),
		"Cloud":         "AzureCloud",
		"Environment":   "prod",
	}
}

func document(recs ...map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"records": recs})
	if err != nil {
		panic(err)
	}
	return b
}

// produce sends documents to a partition, as the diagnostic setting does.
func produce(t *testing.T, c *kfake.Cluster, partition int32, docs ...[]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SASL(plain.Auth{User: eventhubs.ConnectionStringUser, Pass: connStr}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, d := range docs {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: hub, Partition: partition, Value: d}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

type env struct {
	t    *testing.T
	st   *store.Store
	pool *pgxpool.Pool
	pipe *auditsink.Pipeline
	reg  *prometheus.Registry // the pipeline's metrics
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	objs, err := filter.LoadFile("../testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	dg, err := model.NewSecretDigester([]byte("eventhubs-test-digest-key"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, st, auditsink.NewMetrics(reg), nil).WithSecretDigester(dg)
	return &env{t: t, st: st, pool: st.Pool(), pipe: pipe, reg: reg}
}

// run starts a consumer (a replica) until the test ends.
func (e *env) run(c *kfake.Cluster, reg prometheus.Registerer) {
	e.t.Helper()
	cons, err := eventhubs.New(eventhubs.Options{
		Brokers: c.ListenAddrs(), Topic: hub, Group: "$Default", ConnectionString: connStr, Cluster: "default",
		Pipeline: e.pipe, Store: e.st, Registerer: reg,
		ClientOpts: []kgo.Opt{kgo.FetchMaxWait(100 * time.Millisecond)},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := cons.Run(ctx); err != nil {
			e.t.Errorf("consumer: %v", err)
		}
	}()
	e.t.Cleanup(func() { cancel(); wg.Wait() })
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// waitCheckpoints waits until the checkpoints say every record produced
// was stored (a consumer that never gets there fails the test).
func (e *env) waitCheckpoints(want map[int32]int64) {
	e.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := e.st.Checkpoints(context.Background(), eventhubs.Source, "$Default", hub)
		if err != nil {
			e.t.Fatal(err)
		}
		done := true
		for p, o := range want {
			if got[p] < o {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("checkpoints %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEventHubsRecordsOnceAcrossCategoriesRedeliveriesAndReplicas(t *testing.T) {
	c := hubs(t)
	e := newEnv(t)
	const uid = "44444444-0000-0000-0000-000000000001"
	create := Event(Verb("create"), User("alice"), Name("app"),
		Request(ConfigMap("default", "app", "", 0, map[string]string{"k": "v1"})),
		Response(ConfigMap("default", "app", uid, 100, map[string]string{"k": "v1"})))
	update := Event(Verb("update"), User("bob"), Name("app"),
		Request(ConfigMap("default", "app", uid, 100, map[string]string{"k": "v2"})),
		Response(ConfigMap("default", "app", uid, 105, map[string]string{"k": "v2"})))
	del := Event(Verb("delete"), User("carol"), Name("app"), Code(200), Response(Status("", "configmaps", "app", uid)))
	del.Annotations = map[string]string{"observe.optionsrecord.io/state": "obs-77"}
	secret := Event(Verb("delete"), User("mallory"), Namespace("default"), Name("db"), Resource("", "v1", "secrets"), Code(200),
		Response(Secret("default", "db", "55555555-0000-0000-0000-000000000001", 200, map[string]string{"password": "hunter2"})))
	// A body AKS did not export.
	big := Event(Verb("update"), User("dave"), Name("big"),
		Request(ConfigMap("default", "big", "66666666-0000-0000-0000-000000000001", 1, map[string]string{"k": "x"})))
	bigDoc := document(record("kube-audit-admin", big))
	bigDoc = []byte(strings.Replace(string(bigDoc), `\"requestObject\":{`, `\"requestObject\":\"skipped-too-big-size-object\",\"x\":{`, 1))

	// Two replicas of the sink share the hub's two partitions.
	e.run(c, prometheus.NewRegistry())
	e.run(c, nil)
	// Both categories carry every change (kube-audit-admin leaves out
	// reads): the same event twice, recorded once. The apiserver's own
	// log category is skipped.
	produce(t, c, 0,
		document(record("kube-audit", create), record("kube-audit-admin", create)),
		document(record("kube-audit-admin", update), record("kube-apiserver", update)),
		bigDoc)
	// A record whose time does not parse costs its document nothing.
	oddTime := record("kube-audit-admin", secret)
	oddTime["time"] = "26/11/2026 10:00"
	produce(t, c, 1, document(record("kube-audit-admin", del), oddTime))
	e.waitCheckpoints(map[int32]int64{0: 3, 1: 1})

	if n := e.count(`SELECT count(*) FROM events`); n != 5 {
		t.Fatalf("%d events stored, want 5", n)
	}
	var who string
	var prior map[string]any
	if err := e.pool.QueryRow(context.Background(),
		`SELECT username, prior_object FROM deletions WHERE name = 'app'`).Scan(&who, &prior); err != nil {
		t.Fatal(err)
	}
	if d, _ := prior["data"].(map[string]any); who != "carol" || d["k"] != "v2" {
		t.Errorf("app deleted by %q from %v, want carol from k=v2", who, prior)
	}
	var secretData string
	if err := e.pool.QueryRow(context.Background(),
		`SELECT username || ' ' || coalesce(prior_object->'data'->>'password', '-') FROM object_history WHERE name = 'db'`).Scan(&secretData); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secretData, "mallory ") || secretData == "mallory -" || strings.Contains(secretData, "hunter2") || strings.Contains(secretData, "aHVudGVyMg") {
		t.Errorf("secret delete recorded as %q: want mallory and a digest, never the value", secretData)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE annotations ->> 'observe.optionsrecord.io/state' = 'obs-77'`); n != 1 {
		t.Errorf("the observe.optionsrecord.io annotation did not survive properties.log")
	}
	if n := e.count(`SELECT count(*) FROM events WHERE name = 'big' AND annotations ->> 'audit.k8s.io/truncated' = 'true' AND request_object IS NULL`); n != 1 {
		t.Errorf("the update whose body AKS skipped is not kept marked truncated without it")
	}

	// Azure delivers a document again (at-least-once): nothing doubles.
	versions := e.count(`SELECT count(*) FROM object_versions`)
	produce(t, c, 1, document(record("kube-audit-admin", del), record("kube-audit", secret)))
	e.waitCheckpoints(map[int32]int64{0: 3, 1: 2})
	if n := e.count(`SELECT count(*) FROM events`); n != 5 {
		t.Errorf("after a redelivery %d events, want 5", n)
	}
	if n := e.count(`SELECT count(*) FROM object_versions`); n != versions {
		t.Errorf("after a redelivery %d versions, want %d", n, versions)
	}
}

// A replica that starts later begins where the checkpoints say, not at the
// start of what the hub retains.
func TestEventHubsResumesFromPostgreSQLCheckpoints(t *testing.T) {
	c := hubs(t)
	e := newEnv(t)
	produce(t, c, 0, document(record("kube-audit", Event(Name("a")))), document(record("kube-audit", Event(Name("b")))))
	// Records 0 and 1 of partition 0 are stored, as far as the record
	// knows, by an earlier replica.
	if err := e.st.CommitCheckpoints(context.Background(), eventhubs.Source, "$Default", hub, map[int32]int64{0: 2}); err != nil {
		t.Fatal(err)
	}
	produce(t, c, 0, document(record("kube-audit", Event(Name("c")))))
	e.run(c, nil)
	e.waitCheckpoints(map[int32]int64{0: 3})
	var names string
	if err := e.pool.QueryRow(context.Background(), `SELECT string_agg(name, ',' ORDER BY name) FROM events`).Scan(&names); err != nil {
		t.Fatal(err)
	}
	if names != "c" {
		t.Errorf("stored %q, want only c (a and b were before the checkpoint)", names)
	}
	// A checkpoint never moves back.
	if err := e.st.CommitCheckpoints(context.Background(), eventhubs.Source, "$Default", hub, map[int32]int64{0: 1}); err != nil {
		t.Fatal(err)
	}
	if cps, _ := e.st.Checkpoints(context.Background(), eventhubs.Source, "$Default", hub); cps[0] != 3 {
		t.Errorf("checkpoint moved back to %d", cps[0])
	}
}

// A consumer whose connection string the hub refuses reads nothing, and
// says so in its metrics (it waits between attempts: wait.Backoff).
func TestEventHubsWrongConnectionStringReadsNothing(t *testing.T) {
	c := hubs(t)
	e := newEnv(t)
	produce(t, c, 0, document(record("kube-audit", Event(Name("a")))))
	reg := prometheus.NewRegistry()
	cons, err := eventhubs.New(eventhubs.Options{
		Brokers: c.ListenAddrs(), Topic: hub, Group: "$Default", ConnectionString: connStr + "x", Cluster: "default",
		Pipeline: e.pipe, Store: e.st, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cons.Run(ctx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for fetchErrors(t, reg) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no fetch error counted for a refused connection string")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d events stored through a refused connection string", n)
	}
}

func fetchErrors(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "options_record_eventhubs_fetch_errors_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// Events older than the record keeps (an event hub retains days, a
// capture replayed into it years) are skipped and counted as the
// webhook's are: no daily partition is made for each old day.
func TestEventHubsSkipsEventsOlderThanTheRecordKeeps(t *testing.T) {
	c := hubs(t)
	e := newEnv(t)
	partitions := func() int {
		return e.count(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass`)
	}
	before := partitions()
	const days = 5
	docs := [][]byte{document(record("kube-audit", Event(Name("new"))))}
	for i := range days {
		docs = append(docs, document(record("kube-audit", Event(Name(fmt.Sprintf("old-%d", i)), At(time.Now().AddDate(0, 0, -31-i))))))
	}
	produce(t, c, 0, docs...)
	cons, err := eventhubs.New(eventhubs.Options{
		Brokers: c.ListenAddrs(), Topic: hub, Group: "$Default", ConnectionString: connStr, Cluster: "default",
		Pipeline: e.pipe, Store: e.st, Horizon: func() time.Duration { return 30 * 24 * time.Hour },
		ClientOpts: []kgo.Opt{kgo.FetchMaxWait(100 * time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cons.Run(ctx) }()
	e.waitCheckpoints(map[int32]int64{0: days + 1})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var names string
	if err := e.pool.QueryRow(context.Background(), `SELECT string_agg(name, ',' ORDER BY name) FROM events`).Scan(&names); err != nil {
		t.Fatal(err)
	}
	if names != "new" {
		t.Errorf("stored %q, want only new (the others are older than the 30 days kept)", names)
	}
	if got := partitions() - before; got > 1 {
		t.Errorf("%d event partitions made, want at most today's", got)
	}
	if got := outOfWindow(t, e.reg); got != days {
		t.Errorf("events_dropped_total{reason=out_of_window} %v, want %d", got, days)
	}
}

func outOfWindow(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "options_record_events_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "out_of_window" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
