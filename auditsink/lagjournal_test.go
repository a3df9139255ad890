package auditsink_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/journal"
	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// TestJournaledBatchIsNoProgress: a batch the journal took because the
// database could not (its progress table still answering: the upsert is
// small) is not in the record yet, and source_progress must not say it
// is, or kubectl record shows no lag note while a deletion is missing.
// Once the drain stores it, the progress advances.
func TestJournaledBatchIsNoProgress(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	down := &downWriter{inner: e.st}
	down.down.Store(true)
	lag := auditsink.NewSourceLag(nil)
	lag.Persist(e.st, nil)
	drained := make(chan struct{}, 16)
	j, err := journal.Open(t.TempDir(), down, journal.Options{RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
		Drained: func(ctx context.Context, b *model.Batch, stored time.Time) {
			lag.ObserveDrained(ctx, b, stored)
			drained <- struct{}{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: testRules(t)}, j, nil, nil)
	srv := e.serverOf(auditsink.HandlerOptions{Pipeline: pipe, Lag: lag})

	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	body := EventList(Event(Verb("delete"), Namespace("prod"), Name("gone"), At(at), Code(200),
		Response(Status("", "configmaps", "gone", "uid-gone"))))
	if code, msg := post(t, srv, token, "application/json", body); code != http.StatusOK {
		t.Fatalf("post: %d %s; want 200 (journaled)", code, msg)
	}
	lag.Wait()
	if n := j.Backlog(); n != 1 {
		t.Fatalf("journal backlog %d; want the batch journaled", n)
	}
	if got := e.progressOf(auditsink.WebhookSource); !got.IsZero() {
		t.Errorf("webhook's progress with its batch only journaled: %v; want none", got)
	}

	down.down.Store(false)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = j.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-ran; _ = j.Close() })
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatalf("the journal did not drain (backlog %d)", j.Backlog())
	}
	lag.Wait()
	if got := e.progressOf(auditsink.WebhookSource); !got.Equal(at) {
		t.Errorf("webhook's progress once drained: %v; want %v", got, at)
	}
}

// downWriter fails every write, as a database away does, while down.
type downWriter struct {
	inner model.Writer
	down  atomic.Bool
}

func (d *downWriter) WriteBatch(ctx context.Context, b *model.Batch) (model.WriteResult, error) {
	if d.down.Load() {
		return model.WriteResult{}, errors.New("database away")
	}
	return d.inner.WriteBatch(ctx, b)
}
