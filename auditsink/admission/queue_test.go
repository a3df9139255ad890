package admission

// The queue and the store together, on a real PostgreSQL: a review
// answered by the handler, written by the queue's writer, confirmed by the
// audit event that carries the handler's annotation.

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/store/pgtest"
)

func TestObservationConfirmedByItsAuditEvent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := NewQueue(QueueOptions{Store: st, Metrics: NewMetrics(nil), TTL: time.Hour})
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	h := newTestHandler(t, q, nil)

	rv := answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "app", configMap("app", "u1", 7, "before"))))
	<-q.written
	if got := testutil.ToFloat64(q.o.Metrics.stored); got != 1 {
		t.Fatalf("stored %v, want 1", got)
	}
	// The apiserver writes the answer's annotations into the request's
	// audit event, prefixed with the webhook's name.
	ann := map[string]string{}
	for k, v := range rv.Response.AuditAnnotations {
		ann[model.ObservingWebhookName+"/"+k] = v
	}
	at := time.Now().UTC()
	ev := &auditv1.Event{Level: auditv1.LevelMetadata, AuditID: "a1", Stage: auditv1.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/prod/configmaps/app", Verb: "delete", User: authnv1.UserInfo{Username: "bob"},
		ObjectRef:      &auditv1.ObjectReference{Resource: "configmaps", Namespace: "prod", Name: "app", APIVersion: "v1"},
		ResponseStatus: &metav1.Status{Code: 200}, Annotations: ann,
		RequestReceivedTimestamp: metav1.NewMicroTime(at), StageTimestamp: metav1.NewMicroTime(at)}
	c, err := model.Convert("default", ev, model.Selection{Rules: []string{"r"}}, digester)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EnsurePartitionsAround(ctx, at); err != nil {
		t.Fatal(err)
	}
	res, err := st.WriteBatch(ctx, &model.Batch{Events: []model.Event{c.Event}, Versions: c.Versions})
	if err != nil || res.Confirmed != 1 {
		t.Fatalf("event stored: %+v, %v; want the observation confirmed", res, err)
	}
	ds, err := st.Deletions(ctx, store.DeletionQuery{Cluster: "default", Limit: 10})
	if err != nil || len(ds) != 1 || ds[0].UID != "u1" || ds[0].StateKey == nil || ds[0].Username != "bob" {
		t.Fatalf("deletions: %+v, %v; want bob's of u1 with its state", ds, err)
	}
}

// The maintenance pass expires what no audit event named within the TTL
// (a forged review), and counts it.
func TestMaintenanceExpiresUnconfirmed(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := NewQueue(QueueOptions{Store: st, Metrics: NewMetrics(nil), TTL: time.Minute})
	old := time.Now().Add(-2 * time.Minute)
	h := newTestHandler(t, q, func(o *HandlerOptions) { o.Now = func() time.Time { return old } })
	answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "forged", "DELETE", "configmaps", "app", configMap("app", "u1", 7, "forged"))))
	q.write(ctx, []model.Observation{<-q.ch})
	if got := testutil.ToFloat64(q.o.Metrics.stored); got != 1 {
		t.Fatalf("stored %v, want 1", got)
	}
	q.maintain(ctx)
	if got := testutil.ToFloat64(q.o.Metrics.expired); got != 1 {
		t.Errorf("expired %v, want 1", got)
	}
}

// A NUL character anywhere in a forged review (the request's names, the
// object's metadata) is stored as U+FFFD, as in an audit event: it costs
// neither its own observation nor the others written with it.
func TestNULInReviewCostsNoOtherObservation(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := NewQueue(QueueOptions{Store: st, Metrics: NewMetrics(nil), TTL: time.Hour})
	h := newTestHandler(t, q, nil)
	answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r1", "DELETE", "configmaps", "app", configMap("app", "u1", 7, "real"))))
	nul := strings.ReplaceAll(reviewBody("admission.k8s.io/v1", "r2", "DELETE", "configmapsNUL", "appNUL",
		configMap("appNUL", "u2NUL", 7, "forged")), "NUL", `\u0000`)
	nul = strings.Replace(nul, `"kind":"ConfigMap","metadata"`, `"kind":"Config\u0000Map","metadata"`, 1)
	nul = strings.Replace(nul, `"namespace":"prod","operation"`, `"namespace":"pr\u0000od","subResource":"s\u0000","operation"`, 1)
	answer(t, post(h, "application/json", nul))
	q.write(ctx, []model.Observation{<-q.ch, <-q.ch})
	if got, lost := testutil.ToFloat64(q.o.Metrics.stored), testutil.ToFloat64(q.o.Metrics.dropped.WithLabelValues("store_error")); got != 2 || lost != 0 {
		t.Fatalf("stored %v, dropped for a store error %v; want both stored", got, lost)
	}
}

// A row PostgreSQL refuses as invalid data that the sanitiser did not
// catch costs only itself: the writer stores the rest of its batch one
// observation at a time, and counts it.
func TestInvalidObservationCostsOnlyItself(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := NewQueue(QueueOptions{Store: st, Metrics: NewMetrics(nil), TTL: time.Hour})
	h := newTestHandler(t, q, nil)
	for _, uid := range []string{"u1", "u2", "u3"} {
		answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r-"+uid, "DELETE", "configmaps", "app", configMap("app", uid, 7, "v"))))
	}
	batch := []model.Observation{<-q.ch, <-q.ch, <-q.ch}
	batch[1].Source = "poison\x00" // past the sanitiser: the database refuses it
	q.write(ctx, batch)
	m := q.o.Metrics
	if got, rejected, lost := testutil.ToFloat64(m.stored), testutil.ToFloat64(m.dropped.WithLabelValues("rejected_by_database")),
		testutil.ToFloat64(m.dropped.WithLabelValues("store_error")); got != 2 || rejected != 1 || lost != 0 {
		t.Fatalf("stored %v, rejected %v, dropped for a store error %v; want 2, 1, 0", got, rejected, lost)
	}
}

// Without a TTL, an observation waits longer than a managed cluster's log
// service takes to deliver its audit event (minutes, plus buffering).
func TestQueueDefaultTTLOutlastsDeliveryLag(t *testing.T) {
	if ttl := NewQueue(QueueOptions{Metrics: NewMetrics(nil)}).o.TTL; ttl != 30*time.Minute {
		t.Errorf("default TTL %v, want 30m", ttl)
	}
}

// countingStore is the record, counting the maintenance passes' calls.
type countingStore struct {
	*store.Store
	confirmed, expired chan struct{}
	expires            atomic.Int64
}

func (c *countingStore) ConfirmObservations(ctx context.Context) (int, error) {
	n, err := c.Store.ConfirmObservations(ctx)
	c.confirmed <- struct{}{}
	return n, err
}

func (c *countingStore) ExpireObservations(ctx context.Context, cutoff time.Time) (int64, error) {
	defer func() { c.expired <- struct{}{} }()
	c.expires.Add(1)
	return c.Store.ExpireObservations(ctx, cutoff)
}

// With the default TTL (30 min), an event and its observation stored at
// the same moment by two transactions are confirmed by a pass every
// ConfirmEvery (30 s), not only by the expiry pass every TTL/5 (6 min).
func TestConfirmPassOutrunsExpiry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingStore{Store: st, confirmed: make(chan struct{}, 1), expired: make(chan struct{}, 1)}
	q := NewQueue(QueueOptions{Store: cs, Metrics: NewMetrics(nil)})
	made := make(chan time.Duration, 4)
	tickers := map[time.Duration]chan time.Time{}
	q.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
		c := make(chan time.Time)
		tickers[d] = c // before Run's loop: read after the first write
		made <- d
		return c, func() {}
	}
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// Once Run has written an observation, it is done with what it did
	// before (it made its tickers first).
	h := newTestHandler(t, q, nil)
	sync := func(uid string) {
		answer(t, post(h, "application/json", reviewBody("admission.k8s.io/v1", "r-"+uid, "DELETE", "configmaps", "app", configMap("app", uid, 7, "v"))))
		<-q.written
	}
	sync("u1")
	var ds []time.Duration
	for len(made) > 0 {
		ds = append(ds, <-made)
	}
	c, ok := tickers[ConfirmEvery]
	if !ok {
		t.Fatalf("tickers every %v; want one every %v", ds, ConfirmEvery)
	}
	for range 3 {
		c <- time.Now()
		<-cs.confirmed
	}
	sync("u2")
	if n := cs.expires.Load(); n != 0 {
		t.Errorf("the confirmation pass expired %d times, want 0", n)
	}
	e, ok := tickers[DefaultTTL/5]
	if !ok {
		t.Fatalf("tickers every %v; want one every %v", ds, DefaultTTL/5)
	}
	e <- time.Now()
	<-cs.confirmed
	<-cs.expired
	if n := cs.expires.Load(); n != 1 {
		t.Errorf("the expiry pass expired %d times, want 1", n)
	}
}
