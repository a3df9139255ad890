package auditsink_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// TestStreamedChunkFailureIsNotAcknowledged: a batch longer than a chunk
// whose later chunk the store cannot commit is answered 503 with
// Retry-After, never 200 (without a journal nothing else holds it); the
// apiserver's retry stores the whole batch, the chunks stored before
// found already stored.
func TestStreamedChunkFailureIsNotAcknowledged(t *testing.T) {
	e := newHostile(t, hostileOptions{chunk: 256 << 10, maxEvent: 1 << 20})
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `
CREATE FUNCTION refuse_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.name = 'fail-me' THEN RAISE EXCEPTION 'the disk is full (test)'; END IF; RETURN NEW; END $$;
CREATE TRIGGER refuse_events BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_events();`); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 100<<10)
	var evs []*auditv1.Event
	for i := range 20 {
		name := fmt.Sprintf("s-%02d", i)
		if i == 15 {
			name = "fail-me" // in a later chunk than the first
		}
		cm := ConfigMap("prod", name, "uid-"+name, int64(100+i), map[string]string{"v": value})
		evs = append(evs, Event(Namespace("prod"), Name(name), Request(cm), Response(cm)))
	}
	body := EventList(evs...)
	code, hdr, msg := e.request(body)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Fatalf("a streamed batch whose chunk was refused: %d %s (Retry-After %q); want 503 with Retry-After", code, msg, hdr.Get("Retry-After"))
	}
	if n := e.count(`SELECT count(*) FROM events WHERE name = 'fail-me'`); n != 0 {
		t.Fatalf("the refused event was stored")
	}
	if _, err := e.pool.Exec(ctx, `DROP TRIGGER refuse_events ON events`); err != nil {
		t.Fatal(err)
	}
	if code, _, msg := e.request(body); code != http.StatusOK {
		t.Fatalf("the retry: %d %s", code, msg)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE namespace = 'prod'`); n != 20 {
		t.Errorf("after the retry: %d events, want 20", n)
	}
}

// TestInFlightBytesAreCapped: while a streamed batch holds the in-flight
// bytes (a chunk and the largest event), another batch is answered 429
// with Retry-After, read no further; once the first is stored, it is
// taken.
func TestInFlightBytesAreCapped(t *testing.T) {
	var blk *blocking
	h := newHostile(t, hostileOptions{chunk: 256 << 10, maxEvent: 256 << 10, maxBytes: 512 << 10,
		writer: func(w model.Writer) model.Writer {
			blk = &blocking{Writer: w, entered: make(chan struct{}, 100), release: make(chan struct{})}
			return blk
		}})
	var evs []*auditv1.Event
	for i := range 8 {
		name := fmt.Sprintf("held-%d", i)
		cm := ConfigMap("default", name, "uid-"+name, int64(10+i), map[string]string{"v": strings.Repeat("x", 100<<10)})
		evs = append(evs, now(Name(name), Response(cm)))
	}
	long := EventList(evs...)
	var wg sync.WaitGroup
	wg.Go(func() {
		if code, _, msg := h.request(long); code != http.StatusOK {
			t.Errorf("the streamed batch: %d %s", code, msg)
		}
	})
	<-blk.entered // its first chunk is being stored: it holds the bytes
	small := EventList(now(Name("small"), Response(ConfigMap("default", "small", "uid-small", 1, nil))))
	type answer struct {
		code int
		hdr  http.Header
		msg  string
	}
	answered := make(chan answer, 1)
	wg.Go(func() {
		code, hdr, msg := h.request(small)
		answered <- answer{code, hdr, msg}
	})
	select {
	case a := <-answered:
		if a.code != http.StatusTooManyRequests || a.hdr.Get("Retry-After") == "" {
			t.Errorf("a batch beyond the in-flight bytes: %d %s (Retry-After %q), want 429 with Retry-After", a.code, a.msg, a.hdr.Get("Retry-After"))
		}
		if got := h.outcome("throttled"); got != 1 {
			t.Errorf("throttled batches: %v, want 1", got)
		}
	case <-blk.entered:
		t.Errorf("a batch beyond the in-flight bytes was taken, not answered 429")
	}
	close(blk.release)
	wg.Wait()
	if code, _, msg := h.request(small); code != http.StatusOK {
		t.Errorf("the retry: %d %s", code, msg)
	}
	if n := h.count(`SELECT count(*) FROM events WHERE name LIKE 'held-%' OR name = 'small'`); n != 9 {
		t.Errorf("%d events stored, want 9", n)
	}
}
