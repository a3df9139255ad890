package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
)

// TestReadBenchmark (make bench-read; skipped unless
// OPTIONS_RECORD_READ_BENCH is set to the number of versions to record):
// a record of millions of object versions over 30 days, written through
// the store's write path, then the incident's lookups timed through the
// direct API and through the aggregated API (the real kube-apiserver in
// front): who deleted in a namespace, history by name, a user's activity
// over a day, and an as-of plan of a 5,000-object namespace. It reports
// p50/p99 of each, the object sizes and the database size. A measurement,
// not a test of speed: it fails only when a request fails.
func TestReadBenchmark(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("OPTIONS_RECORD_READ_BENCH"))
	if n <= 0 {
		t.Skip("a measurement: run it with make bench-read (OPTIONS_RECORD_READ_BENCH=<versions>)")
	}
	// OPTIONS_RECORD_READ_BENCH_DSN keeps the record in a database of one's
	// own: filled on the first run, timed again on the next ones.
	keep := os.Getenv("OPTIONS_RECORD_READ_BENCH_DSN")
	w := startWorldWith(t, worldOptions{aggregated: true, maxPlanObjects: 6000, dsn: keep,
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	registerAggregated(t, w)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: w.dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	const (
		days       = 30
		namespaces = 100
		users      = 50
		bigNS      = "bench-big"
		bigObjects = 5000
	)
	now := time.Now().UTC()
	start := now.Add(-days * 24 * time.Hour)
	var past []time.Time
	for d := 0; d <= days; d++ {
		past = append(past, start.Add(time.Duration(d)*24*time.Hour))
	}
	if err := st.EnsurePartitionsFor(ctx, past); err != nil {
		t.Fatal(err)
	}

	// The record: objects of 100 namespaces, each created, updated and
	// (one in eight) deleted over 30 days by 50 users, and a namespace of
	// 5,000 ConfigMaps created on the first day. About 600 bytes a state.
	payload := strings.Repeat("x", 400)
	key := func(parts ...any) []byte {
		h := sha256.New()
		for _, p := range parts {
			fmt.Fprint(h, p, "\x00")
		}
		return h.Sum(nil)
	}
	var batch model.Batch
	written, rv := 0, int64(1000)
	flush := func() {
		if len(batch.Versions) == 0 {
			return
		}
		if _, err := st.WriteBatch(ctx, &batch); err != nil {
			t.Fatalf("write: %v", err)
		}
		written += len(batch.Versions)
		batch = model.Batch{}
	}
	add := func(ns, name string, obj, seq int, verb, user string, at time.Time, created, deleted bool) {
		uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", obj, obj)
		rv++
		r := rv
		ek := key("bench", obj, seq)
		state := []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":"%d"},"data":{"seq":"%d","pad":%q}}`,
			name, ns, uid, r, seq, payload))
		batch.Events = append(batch.Events, model.Event{Cluster: "e2e", Key: ek, StageAt: at, ReceivedAt: at, AuditID: fmt.Sprintf("bench-%d-%d", obj, seq),
			Stage: "ResponseComplete", Verb: verb, RequestURI: "/api/v1/namespaces/" + ns + "/configmaps/" + name, Username: user,
			UserGroups: []string{"system:authenticated"}, SourceIPs: []string{"10.0.0.1"}, UserAgent: "kubectl/v1.36.3",
			APIVersion: "v1", Resource: "configmaps", Namespace: ns, Name: name, ObjectUID: uid, ResponseCode: 200, Rules: []string{"bench"}})
		batch.Versions = append(batch.Versions, model.Version{Cluster: "e2e", UID: uid, Key: key(string(ek), uid), ResourceVersion: &r,
			Origin: model.OriginChange, Verb: verb, ChangedAt: at, EventKey: ek, APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps",
			Namespace: ns, Name: name, Created: created, Deleted: deleted, Complete: true, Object: state, Rules: []string{"bench"}})
		if len(batch.Versions) >= 2000 {
			flush()
		}
	}
	begin := time.Now()
	var have int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM object_versions WHERE cluster = 'e2e' AND rules = '{bench}'`).Scan(&have); err != nil {
		t.Fatal(err)
	}
	filled := keep != "" && have >= n
	for i := range bigObjects {
		if filled {
			break
		}
		add(bigNS, fmt.Sprintf("cm-%04d", i), 1_000_000+i, 0, "create", "bench-user-00", start.Add(time.Duration(i)*time.Millisecond), true, false)
	}
	perObject := 8 // versions per object of the other namespaces
	objects := max((n-bigObjects)/perObject, 1)
	span := now.Add(-time.Hour).Sub(start)
	for o := range objects {
		if filled {
			t.Logf("the record of %d versions is in the database already: not written again", have)
			break
		}
		ns := fmt.Sprintf("bench-ns-%03d", o%namespaces)
		name := fmt.Sprintf("obj-%07d", o)
		t0 := start.Add(time.Duration(int64(span) / int64(objects) * int64(o) / 2))
		step := (now.Add(-time.Hour).Sub(t0)) / time.Duration(perObject)
		for s := range perObject {
			verb, created, deleted := "update", s == 0, false
			if created {
				verb = "create"
			}
			if s == perObject-1 && o%8 == 0 {
				verb, deleted = "delete", true
			}
			user := fmt.Sprintf("bench-user-%02d", binary.BigEndian.Uint32(key(o, s)[:4])%users)
			add(ns, name, o, s, verb, user, t0.Add(time.Duration(s)*step), created, deleted)
		}
	}
	flush()
	fill := time.Since(begin)
	if filled {
		written = have
	}
	var dbSize, versionsSize string
	if err := w.db.QueryRow(ctx, `SELECT pg_size_pretty(pg_database_size(current_database())), pg_size_pretty(pg_total_relation_size('object_versions'))`).Scan(&dbSize, &versionsSize); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	how := fmt.Sprintf("written in %s (%.0f versions/s)", fill.Round(time.Second), float64(written)/fill.Seconds())
	if filled {
		how = "written by an earlier run"
	}
	t.Logf("record: %d versions (%d objects in %d namespaces + %d in %s) over %d days, %s; states of ~%d bytes; database %s, object_versions %s",
		written, objects, namespaces, bigObjects, bigNS, days, how, len(payload)+200, dbSize, versionsSize)

	// Clients: the direct API with the admin's token, and the kube-apiserver
	// (aggregated API) as the admin.
	pool := w.cp.AdminConfig()
	aggClient, err := rest.HTTPClientFor(pool)
	if err != nil {
		t.Fatal(err)
	}
	caPool := x509.NewCertPool()
	caPool.AppendCertsFromPEM(w.caPEM)
	direct := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool, MinVersion: tls.VersionTLS12}}}
	adminToken := w.cp.AdminConfig().BearerToken
	call := func(c *http.Client, method, u, body, token string) {
		t.Helper()
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, u, resp.StatusCode, data[:min(len(data), 300)])
		}
	}
	day := now.Add(-10 * 24 * time.Hour).Truncate(24 * time.Hour)
	q := url.QueryEscape
	type query struct {
		name     string
		runs     int
		direct   func(i int) (method, path, body string)
		viaAgg   func(i int) (method, path, body string)
		target   time.Duration
		measured [2][]time.Duration
	}
	queries := []*query{
		{name: "who deleted in a namespace (100 newest)", runs: 200, target: 50 * time.Millisecond,
			direct: func(i int) (string, string, string) {
				return "GET", "/api/v1/clusters/e2e/deletions?namespace=" + fmt.Sprintf("bench-ns-%03d", i%namespaces) + "&limit=100", ""
			},
			viaAgg: func(i int) (string, string, string) {
				return "GET", fmt.Sprintf("/apis/record.optionsrecord.io/v1alpha1/namespaces/bench-ns-%03d/deletions?limit=100", i%namespaces), ""
			}},
		{name: "history by name", runs: 200, target: 50 * time.Millisecond,
			direct: func(i int) (string, string, string) {
				o := (i * 7919) % objects
				return "GET", fmt.Sprintf("/api/v1/clusters/e2e/history?resource=configmaps&namespace=bench-ns-%03d&name=obj-%07d", o%namespaces, o), ""
			},
			viaAgg: func(i int) (string, string, string) {
				o := (i * 7919) % objects
				return "GET", fmt.Sprintf("/apis/record.optionsrecord.io/v1alpha1/namespaces/bench-ns-%03d/changes?fieldSelector=%s", o%namespaces,
					q(fmt.Sprintf("object.resource=configmaps,object.name=obj-%07d", o))), ""
			}},
		{name: "a user's activity over a day (100 newest)", runs: 200, target: 50 * time.Millisecond,
			direct: func(i int) (string, string, string) {
				return "GET", "/api/v1/clusters/e2e/activity?user=" + fmt.Sprintf("bench-user-%02d", i%users) + "&since=" + q(day.Format(time.RFC3339)) +
					"&until=" + q(day.Add(24*time.Hour).Format(time.RFC3339)) + "&limit=100", ""
			},
			viaAgg: func(i int) (string, string, string) {
				return "GET", "/apis/record.optionsrecord.io/v1alpha1/changes?limit=100&fieldSelector=" + q(fmt.Sprintf("actor.username=bench-user-%02d,since=%s,until=%s",
					i%users, day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339))), ""
			}},
		{name: "as-of plan of a 5,000-object namespace", runs: 5, target: 2 * time.Second,
			direct: func(i int) (string, string, string) {
				return "POST", "/api/v1/clusters/e2e/restore-plans", fmt.Sprintf(`{"kind":"as-of","namespaces":[%q],"at":%q,"resources":[{"group":"","resource":"configmaps"}]}`,
					bigNS, now.Add(-time.Minute).Format(time.RFC3339))
			},
			viaAgg: func(i int) (string, string, string) {
				return "POST", "/apis/record.optionsrecord.io/v1alpha1/namespaces/" + bigNS + "/restoreplans",
					fmt.Sprintf(`{"apiVersion":"record.optionsrecord.io/v1alpha1","kind":"RestorePlan","metadata":{"name":"bench-%d-%d"},"spec":{"kind":"as-of","at":%q,"resources":[{"resource":"configmaps"}]}}`,
						now.Unix(), i, now.Add(-time.Minute).Format(time.RFC3339))
			}},
	}
	for _, qu := range queries {
		for i := range qu.runs + 3 { // 3 warm-up runs
			m, p, b := qu.direct(i)
			t0 := time.Now()
			call(direct, m, w.apiURL+p, b, adminToken)
			d := time.Since(t0)
			m, p, b = qu.viaAgg(i + 1000)
			t1 := time.Now()
			call(aggClient, m, w.cp.Host()+p, b, "")
			a := time.Since(t1)
			if i >= 3 {
				qu.measured[0] = append(qu.measured[0], d)
				qu.measured[1] = append(qu.measured[1], a)
			}
		}
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(float64(len(s))*p))].Round(100 * time.Microsecond)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-45s %6s %12s %12s %12s %12s %10s\n", "query", "runs", "direct p50", "direct p99", "kubectl p50", "kubectl p99", "p99 target")
	for _, qu := range queries {
		fmt.Fprintf(&b, "%-45s %6d %12s %12s %12s %12s %10s\n", qu.name, qu.runs, pct(qu.measured[0], .5), pct(qu.measured[0], .99),
			pct(qu.measured[1], .5), pct(qu.measured[1], .99), qu.target)
	}
	t.Log(b.String())
}
