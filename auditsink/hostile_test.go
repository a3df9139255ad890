package auditsink_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/util/webhook"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// hostile is the real handler, its metrics in a registry, over a real store,
// behind TLS.
type hostile struct {
	*env
	reg *prometheus.Registry
	srv *httptest.Server
	// entered counts the requests that reached the handler.
	entered *atomic.Int64
}

type hostileOptions struct {
	maxBody     int64
	maxInFlight int
	writer      func(model.Writer) model.Writer // wraps the store
	clientCA    *certs.Pair                     // require client certificates from this CA (no token)
	horizon     time.Duration                   // how far back the record keeps events (0: unknown)
	// chunk, maxEvent and maxBytes set ChunkBytes, MaxEventBytes and
	// MaxInFlightBytes (0: the defaults).
	chunk, maxEvent, maxBytes int64
}

func newHostile(t *testing.T, o hostileOptions) *hostile {
	t.Helper()
	e := newEnv(t)
	objs, err := filter.LoadFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.Compile(objs, filter.Options{SinkNamespace: "options-record"})
	reg := prometheus.NewRegistry()
	m := auditsink.NewMetrics(reg)
	var w model.Writer = e.st
	if o.writer != nil {
		w = o.writer(w)
	}
	e.pipe = auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, w, m, nil)

	var clients []auditsink.ClientConfig
	anyCert := ""
	if o.clientCA == nil {
		tf := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tf, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, auditsink.ClientConfig{Cluster: "default", TokenFile: tf})
	} else {
		anyCert = "default"
	}
	auth, err := auditsink.NewAuthenticator(clients, anyCert)
	if err != nil {
		t.Fatal(err)
	}
	h, err := auditsink.NewHandler(auditsink.HandlerOptions{Pipeline: e.pipe, Authenticator: auth,
		MaxBodyBytes: o.maxBody, MaxInFlight: o.maxInFlight, Metrics: m,
		ChunkBytes: o.chunk, MaxEventBytes: o.maxEvent, MaxInFlightBytes: o.maxBytes,
		Horizon: func() time.Duration { return o.horizon }})
	if err != nil {
		t.Fatal(err)
	}
	entered := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		h.ServeHTTP(w, r)
	}))
	if o.clientCA != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(o.clientCA.CertPEM)
		srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven} // as certs.ServerConfig does
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &hostile{env: e, reg: reg, srv: srv, entered: entered}
}

// metric returns the value of the series name{labels...} (label pairs), 0
// if it does not exist.
func (h *hostile) metric(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func (h *hostile) outcome(o string) float64 {
	return h.metric("options_record_batches_total", "outcome", o)
}

// request posts body with the given headers (token and JSON by default).
func (h *hostile) request(body []byte, hdr ...string) (int, http.Header, string) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/audit?timeout=30s", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.String()
}

// healthy checks that the sink still stores a good batch.
func (h *hostile) healthy() {
	h.t.Helper()
	name := fmt.Sprintf("healthy-%d", time.Now().UnixNano())
	ev := Event(Name(name), At(time.Now()), Response(ConfigMap("default", name, "uid-"+name, 10, map[string]string{"k": "v"})))
	code, _, msg := h.request(EventList(ev))
	if code != http.StatusOK {
		h.t.Fatalf("the sink is not healthy after the hostile request: good batch got %d %s", code, msg)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE name = $1`, name); n != 1 {
		h.t.Fatalf("good batch after the hostile request: %d events stored", n)
	}
}

func now(mods ...EventMod) *auditv1.Event {
	return Event(append([]EventMod{At(time.Now())}, mods...)...)
}

func TestHostileRequestsAreRefusedAndCounted(t *testing.T) {
	h := newHostile(t, hostileOptions{maxBody: 1 << 20})
	good := EventList(now(Name("g1"), Response(ConfigMap("default", "g1", "uid-g1", 10, nil))))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zeros := make([]byte, 1<<20)
	for range 64 { // 64 MiB of zeros, about 64 KB compressed: a bomb if inflated
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()

	tests := []struct {
		name     string
		body     []byte
		hdr      []string
		want     []int // acceptable statuses
		message  string
		outcome  string
		stateful bool
	}{
		{"over the body limit", bytes.Repeat([]byte(" "), 2<<20), nil, []int{413}, "body exceeds", "rejected", false},
		// The handler does not decode Content-Encoding: a compressed body is
		// never inflated, and is refused with 415.
		{"gzip bomb", gz.Bytes(), []string{"Content-Encoding", "gzip"}, []int{415}, "", "rejected", false},
		{"deeply nested body", append(bytes.Repeat([]byte("["), 100000), bytes.Repeat([]byte("]"), 100000)...), nil, []int{400}, "not a JSON EventList", "rejected", false},
		{"wrong kind", []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`), nil, []int{400}, "want kind EventList", "rejected", false},
		{"wrong apiVersion", []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1beta1","items":[]}`), nil, []int{400}, "want kind EventList", "rejected", false},
		{"not JSON", []byte("\x00\x01\x02"), nil, []int{400}, "not a JSON EventList", "rejected", false},
		{"wrong content type", good, []string{"Content-Type", "application/x-www-form-urlencoded"}, []int{415}, "unsupported content type", "rejected", false},
		{"GET", nil, []string{"X-Method", "GET"}, []int{405}, "method not allowed", "rejected", false},
		{"no credentials", good, []string{"Authorization", ""}, []int{401}, "unauthenticated", "unauthenticated", false},
		{"wrong bearer token", good, []string{"Authorization", "Bearer " + token + "x"}, []int{401}, "unauthenticated", "unauthenticated", false},
		{"basic auth", good, []string{"Authorization", "Basic YWRtaW46YWRtaW4="}, []int{401}, "unauthenticated", "unauthenticated", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.outcome(tt.outcome)
			var code int
			var msg string
			if len(tt.hdr) == 2 && tt.hdr[0] == "X-Method" {
				req, _ := http.NewRequest(tt.hdr[1], h.srv.URL+"/audit", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := h.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				resp.Body.Close()
				code, msg = resp.StatusCode, b.String()
			} else {
				code, _, msg = h.request(tt.body, tt.hdr...)
			}
			ok := false
			for _, w := range tt.want {
				ok = ok || code == w
			}
			if !ok || !strings.Contains(msg, tt.message) {
				t.Errorf("got %d %q, want %v containing %q", code, msg, tt.want, tt.message)
			}
			if d := h.outcome(tt.outcome) - before; d != 1 {
				t.Errorf("batches_total{outcome=%q} grew by %v, want 1", tt.outcome, d)
			}
			h.healthy()
		})
	}
	if n := h.count(`SELECT count(*) FROM events WHERE name <> '' AND name NOT LIKE 'healthy-%'`); n != 0 {
		t.Errorf("%d events stored from hostile requests", n)
	}
}

// TestHostileEventsAreSkippedAndCounted sends, inside otherwise good
// batches, events that are wrong in one way each. The batch is
// acknowledged, the good events in it stored, and the bad one dropped or
// stored without a version, with a counted reason.
func TestHostileEventsAreSkippedAndCounted(t *testing.T) {
	h := newHostile(t, hostileOptions{maxBody: 64 << 20})
	cm := func(name string, mods ...ObjMod) Obj {
		return ConfigMap("default", name, "uid-"+name, 10, nil, mods...)
	}
	tests := []struct {
		name string
		// body is a whole EventList whose first event is good and named
		// "<prefix>-good".
		body       func(prefix string) []byte
		wantStored int            // events of the batch stored, the good one included
		dropped    map[string]int // growth of options_record_events_dropped_total by reason
		skipped    string         // options_record_versions_skipped_total reason that must grow by 1
	}{
		{
			name: "missing objectRef",
			body: func(p string) []byte {
				bad := now(Name(p + "-bad"))
				bad.ObjectRef = nil
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), bad)
			},
			wantStored: 1, dropped: map[string]int{"no_object": 1},
		},
		{
			name: "non-numeric resourceVersion",
			body: func(p string) []byte {
				bad := cm(p + "-bad")
				bad["metadata"].(Obj)["resourceVersion"] = "not-a-number"
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), Response(bad)))
			},
			wantStored: 2, skipped: "bad_resource_version",
		},
		{
			name: "event that is not an object",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))))
				return append(bytes.TrimSuffix(b, []byte("]}")), `,"just a string",42,null,[]]}`...)
			},
			wantStored: 1, dropped: map[string]int{"malformed": 3, "invalid": 1}, // null decodes to an empty event
		},
		{
			name: "absurd values",
			body: func(p string) []byte {
				far := Event(Name(p+"-bad"), At(time.Now().Add(10*365*24*time.Hour)))
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), far)
			},
			wantStored: 1, dropped: map[string]int{"invalid": 1},
		},
		{
			name: "unknown fields",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))))
				b = bytes.Replace(b, []byte(`{"kind":"EventList",`), []byte(`{"kind":"EventList","surprise":{"a":[1,2,3]},`), 1)
				return bytes.Replace(b, []byte(`"level":`), []byte(`"futureField":true,"level":`), 1)
			},
			wantStored: 1,
		},
		{
			name: "invalid UTF-8 in the event",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), User("mallory\xff\xfe"), Response(cm(p+"-bad"))))
				return bytes.Replace(b, []byte("mallory\\ufffd\\ufffd"), []byte("mallory\xff\xfe"), 1)
			},
			wantStored: 2,
		},
		{
			name: "a 10 MB object",
			body: func(p string) []byte {
				big := ConfigMap("default", p+"-big", "uid-"+p+"-big", 10, map[string]string{"blob": strings.Repeat("x", 10<<20)})
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-big"), Response(big)))
			},
			wantStored: 2,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fmt.Sprintf("h%d", i)
			dropped := map[string]float64{}
			for r := range tt.dropped {
				dropped[r] = h.metric("options_record_events_dropped_total", "reason", r)
			}
			skipped := h.metric("options_record_versions_skipped_total", "reason", tt.skipped)
			code, _, msg := h.request(tt.body(p))
			if code != http.StatusOK {
				t.Fatalf("got %d %s, want 200: one bad event must not cost the batch", code, msg)
			}
			if n := h.count(`SELECT count(*) FROM events WHERE name LIKE $1`, p+"-%"); n != tt.wantStored {
				t.Errorf("stored %d events of the batch, want %d", n, tt.wantStored)
			}
			if n := h.count(`SELECT count(*) FROM events WHERE name = $1`, p+"-good"); n != 1 {
				t.Errorf("the good event was not stored")
			}
			for r, n := range tt.dropped {
				if d := h.metric("options_record_events_dropped_total", "reason", r) - dropped[r]; d != float64(n) {
					t.Errorf("events_dropped_total{reason=%q} grew by %v, want %d", r, d, n)
				}
			}
			if tt.skipped != "" && h.metric("options_record_versions_skipped_total", "reason", tt.skipped) != skipped+1 {
				t.Errorf("versions_skipped_total{reason=%q} did not grow by 1", tt.skipped)
			}
			h.healthy()
		})
	}
}

// TestHostileEventsThatPostgreSQLRejects covers events that decode but that
// PostgreSQL cannot store as they are: a NUL character (\u0000) in a text
// field or inside an object (jsonb refuses it), deep nesting near the JSON
// decoder's limit, and invalid UTF-8 inside a stored object. Any user who
// can write an object can send such values through the apiserver, and the
// whole batch — other users' events included — must not be lost for it.
func TestHostileEventsThatPostgreSQLRejects(t *testing.T) {
	h := newHostile(t, hostileOptions{maxBody: 64 << 20})
	cm := func(name string) Obj { return ConfigMap("default", name, "uid-"+name, 10, nil) }
	deep := func(p string) []byte {
		// An object the apiserver accepts (depth < 10000) nested inside an
		// event inside an EventList goes past encoding/json's 10000 limit.
		obj := cm(p + "-bad")
		b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), Response(obj)))
		nest := strings.Repeat(`{"a":`, 9998) + "1" + strings.Repeat("}", 9998) // the object's depth: 9999
		return bytes.Replace(b, []byte(`"data":{}`), []byte(`"data":{},"spec":`+nest), 1)
	}
	tests := []struct {
		name                 string
		body                 func(p string) []byte
		badStoredWithoutBody bool
		badStoredShortened   bool
		badValue             string // data.k of the stored object, when set
		badPatchValue        string // data.k of the stored patch, when set
		badK                 string // data.k of the stored object (no pair), when set
		badUser              string // the stored event's username, when set
		// exact is in the state the store gives the restore, the manifest
		// and the diff: the text the apiserver sent, not the one the
		// views show.
		exact string
	}{
		{
			name: "NUL in a text field",
			body: func(p string) []byte {
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), User("eve\x00"), Response(cm(p+"-bad"))))
			},
			badUser: "eve\uFFFD",
		},
		{
			name: "NUL inside an object",
			body: func(p string) []byte {
				bad := ConfigMap("default", p+"-bad", "uid-"+p+"-bad", 10, map[string]string{"k": "v\x00"})
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), Response(bad)))
			},
			badK:  "v\uFFFD",
			exact: `"k":"v\u0000"`,
		},
		{
			name: "invalid UTF-8 inside an object",
			body: func(p string) []byte {
				bad := ConfigMap("default", p+"-bad", "uid-"+p+"-bad", 10, map[string]string{"k": "MARK"})
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), Response(bad)))
				return bytes.Replace(b, []byte("MARK"), []byte("a\xff\xfeb"), 1)
			},
			// A run of invalid bytes becomes one U+FFFD, as
			// strings.ToValidUTF8 does.
			badK: "a\uFFFDb",
		},
		{
			name: "invalid UTF-8 in a text field",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), User("eveMARK"), Response(cm(p+"-bad"))))
				return bytes.Replace(b, []byte("MARK"), []byte("\xff"), 1)
			},
			badUser: "eve\uFFFD",
		},
		{
			// Too deep for the fast decoder: the body is decoded item by
			// item, and the invalid UTF-8 still counted.
			name: "invalid UTF-8 in a text field, beside an object too deep",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), User("eveMARK"), Response(cm(p+"-bad"))),
					now(Name(p+"-deep"), Response(cm(p+"-deep"))))
				b = bytes.Replace(b, []byte("MARK"), []byte("\xff"), 1)
				nest := strings.Repeat(`{"a":`, 10010) + "1" + strings.Repeat("}", 10010)
				i := bytes.LastIndex(b, []byte(`"data":{}`)) // the third event's
				return slices.Concat(b[:i], []byte(`"data":{},"spec":`+nest), b[i+len(`"data":{}`):])
			},
			badUser: "eve\uFFFD",
		},
		{
			// PostgreSQL's json accepts the escape, its jsonb does not:
			// stored as is, the row could never be read as jsonb again.
			name: "a lone UTF-16 surrogate inside an object",
			body: func(p string) []byte {
				bad := ConfigMap("default", p+"-bad", "uid-"+p+"-bad", 10, map[string]string{"k": "MARK", "pair": "PAIR"})
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))), now(Name(p+"-bad"), Response(bad)))
				b = bytes.Replace(b, []byte("PAIR"), []byte(`\ud83d\ude00`), 1) // a valid pair stays
				return bytes.Replace(b, []byte("MARK"), []byte(`a\ud800b`), 1)
			},
			badValue: "a\uFFFDb",
			exact:    `"k":"a\ud800b"`,
		},
		{
			name: "a lone low surrogate in a patch body",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))),
					now(Verb("patch"), Name(p+"-bad"), Request(Obj{"data": Obj{"k": "MARK"}}), Response(cm(p+"-bad"))))
				return bytes.Replace(b, []byte("MARK"), []byte(`\uDC00\\ud800`), 1) // the second is an escaped backslash
			},
			badPatchValue: "\uFFFD\\ud800",
		},
		{name: "object nested near the decoder's depth limit", body: deep},
		{
			// A refused request for an object with a 3,000-character
			// name: audited, and kept as a failed mutation. The name is
			// longer than a B-tree entry can hold.
			name: "a name too long for an index entry",
			body: func(p string) []byte {
				long := p + "-bad-" + strings.Repeat("x", 3000)
				return EventList(now(Name(p+"-good"), Response(cm(p+"-good"))),
					now(Verb("delete"), Name(long), User(strings.Repeat("u", 3000)), Failed(404, "NotFound", "not found")))
			},
			badStoredShortened: true,
		},
		{
			// The decoder skips objects without validating them; a kept
			// request body that is not JSON is left out, the event stored.
			name: "a patch whose body is not JSON",
			body: func(p string) []byte {
				b := EventList(now(Name(p+"-good"), Response(cm(p+"-good"))),
					now(Verb("patch"), Name(p+"-bad"), Request(Obj{"data": "MARK"}), Response(cm(p+"-bad"))))
				return bytes.Replace(b, []byte(`"MARK"`), []byte(`tru`), 1)
			},
			badStoredWithoutBody: true,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fmt.Sprintf("pg%d", i)
			sanitized := h.metric("options_record_events_sanitized_total")
			code, _, msg := h.request(tt.body(p))
			if code != http.StatusOK {
				t.Fatalf("got %d %s, want 200: one bad event must not cost the batch", code, msg)
			}
			if n := h.count(`SELECT count(*) FROM events WHERE name = $1`, p+"-good"); n != 1 {
				t.Errorf("the good event of the batch was not stored")
			}
			if tt.badStoredShortened {
				if n := h.count(`SELECT count(*) FROM failed_mutations WHERE name LIKE $1 AND octet_length(name) <= 1024
					AND name LIKE '%…sha256:%' AND octet_length(username) <= 1024`, p+"-bad-%"); n != 1 {
					t.Errorf("the refused request was not stored with its name and user shortened")
				}
			}
			if tt.badStoredWithoutBody {
				if n := h.count(`SELECT count(*) FROM events WHERE name = $1 AND verb = 'patch' AND request_object IS NULL`, p+"-bad"); n != 1 {
					t.Errorf("the patch was not stored without its body")
				}
				if n := h.count(`SELECT count(*) FROM object_versions WHERE name = $1`, p+"-bad"); n != 1 {
					t.Errorf("the patch's object version was not stored")
				}
			}
			// Every acknowledged row reads back as jsonb.
			if n := h.count(`SELECT count(*) FROM object_versions WHERE name LIKE $1 AND object IS NOT NULL
				AND jsonb_typeof(object::jsonb) = 'object'`, p+"-%"); n < 1 {
				t.Errorf("no stored version of the batch reads back as a jsonb object")
			}
			// count(expr) evaluates expr on every row: a row that is not
			// jsonb fails the query.
			if n := h.count(`SELECT count(*) + count(request_object::jsonb) + count(annotations::jsonb) + count(user_extra::jsonb)
				FROM events WHERE name LIKE $1`, p+"-%"); n < 1 {
				t.Errorf("the events of the batch do not read back as jsonb")
			}
			if tt.badValue != "" {
				if n := h.count(`SELECT count(*) FROM object_versions WHERE name = $1 AND object::jsonb->'data'->>'k' = $2
					AND object::jsonb->'data'->>'pair' = '😀'`, p+"-bad", tt.badValue); n != 1 {
					t.Errorf("the object was not stored with the surrogate replaced by U+FFFD (and the pair kept)")
				}
			}
			if tt.badK != "" {
				var got string
				if err := h.env.pool.QueryRow(context.Background(), `SELECT coalesce(max(object::jsonb->'data'->>'k'), '(none)') FROM object_versions WHERE name = $1`, p+"-bad").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tt.badK {
					t.Errorf("the object was stored with data.k %q, want %q (NUL and invalid UTF-8 replaced by U+FFFD)", got, tt.badK)
				}
			}
			if tt.exact != "" {
				var uid string
				var key []byte
				if err := h.env.pool.QueryRow(context.Background(), `SELECT uid, version_key FROM object_versions WHERE name = $1`, p+"-bad").Scan(&uid, &key); err != nil {
					t.Fatal(err)
				}
				states, err := h.env.st.Objects(context.Background(), "default", []string{uid}, [][]byte{key})
				if err != nil {
					t.Fatal(err)
				}
				if got := string(states[store.ObjectID(uid, key)]); !strings.Contains(got, tt.exact) {
					t.Errorf("the state given back is %.300s; want the text the apiserver sent (%s)", got, tt.exact)
				}
			}
			if tt.badUser != "" {
				if n := h.count(`SELECT count(*) FROM events WHERE name = $1 AND username = $2`, p+"-bad", tt.badUser); n != 1 {
					t.Errorf("the event was not stored with its username's NUL replaced by U+FFFD")
				}
			}
			if tt.badPatchValue != "" {
				if n := h.count(`SELECT count(*) FROM events WHERE name = $1 AND request_object::jsonb->'data'->>'k' = $2`, p+"-bad", tt.badPatchValue); n != 1 {
					t.Errorf("the patch was not stored with the surrogate replaced by U+FFFD")
				}
			}
			if tt.badValue != "" || tt.badPatchValue != "" || tt.badK != "" || tt.badUser != "" {
				if got := h.metric("options_record_events_sanitized_total") - sanitized; got != 1 {
					t.Errorf("sanitized events counted %v, want 1", got)
				}
			}
			h.healthy()
		})
	}
}

// blocking holds every write until released.
type blocking struct {
	model.Writer
	entered chan struct{}
	release chan struct{}
}

func (b *blocking) WriteBatch(ctx context.Context, batch *model.Batch) (model.WriteResult, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.Writer.WriteBatch(ctx, batch)
}

func TestFloodOfTinyRequestsIsThrottled(t *testing.T) {
	var blk *blocking
	h := newHostile(t, hostileOptions{maxInFlight: 2, writer: func(w model.Writer) model.Writer {
		blk = &blocking{Writer: w, entered: make(chan struct{}, 100), release: make(chan struct{})}
		return blk
	}})
	tiny := []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]}`)

	// Two batches hold the two slots; the third is throttled.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if code, _, msg := h.request(tiny); code != http.StatusOK {
				t.Errorf("held batch: %d %s", code, msg)
			}
		})
	}
	<-blk.entered
	<-blk.entered
	code, hdr, _ := h.request(tiny)
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("third batch: %d (Retry-After %q), want 429 with Retry-After", code, hdr.Get("Retry-After"))
	}
	close(blk.release)
	wg.Wait()

	// A flood of one-event batches: every request gets 200 or 429, and the
	// counters add up.
	const flood = 300
	codes := map[int]int{}
	var mu sync.Mutex
	sem := make(chan struct{}, 32)
	for range flood {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("flood-%d", time.Now().UnixNano())
			code, _, _ := h.request(EventList(now(Name(name), Response(ConfigMap("default", name, "uid-"+name, 1, nil)))))
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("flood of %d: %v", flood, codes)
	if codes[200]+codes[429] != flood || codes[429] == 0 || codes[200] == 0 {
		t.Errorf("answers %v: want 200 and 429, nothing else", codes)
	}
	if got := h.outcome("throttled"); got != float64(codes[429]+1) {
		t.Errorf("throttled = %v, want %d", got, codes[429]+1)
	}
	if h.metric("options_record_batches_in_flight") != 0 {
		t.Error("batches still counted in flight")
	}
	h.healthy()
}

func TestClientCertificates(t *testing.T) {
	ca, err := certs.NewCA("apiserver-clients", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h := newHostile(t, hostileOptions{clientCA: ca})
	good := EventList(now(Name("tls1"), Response(ConfigMap("default", "tls1", "uid-tls1", 10, nil))))
	client := func(pair *certs.Pair) *http.Client {
		c := h.srv.Client()
		tr := c.Transport.(*http.Transport).Clone()
		if pair != nil {
			cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
		}
		return &http.Client{Transport: tr}
	}
	post := func(c *http.Client) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/audit", bytes.NewReader(good))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	// TLS without a client certificate: the handshake succeeds (the
	// certificate is optional so that token callers can connect) and the
	// request is unauthenticated.
	if code, err := post(client(nil)); code != http.StatusUnauthorized {
		t.Errorf("no client certificate: %d %v, want 401", code, err)
	}
	if h.outcome("unauthenticated") != 1 {
		t.Errorf("unauthenticated = %v, want 1", h.outcome("unauthenticated"))
	}
	// A certificate from another CA, presented anyway, fails the handshake.
	other, _ := certs.NewCA("someone-else", time.Hour)
	stranger, _ := other.Issue("kube-apiserver", nil, false, time.Hour)
	c := client(nil)
	cert, err := tls.X509KeyPair(stranger.CertPEM, stranger.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &cert, nil
	}
	if code, err := post(c); err == nil {
		t.Errorf("certificate from an unknown CA: %d, want a failed handshake", code)
	}
	// The right certificate is accepted, and the sink is fine.
	apiserver, _ := ca.Issue("kube-apiserver", nil, false, time.Hour)
	if code, err := post(client(apiserver)); code != http.StatusOK {
		t.Errorf("client certificate from the CA: %d %v, want 200", code, err)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE name = 'tls1'`); n != 1 {
		t.Errorf("stored %d", n)
	}
}

// TestBodyShorterThanAnnounced announces a larger body than it sends (the
// handler allocates what is announced, up to the limit) and hangs up: the
// request is refused and counted, and the sink goes on.
func TestBodyShorterThanAnnounced(t *testing.T) {
	h := newHostile(t, hostileOptions{maxBody: 1 << 20})
	before := h.outcome("rejected")
	conn, err := tls.Dial("tcp", h.srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /audit HTTP/1.1\r\nHost: sink\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"kind\":", token, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b bytes.Buffer
	_, _ = b.ReadFrom(conn)
	if !strings.HasPrefix(b.String(), "HTTP/1.1 400") {
		t.Errorf("answer %.200q, want 400", b.String())
	}
	if d := h.outcome("rejected") - before; d != 1 {
		t.Errorf("rejected grew by %v, want 1", d)
	}
	h.healthy()
}

// TestSlowBodiesDoNotHoldSlots: callers holding the webhook credential that
// trickle their bodies (slower than the minimum transfer rate) must not
// occupy the in-flight slots: the apiserver's real batch gets 200 at once,
// and the slow ones are cut off (408 or the connection closed) once the
// grace period has passed.
func TestSlowBodiesDoNotHoldSlots(t *testing.T) {
	h := newHostile(t, hostileOptions{maxInFlight: 2, maxBody: 1 << 20})
	const slow = 6 // three times the slots
	type cut struct {
		answer   string
		after    time.Duration
		timedOut bool // our read deadline ended it, not the sink
	}
	results := make(chan cut, slow)
	start := time.Now()
	var conns []*tls.Conn
	for range slow {
		conn, err := tls.Dial("tcp", h.srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		_, err = fmt.Fprintf(conn, "POST /audit HTTP/1.1\r\nHost: sink\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", token, 100000)
		if err != nil {
			t.Fatal(err)
		}
		// Ten bytes a second, far below any minimum rate.
		go func() {
			for i := 0; ; i++ {
				time.Sleep(100 * time.Millisecond)
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		go func() {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			var b bytes.Buffer
			_, err := b.ReadFrom(conn)
			var ne net.Error
			results <- cut{answer: b.String(), after: time.Since(start), timedOut: errors.As(err, &ne) && ne.Timeout()}
		}()
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	// Every slow body is in the handler before the good batch is sent
	// (a sleep would pass if they had not started yet).
	deadline := time.Now().Add(time.Minute)
	for h.entered.Load() < slow {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slow bodies reached the handler within a minute", h.entered.Load(), slow)
		}
		time.Sleep(10 * time.Millisecond)
	}

	goodStart := time.Now()
	h.healthy()
	// Had the slow bodies held the slots, the good batch would have been
	// let in only once all but one of them were cut off.
	cutBefore := len(results)
	t.Logf("good batch under %d slow bodies: 200 in %v, %d slow bodies cut off by then", slow, time.Since(goodStart), cutBefore)
	if cutBefore > slow-2 {
		t.Errorf("the good batch was answered only after %d of %d slow bodies were cut off", cutBefore, slow)
	}

	for range slow {
		c := <-results
		if c.answer != "" && !strings.HasPrefix(c.answer, "HTTP/1.1 408") {
			t.Errorf("slow body answered %.100q, want 408 or the connection closed", c.answer)
		}
		if c.answer != "" && !apiserverRetries(t, c.answer) {
			t.Errorf("slow body answered %.200q: the kube-apiserver would drop the batch, not retry it", c.answer)
		}
		if c.timedOut {
			t.Errorf("slow body still open after %v: the sink never cut it off", c.after)
		}
		t.Logf("slow body cut off after %v: %.40q", c.after, c.answer)
	}
	if h.outcome("slow_body") != slow {
		t.Errorf("batches_total{outcome=\"slow_body\"} = %v, want %d", h.outcome("slow_body"), slow)
	}
	h.healthy()
}

// TestFailedAuthenticationsAreRateLimited: a caller that keeps failing to
// authenticate gets 429 after a burst of 401s, counted; an authenticated
// caller from the same address is never held up by it.
func TestFailedAuthenticationsAreRateLimited(t *testing.T) {
	h := newHostile(t, hostileOptions{})
	body := EventList(now(Name("rl1"), Response(ConfigMap("default", "rl1", "uid-rl1", 10, nil))))
	const tries = 40
	codes := map[int]int{}
	retryAfter := ""
	for range tries {
		code, hdr, _ := h.request(body, "Authorization", "Bearer guess")
		codes[code]++
		if code == http.StatusTooManyRequests {
			retryAfter = hdr.Get("Retry-After")
		}
	}
	t.Logf("%d failed authentications: %v", tries, codes)
	if codes[401] == 0 || codes[429] == 0 || codes[401]+codes[429] != tries || codes[401] > 15 {
		t.Errorf("answers %v: want a burst of 401s, then 429s", codes)
	}
	if codes[429] > 0 && retryAfter == "" {
		t.Error("429 without Retry-After")
	}
	if got := h.metric("options_record_webhook_auth_failures_total", "result", "throttled"); got != float64(codes[429]) {
		t.Errorf("auth_failures_total{result=throttled} = %v, want %d", got, codes[429])
	}
	if got := h.metric("options_record_webhook_auth_failures_total", "result", "refused"); got != float64(codes[401]) {
		t.Errorf("auth_failures_total{result=refused} = %v, want %d", got, codes[401])
	}
	// The apiserver, from the same address, with the right token: answered
	// (h.healthy wants 200), and not counted as a failure.
	h.healthy()
	if got := h.metric("options_record_webhook_auth_failures_total", "result", "throttled"); got != float64(codes[429]) {
		t.Errorf("the authenticated batch was throttled: auth_failures_total{result=throttled} = %v, want %d", got, codes[429])
	}
}

// TestOldEventsCreateNoPartitions: events are stored in daily partitions of
// their stageTimestamp, created on demand. A webhook caller sending events
// stamped on many distinct past days (the decoder takes anything since
// 2014) would make the sink create a partition for each. Events older than
// the record keeps are skipped and counted; no partition is created for
// them, and the good events of the batch are stored.
func TestOldEventsCreateNoPartitions(t *testing.T) {
	tests := []struct {
		name    string
		horizon time.Duration // the rules' longest retention
		oldest  int           // days ago of the newest old event
	}{
		{"retention unknown: 400 days", 0, 500},
		{"retention of 30 days", 30 * 24 * time.Hour, 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostile(t, hostileOptions{maxBody: 64 << 20, horizon: tt.horizon})
			partitions := func() int {
				return h.count(`SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass`)
			}
			before := partitions()
			dropped := h.metric("options_record_events_dropped_total", "reason", "out_of_window")
			const days = 40
			evs := []*auditv1.Event{now(Name("win-good"), Response(ConfigMap("default", "win-good", "uid-win-good", 10, nil))),
				// A day back is always taken (delivery delays, clock skew).
				Event(Name("win-yesterday"), At(time.Now().Add(-23*time.Hour)), Response(ConfigMap("default", "win-yesterday", "uid-win-y", 10, nil)))}
			for i := range days {
				name := fmt.Sprintf("win-old-%d", i)
				at := time.Now().AddDate(0, 0, -tt.oldest-i)
				evs = append(evs, Event(Name(name), At(at), Response(ConfigMap("default", name, "uid-"+name, 10, nil))))
			}
			code, _, msg := h.request(EventList(evs...))
			if code != http.StatusOK {
				t.Fatalf("got %d %s, want 200", code, msg)
			}
			if n := h.count(`SELECT count(*) FROM events WHERE name IN ('win-good', 'win-yesterday')`); n != 2 {
				t.Errorf("%d of the 2 good events stored", n)
			}
			if n := h.count(`SELECT count(*) FROM events WHERE name LIKE 'win-old-%'`); n != 0 {
				t.Errorf("%d events older than the record keeps were stored", n)
			}
			if got := partitions() - before; got != 0 {
				t.Errorf("one batch created %d event partitions", got)
			}
			if d := h.metric("options_record_events_dropped_total", "reason", "out_of_window") - dropped; d != days {
				t.Errorf("events_dropped_total{reason=out_of_window} grew by %v, want %d", d, days)
			}
			h.healthy()
		})
	}
}

// apiserverRetries tells whether the kube-apiserver's audit webhook retries
// a batch answered with the raw HTTP answer: the error client-go's REST
// client makes of it (request.go: newUnstructuredResponseError, with the
// Retry-After seconds), judged by the webhook's own retry rule.
func apiserverRetries(t *testing.T, answer string) bool {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(answer)), nil)
	if err != nil {
		t.Fatalf("reading the answer %.100q: %v", answer, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	retryAfter := 0
	if v, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		retryAfter = v
	}
	err = apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodPost, schema.GroupResource{}, "", string(body), retryAfter, true)
	return webhook.DefaultShouldRetry(err)
}
