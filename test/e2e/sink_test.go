package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/cmd/options-record/app"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/filter/rulesync"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// The identities of the end-to-end tests.
const (
	sinkUser = "options-record-sink"
	sinkNS   = "options-record"
)

var e2eUsers = []controlplane.User{
	{Name: sinkUser},
	{Name: "alice", Groups: []string{"developers"}},
	{Name: "bob", Groups: []string{"developers"}},
	{Name: "carol", Groups: []string{"developers"}},
	{Name: "eve", Groups: []string{"contractors"}},
}

// world is a real control plane whose audit webhook is the sink, running
// in-process against a real PostgreSQL.
type world struct {
	cp       *controlplane.ControlPlane
	db       *pgxpool.Pool
	admin    *kubernetes.Clientset
	dynAdmin dynamic.Interface
	apply    *applier
	auditLog string
	metrics  string // host:port of the sink's /metrics
	apiURL   string // https://host:port of the restore API, when served
	aggAddr  string // host:port of the aggregated API, when served
	// recordAddr is host:port of the record served directly to bearer
	// tokens (--record-bind-address), when served.
	recordAddr string
	dsn        string // the record's database
	caPEM      []byte // the CA of the sink's serving certificate
	// admissionAddr is host:port of the observing webhook, when served.
	admissionAddr string
	// logVerifierKeyFile holds the tamper-evident log's public key
	// (options-record log-key's output), when the sink keeps the log.
	logVerifierKeyFile string
}

func (w *world) kube(t *testing.T, user string) *kubernetes.Clientset {
	t.Helper()
	return kubernetes.NewForConfigOrDie(w.cp.UserConfig(user))
}

func (w *world) config(user string) *rest.Config { return w.cp.UserConfig(user) }

// startWorld starts PostgreSQL, the control plane with the shipped audit
// policy and webhook kubeconfig pointing at the sink, installs the CRD and the
// test's rules, then starts the sink following them.
func startWorld(t *testing.T) *world {
	t.Helper()
	return startWorldWith(t, worldOptions{})
}

// worldOptions vary the world.
type worldOptions struct {
	// policy writes the apiserver's audit policy into dir; nil uses the
	// shipped one, instrumented (see instrumentedPolicy).
	policy func(t *testing.T, dir string) string
	// users are added to the static-token users of e2eUsers.
	users []controlplane.User
	// files are YAML files of objects created after the test's rules.
	files []string
	// api serves the restore API on a free port (world.apiURL).
	api bool
	// maxPlanObjects and maxUndoRows, when set, are the API's caps on the
	// objects of a plan and the changes an undo reads.
	maxPlanObjects, maxUndoRows int
	// apiMaxInFlight, apiMaxInFlightPerUser and apiRequestTimeout, when
	// set, bound the APIs' work (both doors).
	apiMaxInFlight, apiMaxInFlightPerUser int
	apiRequestTimeout                     time.Duration
	// aggregated also serves the aggregated API (record.optionsrecord.io)
	// on a free port, with the control plane configured for aggregation
	// (world.aggAddr); it implies api.
	aggregated bool
	// recordDirect also serves record.optionsrecord.io directly to bearer
	// tokens (world.recordAddr); it implies aggregated.
	recordDirect bool
	// batchMaxWait is the apiserver's --audit-webhook-batch-max-wait
	// (default 1s).
	batchMaxWait time.Duration
	// chunkBytes and maxEventBytes, when set, are the sink's
	// --webhook-chunk-bytes and --webhook-max-event-bytes.
	chunkBytes, maxEventBytes int64
	// dsn, when set, is the record's database instead of a throwaway one
	// (make bench-read BENCH_READ_DSN=..., to time a record filled before).
	dsn string
	// notify configures the sink's notifications (--notify-config).
	notify app.NotifyOptions
	// admission serves the observing webhook (--admission-addr) on a free
	// port (world.admissionAddr); the test registers it.
	admission bool
	// admissionWebhookConfigName is the sink's
	// --admission-webhook-config-name: it keeps that configuration's rules.
	admissionWebhookConfigName string
	// rules, when set, replaces testdata/rules.yaml.
	rules string
	// tamperLog keeps the tamper-evident log: a key from options-record
	// log-key (--log-signing-key-file), its public key in
	// world.logVerifierKeyFile.
	tamperLog bool
}

func startWorldWith(t *testing.T, wo worldOptions) *world {
	t.Helper()
	if wo.policy == nil {
		wo.policy = instrumentedPolicy
	}
	dsn := wo.dsn
	if dsn == "" {
		dsn = pgtest.NewDatabase(t)
	}
	dir := t.TempDir()

	// The sink's serving certificate and the token the apiserver presents.
	ca, err := certs.NewCA("e2e sink CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The aggregator verifies the name of the APIService's Service.
	serving, err := ca.Issue("options-record", []string{"127.0.0.1", "localhost", aggService + "." + sinkNS + ".svc"}, true, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := serving.Write(dir, "sink")
	if err != nil {
		t.Fatal(err)
	}
	const token = "e2e-webhook-token"
	tokenFile := filepath.Join(dir, "webhook-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	ls := newListeners(t)
	webhookAddr := ls.addr()
	webhook := controlplane.WriteWebhookKubeconfig(t, controlplane.WebhookKubeconfig{
		Server: "https://" + webhookAddr + "/audit", CAData: ca.CertPEM, Token: token,
	})
	w := &world{auditLog: filepath.Join(dir, "audit.log"), caPEM: ca.CertPEM, dsn: dsn}
	w.cp = controlplane.Start(t, controlplane.Options{
		Users:                    append(slices.Clone(e2eUsers), wo.users...),
		AuditPolicyFile:          wo.policy(t, dir),
		AuditWebhookConfigFile:   webhook,
		AuditWebhookBatchMaxWait: wo.batchMaxWait,
		ExtraAPIServerArgs:       []string{"--audit-log-path=" + w.auditLog, "--audit-log-format=json"},
		Aggregation:              wo.aggregated,
	})
	admin := w.cp.AdminConfig()
	w.admin = kubernetes.NewForConfigOrDie(admin)
	w.dynAdmin = dynamic.NewForConfigOrDie(admin)
	w.apply = newApplier(t, admin)
	w.apply.createFile(t, controlplane.RepoFile(t, "deploy/crd/optionsrecord.io_optionsrecordcontrollers.yaml"), "")
	w.apply.create(t, []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+sinkNS+`"}}`), "")
	// The sink's RBAC is the shipped one (no more than the install grants).
	for _, f := range []string{"deploy/base/rbac.yaml", "deploy/base/baseline-rbac.yaml", "deploy/components/baseline-secrets/rbac.yaml"} {
		w.apply.createFile(t, controlplane.RepoFile(t, f), sinkNS)
	}
	w.apply.createFile(t, "testdata/sink-rbac.yaml", "")
	if wo.rules == "" {
		wo.rules = "testdata/rules.yaml"
	}
	w.apply.createFile(t, wo.rules, sinkNS)
	for _, f := range wo.files {
		w.apply.createFile(t, f, sinkNS)
	}
	var api *app.APIOptions
	if wo.api || wo.aggregated {
		apiAddr := ls.addr()
		api, w.apiURL = &app.APIOptions{Addr: apiAddr, MaxPlanObjects: wo.maxPlanObjects, MaxUndoRows: wo.maxUndoRows,
			MaxInFlight: wo.apiMaxInFlight, MaxInFlightPerUser: wo.apiMaxInFlightPerUser, RequestTimeout: wo.apiRequestTimeout}, "https://"+apiAddr
	}
	if wo.aggregated {
		w.aggAddr = ls.addr()
		// The front-proxy CA and allowed names as the kube-apiserver
		// publishes them (read by the sink with a GET); delegated
		// authentication and authorization as the sink.
		api.Aggregated = &app.AggregatedOptions{Addr: w.aggAddr, Kubeconfig: w.cp.WriteKubeconfig(t, sinkUser)}
		if wo.recordDirect {
			w.recordAddr = ls.addr()
			api.RecordAddr = w.recordAddr
		}
	}

	var logKey string
	if wo.tamperLog {
		logKey, w.logVerifierKeyFile = filepath.Join(dir, "log.key"), filepath.Join(dir, "log.pub")
		var pub bytes.Buffer
		if err := app.LogKey(app.LogKeyOptions{Name: "e2e.example/log", SigningKeyFile: logKey, Out: &pub}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(w.logVerifierKeyFile, pub.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	var adm app.AdmissionOptions
	if wo.admission {
		w.admissionAddr = ls.addr()
		adm.Addr = w.admissionAddr
	}

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- app.Serve(ctx, app.ServeOptions{
			Database:    app.DatabaseOptions{URL: dsn, DataDir: dir},
			Rules:       app.RulesOptions{Namespace: sinkNS},
			Cluster:     "e2e",
			WebhookAddr: webhookAddr, MetricsAddr: "127.0.0.1:0", Listen: ls.listen,
			TLSCertFile: certFile, TLSKeyFile: keyFile, TokenFile: tokenFile,
			ChunkBytes: wo.chunkBytes, MaxEventBytes: wo.maxEventBytes,
			Kube: &app.KubeOptions{Config: w.config(sinkUser), Sync: rulesync.Options{Resync: 20 * time.Second,
				StatusInterval: time.Second, Baseline: true, Identity: "e2e-sink",
				// Small passes: baselines go on across several of them.
				BaselineMaxObjects: 7, BaselineRetry: 200 * time.Millisecond, BaselineMinInterval: 2 * time.Second,
				WebhookConfigName: wo.admissionWebhookConfigName}},
			API:               api,
			Notify:            wo.notify,
			Admission:         adm,
			LogSigningKeyFile: logKey,
			Logger:            testLogger(t),
			OnListening:       func(_, m net.Addr) { w.metrics = m.String(); close(started) },
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("sink exited: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("sink did not start")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sink: %v", err)
		}
	})
	w.db, err = pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.db.Close)
	return w
}

// instrumentedPolicy is the shipped policy with one rule in front that logs
// the sink's own reads (get, list, watch) at Metadata level, so the test can
// check in the apiserver's audit log that the sink never watches.
func instrumentedPolicy(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(controlplane.PolicyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var p auditv1.Policy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("shipped policy: %v", err)
	}
	// Reads only: the sink's writes (statuses, and restores it makes by
	// impersonating their callers, whose audit level is chosen for the
	// authenticated sink) keep the shipped policy's level, so a restore is
	// recorded with its object as it would be in production.
	p.Rules = append([]auditv1.PolicyRule{{Level: auditv1.LevelMetadata, Users: []string{sinkUser},
		Verbs: []string{"get", "list", "watch"}}}, p.Rules...)
	out, err := yaml.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// listeners are loopback listeners bound on port 0 before the sink starts,
// for app.ServeOptions.Listen: the sink serves an address handed out by
// addr on the listener bound for it, so no port is chosen free and bound
// later (when another process may have taken it).
type listeners struct {
	mu sync.Mutex
	m  map[string]net.Listener
}

func newListeners(t *testing.T) *listeners {
	ls := &listeners{m: map[string]net.Listener{}}
	t.Cleanup(func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		for _, l := range ls.m {
			l.Close() // never handed to the sink
		}
	})
	return ls
}

// addr binds a listener and returns its address.
func (ls *listeners) addr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err) // loopback port 0: only a broken host refuses it
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.m[l.Addr().String()] = l
	return l.Addr().String()
}

// listen returns the listener bound for addr (once), or binds addr.
func (ls *listeners) listen(addr string) (net.Listener, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l, ok := ls.m[addr]; ok {
		delete(ls.m, addr)
		return l, nil
	}
	return net.Listen("tcp", addr)
}

// eventually polls check until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
}
