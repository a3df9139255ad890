package auditsink_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	. "github.com/options-record/options-record/test/gen"
)

// progressOf is the newest event time recorded for source of cluster
// "default" (zero: none).
func (e *env) progressOf(source string) time.Time {
	e.t.Helper()
	ps, err := e.st.Progress(context.Background(), "default")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range ps {
		if p.Source == source {
			return p.NewestEventAt.UTC()
		}
	}
	return time.Time{}
}

// TestLagPersistsAtMostEvery30s: the first delivery of a source writes its
// progress, the next ones within ProgressEvery write nothing, and the
// first after it writes the newest event seen since, even when its own
// events are older.
func TestLagPersistsAtMostEvery30s(t *testing.T) {
	e := newEnv(t)
	lag := auditsink.NewSourceLag(nil)
	clock := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	auditsink.SetLagClock(lag, func() time.Time { return clock })
	lag.Persist(e.st, nil)
	ev := func(at time.Time) []auditv1.Event { return []auditv1.Event{*Event(At(at))} }
	t1, t2, t0 := clock.Add(-5*time.Minute), clock.Add(-4*time.Minute), clock.Add(-10*time.Minute)
	ctx := context.Background()

	lag.Observe(ctx, "firehose", "default", ev(t1), clock)
	lag.Wait()
	if got := e.progressOf("firehose"); !got.Equal(t1) {
		t.Fatalf("after the first delivery: newest %v; want %v", got, t1)
	}
	clock = clock.Add(auditsink.ProgressEvery - time.Second)
	lag.Observe(ctx, "firehose", "default", ev(t2), clock)
	lag.Wait()
	if got := e.progressOf("firehose"); !got.Equal(t1) {
		t.Fatalf("a delivery within %s of the last write: newest %v; want still %v (no write)", auditsink.ProgressEvery, got, t1)
	}
	lag.Observe(ctx, "pubsub", "default", ev(t0), clock)
	lag.Wait()
	if got := e.progressOf("pubsub"); !got.Equal(t0) {
		t.Errorf("another source's first delivery: newest %v; want %v", got, t0)
	}
	clock = clock.Add(time.Second)
	lag.Observe(ctx, "firehose", "default", ev(t0), clock)
	lag.Wait()
	if got := e.progressOf("firehose"); !got.Equal(t2) {
		t.Errorf("a delivery %s after the last write: newest %v; want %v (the newest seen)", auditsink.ProgressEvery, got, t2)
	}
}

// TestWebhookRecordsItsProgress: a batch the webhook stored is the
// progress of source "webhook".
func TestWebhookRecordsItsProgress(t *testing.T) {
	e := newEnv(t)
	lag := auditsink.NewSourceLag(nil)
	lag.Persist(e.st, nil)
	srv := e.serverOf(auditsink.HandlerOptions{Pipeline: e.pipe, Lag: lag})
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	body := EventList(Event(Name("lag"), At(at), Response(ConfigMap("default", "lag", "uid-lag", 10, nil))))
	if code, msg := post(t, srv, token, "application/json", body); code != http.StatusOK {
		t.Fatalf("post: %d %s", code, msg)
	}
	lag.Wait()
	if got := e.progressOf(auditsink.WebhookSource); !got.Equal(at) {
		t.Errorf("webhook's newest event: %v; want %v", got, at)
	}
}

// TestLagNeverAheadOfDelivery: one event stamped far in the future (a
// skewed clock, or anyone who may deliver) counts as stored when it was:
// it neither turns the age metric negative nor keeps the source looking
// current for ever.
func TestLagNeverAheadOfDelivery(t *testing.T) {
	e := newEnv(t)
	lag := auditsink.NewSourceLag(nil)
	clock := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	auditsink.SetLagClock(lag, func() time.Time { return clock })
	lag.Persist(e.st, nil)
	future := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	lag.Observe(context.Background(), "firehose", "default", []auditv1.Event{*Event(At(future))}, clock)
	lag.Wait()
	if got, _ := lag.Newest("firehose", "default"); !got.Equal(clock) {
		t.Errorf("newest in memory: %v; want the delivery time %v", got, clock)
	}
	if age, _ := lag.NewestAge("firehose", "default"); age < 0 {
		t.Errorf("newest event's age: %v; want >= 0", age)
	}
	if got := e.progressOf("firehose"); !got.Equal(clock) {
		t.Errorf("newest in source_progress: %v; want the delivery time %v", got, clock)
	}
}
