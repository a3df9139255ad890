package auditsink_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/journal"
	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// TestBodyOutlivedByTheWriteIsNotReused: the handler reuses a request's
// body for the next request once the batch is answered. The journal can
// answer before its store write ends: at its deadline it journals the
// batch and leaves the write to finish or fail, and until then that write
// reads the events, which point into the body. The body must then not be
// reused.
//
// The store is PostgreSQL behind a gate that holds the write past the
// journal's deadline and lets it go on after the answer, as a write stuck
// in the kernel would; recycled bodies are overwritten with X (text
// PostgreSQL takes). Were the body reused, the late write would store the
// event with X for its user and audit ID, and the journal's drain, finding
// the event stored, would keep it so.
func TestBodyOutlivedByTheWriteIsNotReused(t *testing.T) {
	auditsink.PoisonRecycledBodies(t)
	e := newEnv(t)
	ctx := context.Background()
	gate := &gatedWriter{inner: e.st, open: make(chan struct{}), firstDone: make(chan struct{})}
	j, err := journal.Open(t.TempDir(), gate, journal.Options{WriteDeadline: 300 * time.Millisecond,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = j.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-ran; _ = j.Close() })
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: testRules(t)}, j, nil, nil)
	srv := e.serverWith(pipe)

	// A delete answered by a Status: its rows hold no JSON for PostgreSQL
	// to refuse. Events of unrecorded namespaces make the body large enough
	// to be pooled.
	evs := []*auditv1.Event{Event(Verb("delete"), User("bob-the-deleter"), Namespace("prod"), Name("gone"),
		AuditID("audit-outlived"), Code(200), Response(Status("", "configmaps", "gone", "uid-gone")))}
	for i := range 60 {
		evs = append(evs, Event(Namespace("unrecorded"), Name("pad"), Response(ConfigMap("unrecorded", "pad", "uid-pad", int64(i),
			map[string]string{"v": strings.Repeat("p", 2000)}))))
	}
	body := EventList(evs...)
	if len(body) <= 64<<10 {
		t.Fatalf("body of %d bytes: too small to be pooled", len(body))
	}

	code, msg := post(t, srv, token, "application/json", body)
	if code != 200 {
		t.Fatalf("answer %d %s, want 200 (journaled)", code, msg)
	}
	// More requests, so that a reused body would be overwritten by them too.
	for range 3 {
		post(t, srv, token, "application/json", EventList(evs[1:]...))
	}
	close(gate.open)
	deadline := time.Now().Add(30 * time.Second)
	for j.Backlog() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := j.Backlog(); n > 0 {
		t.Fatalf("the journal still holds %d batches", n)
	}
	// The batch's one recorded event, as stored.
	var n int
	var user, auditID, ns, name string
	if err := e.pool.QueryRow(ctx, `SELECT count(*), coalesce(min(username), ''), coalesce(min(audit_id), ''),
	    coalesce(min(namespace), ''), coalesce(min(name), '') FROM events`).Scan(&n, &user, &auditID, &ns, &name); err != nil {
		t.Fatal(err)
	}
	if n != 1 || user != "bob-the-deleter" || auditID != "audit-outlived" || ns != "prod" || name != "gone" {
		t.Errorf("stored %d events: user %q, audit ID %q, object %s/%s; want 1 by bob-the-deleter, audit-outlived, prod/gone",
			n, user, auditID, ns, name)
	}
}

// TestBodyIsReusedOnceAnswered: with a writer that returns when it is
// done, the body goes back to the pool as the answer is sent; a writer that
// kept the batch would read the next request's bytes (here, X).
func TestBodyIsReusedOnceAnswered(t *testing.T) {
	auditsink.PoisonRecycledBodies(t)
	e := newEnv(t)
	keep := &keepingWriter{}
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: testRules(t)}, keep, nil, nil)
	srv := e.serverWith(pipe)
	evs := []*auditv1.Event{Event(User("carol-recycled"), Namespace("prod"), Name("kept"), Response(ConfigMap("prod", "kept", "uid-kept", 3, nil)))}
	for i := range 60 {
		evs = append(evs, Event(Namespace("unrecorded"), Name("pad"), Response(ConfigMap("unrecorded", "pad", "uid-pad", int64(i),
			map[string]string{"v": strings.Repeat("p", 2000)}))))
	}
	if code, msg := post(t, srv, token, "application/json", EventList(evs...)); code != 200 {
		t.Fatalf("answer %d %s", code, msg)
	}
	if keep.b == nil || len(keep.b.Events) != 1 {
		t.Fatalf("the writer got %v", keep.b)
	}
	// Read after the answer, the user is what the pool wrote over it.
	if user := keep.b.Events[0].Username; user == "" || strings.Trim(user, "X") != "" {
		t.Errorf("the kept batch's user reads %q after the answer, want X: the body was not reused", user)
	}
}

// keepingWriter keeps the last batch, as no Writer may, to read it after
// the answer.
type keepingWriter struct{ b *model.Batch }

func (k *keepingWriter) WriteBatch(_ context.Context, b *model.Batch) (model.WriteResult, error) {
	k.b = b
	return model.WriteResult{Events: len(b.Events), Versions: len(b.Versions)}, nil
}

// gatedWriter holds the first write until open is closed, whatever its
// context says, then writes it through to the store; later writes (the
// journal's drain) wait for it.
type gatedWriter struct {
	inner     model.Writer
	open      chan struct{}
	firstDone chan struct{}
	once      sync.Once
}

func (g *gatedWriter) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		defer close(g.firstDone)
		<-g.open
		return g.inner.WriteBatch(context.Background(), b)
	}
	select {
	case <-g.firstDone:
	case <-ctx.Done():
		return model.WriteResult{}, ctx.Err()
	}
	return g.inner.WriteBatch(ctx, b)
}
