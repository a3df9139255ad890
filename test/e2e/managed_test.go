package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/admission"
	"github.com/options-record/options-record/auditsink/decode"
	"github.com/options-record/options-record/auditsink/eventhubs"
	"github.com/options-record/options-record/auditsink/firehose"
	"github.com/options-record/options-record/auditsink/pubsub"
	"github.com/options-record/options-record/auditsink/pubsub/pubsubtest"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestManagedSourcesGiveTheWebhooksRecord: two kube-apiservers on one
// etcd, with EKS's audit policy, each write their audit log backend (as a
// managed cluster's apiservers do); a shipper wraps those lines as each
// provider does and delivers them late and out of order: as Firehose
// requests (CloudWatch Logs DATA_MESSAGEs, one log stream per apiserver,
// a CONTROL_MESSAGE, a line cut at CloudWatch Logs' 256 KiB, the requests
// shuffled with a fixed seed and one retried with the same id), as Event
// Hubs documents through a Kafka endpoint (kfake; the lines of both
// apiservers reversed), and as GKE's Pub/Sub pushes of Cloud Logging
// entries signed by a test key (shuffled with a fixed seed, some pushed
// twice; one with a wrong audience refused). Each source's record of who
// deleted a ConfigMap, a Secret, a Deployment and a custom resource (with
// its state) is the webhook's. Both apiservers also call the observing
// webhook, whose observations every record shares: the states of the
// ConfigMap, the Secret (digests) and the widget, logged at Metadata
// only, come from it, joined by the audit annotation that crossed each
// provider's envelope; a restore brings them back.
func TestManagedSourcesGiveTheWebhooksRecord(t *testing.T) {
	base := startWorldWith(t, worldOptions{policy: eksPolicy, files: []string{"testdata/restore-rbac.yaml"}, api: true})
	ctx := context.Background()
	const ns = "e2e-managed"
	base.namespace(t, ns)
	// The second apiserver: the first one's flags, its own log.
	log2 := filepath.Join(t.TempDir(), "audit-2.log")
	host2 := base.cp.AddAPIServer(t, "--audit-log-path="+log2)
	on2 := func(user string) *rest.Config { c := base.config(user); c.Host = host2; return c }
	fh, eh, gk := newManagedSink(t), newManagedSink(t), newManagedSink(t)
	webhookStore, err := store.Open(ctx, store.Options{URL: base.dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(webhookStore.Close)
	// One observing webhook for the four records (one sink per shape
	// would serve it alongside its source): the webhook's written last.
	observer := startTeeObserver(t, fh.dg, fh.st, eh.st, gk.st, webhookStore)
	w := &restoreWorld{world: base, apiURL: base.apiURL, client: observer.apiClient(base.caPEM)}
	w.allowWidgets(t)
	reg := *base
	reg.caPEM = observer.caPEM
	reg.registerObserver(t, observer.url, ns)
	// Each apiserver calls it.
	observer.probe(t, base.admin, fh, ns, "probe")
	observer.probe(t, kubernetes.NewForConfigOrDie(on2(controlplane.AdminUser)), fh, ns, "probe-2")

	// alice creates through one apiserver and changes through the other;
	// bob deletes through both.
	made := observedChanges(t, ns, w.config("alice"), on2("alice"))
	alice, bob, bob2 := w.kube(t, "alice"), w.kube(t, "bob"), kubernetes.NewForConfigOrDie(on2("bob"))
	aliceDyn := dynamic.NewForConfigOrDie(w.config("alice")).Resource(widgets).Namespace(ns)
	bobDyn := dynamic.NewForConfigOrDie(w.config("bob")).Resource(widgets).Namespace(ns)
	ok(alice.AppsV1().Deployments(ns).Create(ctx, deployment("api"), metav1.CreateOptions{}))(t)
	// The admin, impersonating bob (kubectl --as bob) through the second
	// apiserver with a user agent of its own, scales api: each source's
	// record must name the same user, impersonated user and user agent.
	asBob := on2(controlplane.AdminUser)
	asBob.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	asBob.UserAgent = managedImpersonatorAgent
	asBobKube := kubernetes.NewForConfigOrDie(asBob)
	api := ok(asBobKube.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{}))(t)
	api.Spec.Replicas = ptr(int32(3))
	ok(asBobKube.AppsV1().Deployments(ns).Update(ctx, api, metav1.UpdateOptions{}))(t)
	// A Deployment whose audit line (request and response bodies) is over
	// CloudWatch Logs' limit.
	big := deployment("big")
	big.Annotations = map[string]string{"example.com/blob": strings.Repeat("b", 200<<10)}
	ok(alice.AppsV1().Deployments(ns).Create(ctx, big, metav1.CreateOptions{}))(t)
	for _, del := range []func() error{
		func() error { return bob2.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}) },
		func() error { return bob2.CoreV1().Secrets(ns).Delete(ctx, "token", metav1.DeleteOptions{}) },
		func() error { return bob.AppsV1().Deployments(ns).Delete(ctx, "api", metav1.DeleteOptions{}) },
		func() error { return bobDyn.Delete(ctx, "gear", metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 60*time.Second, "deletions by bob through the webhook, with their states", func() error {
		if n := w.count(t, `SELECT count(*) FROM deletions WHERE namespace = '`+ns+`' AND username = 'bob' AND NOT state_unknown`); n != 4 {
			return fmt.Errorf("%d deletions by bob with their states, want 4", n)
		}
		if n := w.count(t, `SELECT count(*) FROM object_history WHERE namespace = '`+ns+`' AND name = 'api' AND verb = 'update'
			AND impersonated_user = 'bob'`); n != 1 {
			return fmt.Errorf("%d updates of api as bob, want 1", n)
		}
		return nil
	})
	lines1, lines2 := auditLines(t, w.auditLog), auditLines(t, log2)
	if !slices.ContainsFunc(lines2, func(l string) bool {
		return strings.Contains(l, `"verb":"delete"`) && strings.Contains(l, `"name":"settings"`)
	}) {
		t.Fatal("the second apiserver's log lacks bob's deletion of settings")
	}
	rng := rand.New(rand.NewPCG(35, 2))

	// EKS: Firehose. One log stream per apiserver, a request per 25 lines,
	// the requests shuffled: late and out of order across the two.
	lag := auditsink.NewSourceLag(nil)
	srv := fh.firehose(t, lag)
	type fhReq struct {
		id   string
		body []byte
	}
	var reqs []fhReq
	for s, lines := range map[string][]string{"a": lines1, "b": lines2} {
		for start := 0; start < len(lines); start += 25 {
			var part []string
			for _, l := range lines[start:min(start+25, len(lines))] {
				if len(l) > 256<<10 { // CloudWatch Logs cuts a log event at 256 KiB
					l = l[:256<<10-len(decode.TruncatedMarker)] + decode.TruncatedMarker
				}
				part = append(part, l)
			}
			id := fmt.Sprintf("req-%s-%d", s, start)
			reqs = append(reqs, fhReq{id, firehoseBody(id, logRecords("kube-apiserver-audit-"+s, part)...)})
		}
	}
	slices.SortFunc(reqs, func(a, b fhReq) int { return strings.Compare(a.id, b.id) })
	rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	reqs = append([]fhReq{{"req-control", firehoseBody("req-control", controlMessageRecord())}}, reqs...)
	for _, r := range reqs {
		if code := deliverFirehose(t, srv, r.id, r.body); code != http.StatusOK {
			t.Fatalf("Firehose request %s: %d", r.id, code)
		}
	}
	before := fh.count(t, `SELECT count(*) FROM events`)
	for _, r := range reqs[len(reqs)/2:] {
		if code := deliverFirehose(t, srv, r.id, r.body); code != http.StatusOK {
			t.Fatalf("Firehose retry: %d", code)
		}
	}
	if after := fh.count(t, `SELECT count(*) FROM events`); after != before {
		t.Errorf("retried requests added %d events", after-before)
	}
	if _, ok := lag.NewestAge("firehose", "e2e"); !ok {
		t.Error("no lag recorded for the Firehose source")
	}
	// The cut line still says who created big.
	if n := fh.count(t, `SELECT count(*) FROM events WHERE namespace = '`+ns+`' AND name = 'big' AND verb = 'create'
		AND username = 'alice' AND annotations ->> 'audit.k8s.io/truncated' = 'true'`); n != 1 {
		t.Errorf("the cut line of big's creation: %d events, want 1 by alice marked truncated", n)
	}

	// AKS: Event Hubs (the whole lines: Azure's limit is not CloudWatch's),
	// the second apiserver's first, each log backwards.
	backwards := append(slices.Clone(lines1), lines2...)
	slices.Reverse(backwards)
	eh.eventHubs(t, backwards)

	// GKE: Cloud Logging entries pushed by Pub/Sub, shuffled.
	gk.gke(t, rng, append(slices.Clone(lines1), lines2...))

	want := managedHistory(t, w.db, ns, true)
	if !strings.Contains(want, "delete bob as - configmaps settings") || !strings.Contains(want, "delete bob as - deployments api") ||
		!strings.Contains(want, "update "+controlplane.AdminUser+" as bob deployments api") || !strings.Contains(want, managedImpersonatorAgent) {
		t.Fatalf("the webhook's record lacks the deletions or the impersonated update:\n%s", want)
	}
	t.Logf("the webhook's record:\n%s", want)
	for name, s := range map[string]*managedSink{"firehose": fh, "eventhubs": eh, "pubsub": gk} {
		// GKE's entries carry one source IP (docs/managed-clusters.md):
		// its record is compared without them.
		exactIPs := name != "pubsub"
		want := want
		if !exactIPs {
			want = managedHistory(t, w.db, ns, false)
		}
		if got := managedHistory(t, s.pool, ns, exactIPs); got != want {
			t.Errorf("%s's record:\n%s\nthe webhook's:\n%s", name, got, want)
		}
		// The states came from the observations: the annotation naming
		// each crossed the provider's envelope, and the join confirmed it.
		for _, res := range []string{"configmaps", "secrets", "widgets"} {
			if n := s.count(t, `SELECT count(*) FROM events WHERE namespace = '`+ns+`' AND resource = '`+res+`' AND verb = 'delete'
				AND username = 'bob' AND annotations::text LIKE '%"observe.optionsrecord.io/observation-%'`); n != 1 {
				t.Errorf("%s: %d deletes of %s by bob carry the observation annotation, want 1", name, n, res)
			}
			if n := s.count(t, `SELECT count(*) FROM observations WHERE namespace = '`+ns+`' AND resource = '`+res+`' AND name NOT LIKE 'probe%'`); n != 0 {
				t.Errorf("%s: %d observations of %s unconfirmed", name, n, res)
			}
		}
		if n := s.count(t, `SELECT count(*) FROM object_versions WHERE namespace = '`+ns+`' AND object::text LIKE '%hunter2%'`); n != 0 {
			t.Errorf("%s: the Secret's values are in the record (%d versions)", name, n)
		}
		var level, teeth string
		if err := s.pool.QueryRow(ctx, `SELECT
			(SELECT prior_object #>> '{data,level}' FROM deletions WHERE namespace = $1 AND resource = 'configmaps' AND name = 'settings'),
			(SELECT prior_object #>> '{spec,teeth}' FROM deletions WHERE namespace = $1 AND resource = 'widgets' AND name = 'gear')`,
			ns).Scan(&level, &teeth); err != nil || level != "two" || teeth != "24" {
			t.Errorf("%s: states before bob's deletions: level %q, teeth %q, %v; want two, 24", name, level, teeth, err)
		}
	}

	// A restore brings back the state the review showed (the records'
	// states are equal: managedHistory compares them).
	var res restore.RestoreResult
	w.postJSON(t, "alice", w.deletion(t, ns, "configmaps", "settings").RestoreFrom.Restore, nil, http.StatusOK, &res)
	if got := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}))(t); !reflect.DeepEqual(got.Data, made.cm.Data) {
		t.Errorf("restored ConfigMap data %v, want %v", got.Data, made.cm.Data)
	}
	w.postJSON(t, "alice", w.deletion(t, ns, "widgets", "gear").RestoreFrom.Restore, nil, http.StatusOK, &res)
	if got := ok(aliceDyn.Get(ctx, "gear", metav1.GetOptions{}))(t); !reflect.DeepEqual(got.Object["spec"], made.widget.Object["spec"]) {
		t.Errorf("restored widget spec %v, want %v", got.Object["spec"], made.widget.Object["spec"])
	}
}

// teeObserver is the observing webhook in process, writing each
// observation into several records.
type teeObserver struct {
	url   string
	caPEM []byte
}

// teeStore writes observations into every store, in order.
type teeStore []*store.Store

func (ts teeStore) WriteObservations(ctx context.Context, obs []model.Observation, max int64) (model.ObservationResult, error) {
	var res model.ObservationResult
	for _, s := range ts {
		r, err := s.WriteObservations(ctx, obs, max)
		if err != nil {
			return r, err
		}
		res = r
	}
	return res, nil
}

func (ts teeStore) ConfirmObservations(ctx context.Context) (int, error) {
	n := 0
	for _, s := range ts {
		c, err := s.ConfirmObservations(ctx)
		if err != nil {
			return n, err
		}
		n += c
	}
	return n, nil
}

func (ts teeStore) ExpireObservations(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	for _, s := range ts {
		c, err := s.ExpireObservations(ctx, cutoff)
		if err != nil {
			return n, err
		}
		n += c
	}
	return n, nil
}

func startTeeObserver(t *testing.T, dg *model.SecretDigester, stores ...*store.Store) *teeObserver {
	t.Helper()
	m := admission.NewMetrics(prometheus.NewRegistry())
	q := admission.NewQueue(admission.QueueOptions{Store: teeStore(stores), Metrics: m})
	h, err := admission.NewHandler(admission.HandlerOptions{Cluster: "e2e", Digester: dg, Queue: q, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ca, err := certs.NewCA("e2e managed observer CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue("observer", []string{"127.0.0.1"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &teeObserver{url: srv.URL + "/observe", caPEM: ca.CertPEM}
}

// apiClient is a client of the restore API (the sink's CA).
func (o *teeObserver) apiClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// probe updates a ConfigMap name of ns through admin (one apiserver's
// client) until its observation is stored in s's record (the first
// written): that apiserver calls the webhook.
func (o *teeObserver) probe(t *testing.T, admin kubernetes.Interface, s *managedSink, ns, name string) {
	t.Helper()
	ctx := context.Background()
	cms := admin.CoreV1().ConfigMaps(ns)
	ok(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))(t)
	i := 0
	eventually(t, 30*time.Second, "the observing webhook in force", func() error {
		i++
		cm := ok(cms.Get(ctx, name, metav1.GetOptions{}))(t)
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if n := s.count(t, `SELECT count(*) FROM observations WHERE namespace = '`+ns+`' AND name = '`+name+`'`); n == 0 {
			return fmt.Errorf("no observation of %s", name)
		}
		return nil
	})
}

// auditLines reads the log backend's file: one Event a line.
func auditLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 8<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// managedImpersonatorAgent is the user agent of the impersonated update.
const managedImpersonatorAgent = "kubectl/v1.34.0 (e2e; as bob)"

// managedHistory is the record of the namespace's objects but big (whose
// Firehose event is cut), as the comparison reads it: who (user,
// impersonated user, user agent and, with ips, the source IPs), what, and
// the states compared as JSON values (jsonb), as GKE's entries carry the
// bodies in protobuf Structs, which do not keep the order of an object's
// members.
func managedHistory(t *testing.T, db *pgxpool.Pool, ns string, ips bool) string {
	t.Helper()
	rows, err := db.Query(context.Background(), `
		SELECT verb, username, coalesce(impersonated_user, '-'), coalesce(user_agent, '-'),
		       CASE WHEN $2 THEN coalesce(array_to_string(source_ips, ' '), '-') ELSE '(not compared)' END,
		       resource, name, coalesce(resource_version::text, '-'), prior_known,
		       coalesce(prior_object #>> '{spec,replicas}', '-'), coalesce(object #>> '{spec,replicas}', '-'),
		       coalesce(object #>> '{metadata,uid}', prior_object #>> '{metadata,uid}', '-'), coalesce(md5(prior_object::jsonb::text), '-')
		FROM object_history WHERE namespace = $1 AND name <> 'big'
		ORDER BY resource, name, changed_at, verb`, ns, ips)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var verb, user, as, agent, from, res, name, rv, pr, r, uid, prior string
		var known bool
		if err := rows.Scan(&verb, &user, &as, &agent, &from, &res, &name, &rv, &known, &pr, &r, &uid, &prior); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s as %s %s %s rv=%s prior_known=%v replicas %s→%s uid=%s prior=%s agent=%q from=%s\n",
			verb, user, as, res, name, rv, known, pr, r, uid, prior, agent, from)
	}
	return b.String()
}

// managedSink is a pipeline over a database of its own, with the e2e
// rules, as a sink fed by a managed cluster's log service.
type managedSink struct {
	st   *store.Store
	pool *pgxpool.Pool
	pipe *auditsink.Pipeline
	dg   *model.SecretDigester
}

func newManagedSink(t *testing.T) *managedSink {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	objs, err := filter.LoadFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range objs {
		objs[i].Namespace = sinkNS
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: sinkNS})
	dg, err := model.NewSecretDigester([]byte("managed e2e digest key, thirty-two bytes or more"))
	if err != nil {
		t.Fatal(err)
	}
	return &managedSink{st: st, pool: st.Pool(), dg: dg, pipe: auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, st, nil, nil).WithSecretDigester(dg)}
}

func (s *managedSink) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

const managedKey = "managed-e2e-access-key"

func (s *managedSink) firehose(t *testing.T, lag *auditsink.SourceLag) *httptest.Server {
	t.Helper()
	auth, err := auditsink.NewAuthenticator(nil, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{Pipeline: s.pipe, Authenticator: auth, Lag: lag})
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte(managedKey), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := firehose.New(firehose.Options{AccessKeyFile: key, Clusters: map[string]string{"/aws/eks/e2e/cluster": "e2e"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeDelivery(w, r, d) }))
	t.Cleanup(srv.Close)
	return srv
}

func gzipped(v any) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		panic(err)
	}
	_ = zw.Close()
	return buf.Bytes()
}

// logRecords wraps a stream's lines as CloudWatch Logs' subscription
// does: DATA_MESSAGEs of at most 100 log events, gzipped.
func logRecords(stream string, lines []string) [][]byte {
	var out [][]byte
	for start := 0; start < len(lines); start += 100 {
		var evs []map[string]any
		for i, l := range lines[start:min(start+100, len(lines))] {
			evs = append(evs, map[string]any{"id": fmt.Sprintf("%d", start+i), "timestamp": time.Now().UnixMilli(), "message": l})
		}
		out = append(out, gzipped(map[string]any{"messageType": "DATA_MESSAGE", "owner": "123456789012",
			"logGroup": "/aws/eks/e2e/cluster", "logStream": stream, "subscriptionFilters": []string{"options-record"}, "logEvents": evs}))
	}
	return out
}

func controlMessageRecord() []byte {
	return gzipped(map[string]any{"messageType": "CONTROL_MESSAGE", "owner": "CloudwatchLogs", "logGroup": "", "logStream": "",
		"subscriptionFilters": []string{}, "logEvents": []map[string]any{{"id": "", "timestamp": time.Now().UnixMilli(),
			"message": "CWL CONTROL MESSAGE: Checking health of destination Firehose."}}})
}

func firehoseBody(id string, records ...[]byte) []byte {
	recs := make([]map[string][]byte, len(records))
	for i, r := range records {
		recs[i] = map[string][]byte{"data": r}
	}
	b, _ := json.Marshal(map[string]any{"requestId": id, "timestamp": time.Now().UnixMilli(), "records": recs})
	return b
}

func deliverFirehose(t *testing.T, srv *httptest.Server, id string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/firehose", bytes.NewReader(gzipped(json.RawMessage(body))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set(firehose.HeaderRequestID, id)
	req.Header.Set(firehose.HeaderProtocolVersion, "1.0")
	req.Header.Set(firehose.HeaderAccessKey, managedKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// eventHubs delivers the lines through an in-process Kafka standing in
// for Event Hubs, as diagnostic settings do (kube-audit-admin: the
// changes; kube-audit: everything, so each change twice), and runs two
// replicas of the consumer until every document is checkpointed.
func (s *managedSink) eventHubs(t *testing.T, lines []string) {
	t.Helper()
	const conn = "Endpoint=sb://e2e.servicebus.windows.net/;SharedAccessKeyName=l;SharedAccessKey=k"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "aks-audit"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", eventhubs.ConnectionStringUser, conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sasl := kgo.SASL(plain.Auth{User: eventhubs.ConnectionStringUser, Pass: conn}.AsMechanism())
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), sasl, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produced := map[int32]int64{}
	for start := 0; start < len(lines); start += 20 {
		var recs []map[string]any
		for _, l := range lines[start:min(start+20, len(lines))] {
			var head struct {
				Verb string `json:"verb"`
			}
			_ = json.Unmarshal([]byte(l), &head)
			cats := []string{"kube-audit"}
			if head.Verb != "get" && head.Verb != "list" && head.Verb != "watch" {
				cats = append(cats, "kube-audit-admin")
			}
			for _, cat := range cats {
				recs = append(recs, map[string]any{"category": cat, "time": time.Now().UTC().Format(time.RFC3339Nano),
					"operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
					"properties":    map[string]any{"log": l, "stream": "stdout", "pod": "kube-apiserver-0"}})
			}
		}
		doc, _ := json.Marshal(map[string]any{"records": recs})
		p := int32(start / 20 % 2)
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "aks-audit", Partition: p, Value: doc}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced[p]++
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		cons, err := eventhubs.New(eventhubs.Options{Brokers: c.ListenAddrs(), Topic: "aks-audit", Group: "$Default",
			ConnectionString: conn, Cluster: "e2e", Pipeline: s.pipe, Store: s.st,
			ClientOpts: []kgo.Opt{kgo.FetchMaxWait(100 * time.Millisecond)}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = cons.Run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	eventually(t, 2*time.Minute, "the Event Hubs documents checkpointed", func() error {
		cps, err := s.st.Checkpoints(context.Background(), eventhubs.Source, "$Default", "aks-audit")
		if err != nil {
			return err
		}
		for p, n := range produced {
			if cps[p] < n {
				return fmt.Errorf("checkpoints %v, want %v", cps, produced)
			}
		}
		return nil
	})
}

const (
	gkeAudience = "https://options-record.e2e.example/gke/pubsub"
	gkeAccount  = "options-record-push@e2e.iam.gserviceaccount.com"
)

// gke delivers the lines as GKE does: each request's event (GKE writes
// one entry a request: the ResponseComplete stage's) a Cloud Logging
// entry (pubsubtest.ToGKE: the apiserver's annotations, the observation's
// among them, as the entry's labels, where GKE writes them), pushed by a
// Pub/Sub push subscription with a token signed by a test key, through
// the webhook's handler as serve mounts it. A push whose token names
// another audience is refused first, and stores nothing; the pushes are
// shuffled (rng), and a third are pushed again, as Pub/Sub delivers at
// least once.
func (s *managedSink) gke(t *testing.T, rng *rand.Rand, lines []string) {
	t.Helper()
	g := pubsubtest.NewGoogle(t, gkeAudience, gkeAccount)
	d, err := pubsub.New(pubsub.Options{Cluster: "e2e", Verifier: g.Verifier(t)})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := auditsink.NewAuthenticator(nil, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	lag := auditsink.NewSourceLag(nil)
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{Pipeline: s.pipe, Authenticator: auth, Lag: lag})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeDelivery(w, r, d) }))
	t.Cleanup(srv.Close)
	url := srv.URL + pubsub.Path
	var bodies [][]byte
	for _, l := range lines {
		var ev auditv1.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		// Requests of no object (/readyz, discovery) are not the
		// record's; GKE's entries name a resource.
		if ev.Stage != auditv1.StageResponseComplete || ev.ObjectRef == nil || ev.ObjectRef.Resource == "" {
			continue
		}
		entry := pubsubtest.ToGKE(t, &ev)
		if data, err := json.Marshal(entry); err != nil || len(data) > 256<<10 {
			continue // Cloud Logging takes no entry over 256 KB (big's creation)
		}
		bodies = append(bodies, pubsubtest.PushBody(t, entry, time.Now()))
	}
	wrong := g.Token(t, func(c *pubsubtest.Claims) { c.Audience = jwt.Audience{"https://elsewhere.example/gke/pubsub"} })
	if code := pubsubtest.Push(t, srv.Client(), url, wrong, bodies[0]); code != http.StatusUnauthorized {
		t.Errorf("a push with a wrong audience: %d, want 401", code)
	}
	if n := s.count(t, `SELECT count(*) FROM events`); n != 0 {
		t.Errorf("a push with a wrong audience stored %d events", n)
	}
	rng.Shuffle(len(bodies), func(i, j int) { bodies[i], bodies[j] = bodies[j], bodies[i] })
	for _, b := range bodies {
		if code := pubsubtest.Push(t, srv.Client(), url, g.Token(t), b); code != http.StatusOK {
			t.Fatalf("push: %d", code)
		}
	}
	before := s.count(t, `SELECT count(*) FROM events`)
	for _, b := range bodies[:len(bodies)/3] {
		if code := pubsubtest.Push(t, srv.Client(), url, g.Token(t), b); code != http.StatusOK {
			t.Fatalf("push again: %d", code)
		}
	}
	if after := s.count(t, `SELECT count(*) FROM events`); after != before {
		t.Errorf("pushes again added %d events", after-before)
	}
	if _, ok := lag.NewestAge(pubsub.Source, "e2e"); !ok {
		t.Error("no lag recorded for the Pub/Sub source")
	}
}
