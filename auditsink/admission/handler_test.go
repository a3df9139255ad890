package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/options-record/options-record/store/model"
)

var digester = func() *model.SecretDigester {
	d, err := model.NewSecretDigester([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return d
}()

func configMap(name, uid string, rv int, value string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"prod","uid":%q,"resourceVersion":"%d","managedFields":[{"manager":"kubectl"}]},"data":{"k":%q}}`, name, uid, rv, value)
}

// reviewBody is an AdmissionReview of op on the object old (JSON, or "").
func reviewBody(apiVersion, uid, op, resource, name, old string) string {
	oldField := ""
	if old != "" {
		oldField = `,"oldObject":` + old
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":"AdmissionReview","request":{"uid":%q,"kind":{"group":"","version":"v1","kind":"ConfigMap"},`+
		`"resource":{"group":"","version":"v1","resource":%q},"name":%q,"namespace":"prod","operation":%q,`+
		`"userInfo":{"username":"bob"},"dryRun":false%s}}`, apiVersion, uid, resource, name, op, oldField)
}

func newTestHandler(t testing.TB, q *Queue, mod func(*HandlerOptions)) *Handler {
	t.Helper()
	o := HandlerOptions{Digester: digester, Queue: q, Metrics: q.o.Metrics}
	if mod != nil {
		mod(&o)
	}
	h, err := NewHandler(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func post(h http.Handler, contentType, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/observe", strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func answer(t *testing.T, w *httptest.ResponseRecorder) admissionv1.AdmissionReview {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var rv admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &rv); err != nil {
		t.Fatal(err)
	}
	if rv.Response == nil || !rv.Response.Allowed || rv.Response.Patch != nil || rv.Response.PatchType != nil {
		t.Fatalf("answer %s: want allowed, no patch", w.Body)
	}
	return rv
}

// Every review is allowed and never patched; an UPDATE or DELETE with an
// oldObject is queued, and named by an annotation of the object's key.
func TestReviewIsAllowedAndNamesItsObservation(t *testing.T) {
	for _, c := range []struct {
		apiVersion, op, old string
		observed            bool
	}{
		{"admission.k8s.io/v1", "DELETE", configMap("app", "u1", 7, "v1"), true},
		{"admission.k8s.io/v1beta1", "UPDATE", configMap("app", "u1", 7, "v1"), true},
		{"admission.k8s.io/v1", "CREATE", "", false},
		{"admission.k8s.io/v1", "CONNECT", "", false},
	} {
		t.Run(c.apiVersion+" "+c.op, func(t *testing.T) {
			q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
			h := newTestHandler(t, q, func(o *HandlerOptions) { o.ID = func() string { return strings.Repeat("a", 32) } })
			rv := answer(t, post(h, "application/json", reviewBody(c.apiVersion, "req-1", c.op, "configmaps", "app", c.old)))
			if rv.APIVersion != c.apiVersion || rv.Kind != "AdmissionReview" || rv.Response.UID != "req-1" {
				t.Errorf("answer %s %s uid %s; want the review's apiVersion and uid", rv.APIVersion, rv.Kind, rv.Response.UID)
			}
			ann := rv.Response.AuditAnnotations
			if !c.observed {
				if len(ann) != 0 || len(q.ch) != 0 {
					t.Errorf("annotations %v, queued %d; want none", ann, len(q.ch))
				}
				return
			}
			if len(ann) != 1 || len(q.ch) != 1 {
				t.Fatalf("annotations %v, queued %d; want one of each", ann, len(q.ch))
			}
			o := <-q.ch
			for k, v := range ann {
				if !strings.HasPrefix(k, "observation-") || len(k) > 63 || v != o.ID {
					t.Errorf("annotation %s: %s; want observation-<key>: %s", k, v, o.ID)
				}
			}
			if o.Operation != c.op || o.Name != "app" || o.Namespace != "prod" || o.Version.UID != "u1" ||
				*o.Version.ResourceVersion != 7 || o.Version.Origin != model.OriginAdmission || bytes.Contains(o.Version.Object, []byte("managedFields")) {
				t.Errorf("observation %+v", o)
			}
		})
	}
}

// What is not an AdmissionReview is answered 400 with what was wrong; an
// oversized body 413.
func TestGarbledReviewsAreRefused(t *testing.T) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
	h := newTestHandler(t, q, func(o *HandlerOptions) { o.MaxBodyBytes = 4096 })
	for _, c := range []struct {
		name, contentType, body, want string
		status                        int
	}{
		{"not JSON", "application/json", `{"apiVersion":`, "bad AdmissionReview", 400},
		{"another kind", "application/json", `{"apiVersion":"v1","kind":"ConfigMap"}`, "want an AdmissionReview", 400},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "no request", 400},
		{"no uid", "application/json", reviewBody("admission.k8s.io/v1", "", "DELETE", "configmaps", "app", ""), "without a uid", 400},
		{"content type", "text/plain", reviewBody("admission.k8s.io/v1", "r", "DELETE", "configmaps", "app", ""), "Content-Type", 400},
		{"too large", "application/json", reviewBody("admission.k8s.io/v1", "r", "DELETE", "configmaps", "app", configMap("app", "u", 1, strings.Repeat("x", 5000))), "too large", 413},
	} {
		w := post(h, c.contentType, c.body)
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %q; want %d with %q", c.name, w.Code, w.Body, c.status, c.want)
		}
	}
	if n := len(q.ch); n != 0 {
		t.Errorf("queued %d; want none", n)
	}
	if got := testutil.ToFloat64(q.o.Metrics.refused.WithLabelValues("bad_review")); got != 6 {
		t.Errorf("refused as bad reviews: %v, want 6", got)
	}
}

// A full queue never holds a review up: the write is allowed, nothing is
// observed, and the drop is counted.
func TestFullQueueDropsAndCounts(t *testing.T) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil), MaxItems: 1})
	h := newTestHandler(t, q, nil)
	first := answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "a", configMap("a", "u1", 3, "x"))))
	second := answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r2", "DELETE", "configmaps", "b", configMap("b", "u2", 4, "x"))))
	if len(first.Response.AuditAnnotations) != 1 || len(second.Response.AuditAnnotations) != 0 {
		t.Errorf("annotations %v and %v; want the first named, the second not", first.Response.AuditAnnotations, second.Response.AuditAnnotations)
	}
	if got := testutil.ToFloat64(q.o.Metrics.dropped.WithLabelValues("queue_full")); got != 1 {
		t.Errorf("dropped as queue_full: %v, want 1", got)
	}
	// Bounded in bytes too.
	qb := NewQueue(QueueOptions{Metrics: NewMetrics(nil), MaxBytes: 100})
	if w := answer(t, post(newTestHandler(t, qb, nil), "application/json", reviewBody("admission.k8s.io/v1", "r3", "DELETE", "configmaps", "c", configMap("c", "u3", 4, "x")))); len(w.Response.AuditAnnotations) != 0 {
		t.Errorf("an observation larger than the queue's bytes was queued")
	}
}

type tokenAuth string

func (a tokenAuth) Authenticate(r *http.Request) (string, bool) {
	return "east", r.Header.Get("Authorization") == "Bearer "+string(a)
}

// With authentication required, a review without the apiserver's
// credential is refused; an authenticated one takes its caller's cluster.
func TestRequiredAuthentication(t *testing.T) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
	h := newTestHandler(t, q, func(o *HandlerOptions) { o.Authenticator, o.RequireAuth = tokenAuth("s3cret"), true })
	body := reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "a", configMap("a", "u1", 3, "x"))
	if w := post(h, "application/json", body); w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous review: %d, want 401", w.Code)
	}
	r := httptest.NewRequest(http.MethodPost, "/observe", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer s3cret")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	answer(t, w)
	if o := <-q.ch; o.Cluster != "east" {
		t.Errorf("cluster %q, want the caller's (east)", o.Cluster)
	}
	// Not required: an anonymous review is the default cluster's.
	h = newTestHandler(t, q, func(o *HandlerOptions) { o.Authenticator, o.Cluster = tokenAuth("s3cret"), "west" })
	answer(t, post(h, "application/json", body))
	if o := <-q.ch; o.Cluster != "west" {
		t.Errorf("cluster %q, want west", o.Cluster)
	}
}

// A Secret's values are digested before the observation is queued.
func TestObservedSecretDigestedBeforeQueued(t *testing.T) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
	h := newTestHandler(t, q, nil)
	secret := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"prod","uid":"s1","resourceVersion":"9"},"data":{"password":"aHVudGVyMg=="}}`
	answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r1", "DELETE", "secrets", "db", secret)))
	o := <-q.ch
	if bytes.Contains(o.Version.Object, []byte("aHVudGVyMg==")) || !o.Version.SecretDigested {
		t.Errorf("queued Secret: %s; want its values digested", o.Version.Object)
	}
}

// BenchmarkReview measures a review answered and queued (the latency the
// webhook adds to a write, less the network).
func BenchmarkReview(b *testing.B) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil), MaxItems: 1 << 20, MaxBytes: 1 << 40})
	h := newTestHandler(b, q, nil)
	body := reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "app", configMap("app", "u1", 7, strings.Repeat("v", 2000)))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		w := post(h, "application/json", body)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		<-q.ch
	}
}

// A dry run's review is observed (the stored object is true) and marked so
// that it never makes a change.
func TestDryRunReviewIsMarked(t *testing.T) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
	body := strings.Replace(reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "app", configMap("app", "u1", 7, "v")), `"dryRun":false`, `"dryRun":true`, 1)
	answer(t, post(newTestHandler(t, q, nil), "application/json", body))
	if o := <-q.ch; !o.DryRun {
		t.Errorf("observation of a dry run not marked: %+v", o)
	}
}

// Reviews hold at most MaxInFlightBytes of bodies at once, counted as they
// arrive: one that would go beyond is answered 429 at once (the apiserver
// ignores it); once the others are done, the bytes are free again.
func TestInFlightBytesAreBounded(t *testing.T) {
	q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
	h := newTestHandler(t, q, func(o *HandlerOptions) { o.MaxInFlightBytes = 1000 })
	srv, reading, done := serveSignalling(t, h)
	slow := slowReview(t, srv, 900)
	<-reading // 901 bytes held
	body := reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "a", configMap("a", "u1", 3, "x"))
	if code, out := postTo(t, srv, body); code != http.StatusTooManyRequests {
		t.Errorf("a review beyond the bytes in flight: %d %s, want 429", code, out)
	}
	slow.Close()
	<-done
	<-done // the refused review, and the slow one cut off
	if code, out := postTo(t, srv, body); code != http.StatusOK {
		t.Errorf("a review once the bytes are free: %d %s, want 200", code, out)
	}
}

func postTo(t *testing.T, srv *httptest.Server, body string) (int, []byte) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/observe", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// serveSignalling serves h on a listener of its own and signals each
// request whose body the handler begins to read (reading), and each it has
// answered (done).
func serveSignalling(t *testing.T, h http.Handler) (srv *httptest.Server, reading, done <-chan struct{}) {
	t.Helper()
	rc, dc := make(chan struct{}, 16), make(chan struct{}, 16)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &signalOnRead{ReadCloser: r.Body, c: rc}
		h.ServeHTTP(w, r)
		dc <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return srv, rc, dc
}

type signalOnRead struct {
	io.ReadCloser
	c    chan<- struct{}
	once sync.Once
}

func (s *signalOnRead) Read(p []byte) (int, error) {
	s.once.Do(func() { s.c <- struct{}{} })
	return s.ReadCloser.Read(p)
}

// slowReview opens a connection that announces a review of n bytes, sends
// its first byte and holds the rest.
func slowReview(t *testing.T, srv *httptest.Server, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "POST /observe HTTP/1.1\r\nHost: sink\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", n); err != nil {
		t.Fatal(err)
	}
	return c
}

// Slow senders, anonymous on a managed cluster, hold connections, not
// slots: the body is read before a slot is taken, and bytes in flight are
// counted as they arrive, not as announced. A real review is answered
// while as many slow ones as there are slots are being read.
func TestSlowReviewsTakeNoSlot(t *testing.T) {
	for _, c := range []struct {
		name     string
		inFlight int64 // MaxInFlightBytes
	}{
		{"slots", 0},       // the default, 64 MiB: the slots bind
		{"bytes", 2 << 20}, // what the slow ones announce
	} {
		t.Run(c.name, func(t *testing.T) {
			q := NewQueue(QueueOptions{Metrics: NewMetrics(nil)})
			h := newTestHandler(t, q, func(o *HandlerOptions) {
				o.MaxInFlight, o.MaxBodyBytes, o.MaxInFlightBytes = 2, 1<<20, c.inFlight
			})
			srv, reading, _ := serveSignalling(t, h)
			for range 2 {
				slowReview(t, srv, 1<<20)
			}
			<-reading
			<-reading // both slow bodies are being read
			body := reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "a", configMap("a", "u1", 3, "x"))
			if code, out := postTo(t, srv, body); code != http.StatusOK {
				t.Fatalf("a real review beside 2 slow ones: %d %s, want 200", code, out)
			}
			if got := testutil.ToFloat64(q.o.Metrics.refused.WithLabelValues("busy")); got != 0 {
				t.Errorf("refused busy: %v, want 0", got)
			}
			if o := <-q.ch; o.Version.UID != "u1" {
				t.Errorf("observed %+v, want u1's", o.Version)
			}
		})
	}
}
