package fault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/options-record/options-record/store/pgtest"
)

// TestKill9 kills the sink with SIGKILL in the middle of a load, twice:
// while PostgreSQL is up (batches acknowledged after commit) and while it is
// down (batches acknowledged from the journal). After a restart every
// acknowledged event is in PostgreSQL, once.
func TestKill9(t *testing.T) {
	c := newCluster(t)
	s := c.newSink("sink", filepath.Join(c.dir, "journal"))
	s.start(c.dsn)

	t.Run("database up", func(t *testing.T) {
		stop := make(chan struct{})
		r, wait := runLoad(s, loadSpec{workers: 4, size: 100, prefix: "up"}, stop)
		r.waitAcked(t, 8, "acknowledged before the kill")
		s.kill()
		close(stop)
		wait()
		t.Logf("before SIGKILL: %s", r)
		if len(r.acked) == 0 {
			t.Fatal("nothing acknowledged before the kill")
		}
		s.start(c.dsn)
		s.waitDrained(time.Minute)
		c.checkStoredOnce(r.ackedIDs())
	})

	t.Run("database down", func(t *testing.T) {
		c.stopPG()
		stop := make(chan struct{})
		r, wait := runLoad(s, loadSpec{workers: 4, size: 100, prefix: "down"}, stop)
		r.waitAcked(t, 8, "acknowledged from the journal before the kill")
		journaled := s.metric("options_record_journal_batches")
		s.kill()
		close(stop)
		wait()
		t.Logf("before SIGKILL: %s; %v batches in the journal", r, journaled)
		if len(r.acked) == 0 || journaled == 0 {
			t.Fatal("nothing acknowledged from the journal before the kill")
		}
		c.startPG()
		s.start(c.dsn)
		d := s.waitDrained(time.Minute)
		n, busy := s.metric("options_record_journal_drained_batches_total"), s.metric("options_record_journal_drain_write_seconds_sum")
		t.Logf("drained %v batches of 100 events within %s of the restart; %.0f events/s in drain transactions",
			n, d.Round(time.Millisecond), n*100/busy)
		c.checkStoredOnce(r.ackedIDs())
	})
}

// TestDatabaseOutage stops PostgreSQL for longer than the apiserver's retry
// window (simulated: 5 attempts over about 2 s, where the real one is 5
// over about 90 s). The sink with a journal keeps acknowledging and loses
// nothing once the database is back; the sink without one answers 503 and
// the simulated apiserver drops batches, as the real one would.
func TestDatabaseOutage(t *testing.T) {
	c := newCluster(t)
	j := c.newSink("journaled", filepath.Join(c.dir, "journal"))
	j.start(c.dsn)
	plain := c.newSink("plain", "")
	plain.start(c.dsn)

	stop := make(chan struct{})
	// Three apiservers at their default throttle (10 batches/s).
	spec := loadSpec{workers: 3, size: 100, attempts: 5, backoff: 200 * time.Millisecond, interval: 100 * time.Millisecond}
	spec.prefix = "journaled"
	rj, waitJ := runLoad(j, spec, stop)
	spec.prefix, spec.workers = "plain", 1
	rp, waitP := runLoad(plain, spec, stop)

	rj.waitAcked(t, 3, "acknowledged with the database up")
	c.stopPG()
	outage := time.Now()
	// While the database is down the sink with a journal keeps
	// acknowledging (six more batches: at most one a worker was sent
	// before the outage), and the one without runs the simulated
	// apiserver out of retries.
	rj.waitAcked(t, rj.ackedCount()+2*3, "acknowledged from the journal while the database was down")
	rp.waitDropped(t, "dropped by the simulated apiserver (the sink without a journal, database down)")
	if code, _, err := plain.post(newBatch("probe", 1).body); code != http.StatusServiceUnavailable {
		t.Errorf("sink without a journal, database down: %d (%v), want 503", code, err)
	}
	if code, body := j.get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz of the sink with a journal during the outage: %d %s, want 200", code, body)
	}
	c.startPG()
	t.Logf("database down for %s", time.Since(outage).Round(time.Millisecond))
	d := j.waitDrained(time.Minute)
	close(stop)
	waitJ()
	waitP()
	t.Logf("with a journal: %s; drained %s after the database came back", rj, d)
	t.Logf("without: %s", rp)

	if len(rj.dropped) > 0 {
		t.Errorf("with a journal, %d batches got no 2xx within the retry window", len(rj.dropped))
	}
	if n := j.metric("options_record_journal_appended_batches_total"); n == 0 {
		t.Error("nothing was journaled during the outage")
	}
	j.waitDrained(time.Minute)
	c.checkStoredOnce(rj.ackedIDs())
	c.checkStoredOnce(rp.ackedIDs())
}

// TestSlowDatabase holds an exclusive lock on the events table (another
// session's LOCK TABLE), so every write waits. The sink with a journal
// acknowledges within its write deadline (5 s) from the journal; the sink
// without answers 429 to what exceeds --webhook-max-in-flight and the rest
// once the lock goes: no request runs into the apiserver's 30 s timeout.
func TestSlowDatabase(t *testing.T) {
	c := newCluster(t)
	j := c.newSink("journaled", filepath.Join(c.dir, "journal"))
	j.start(c.dsn)
	plain := c.newSink("plain", "", "--webhook-max-in-flight", "2")
	plain.start(c.dsn)

	ctx := context.Background()
	conn := c.conn(ctx)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		sink     string
		code     int
		took     time.Duration
		released bool // the table was unlocked when the answer came
		b        batch
	}
	var (
		mu       sync.Mutex
		answers  []answer
		released bool
		wg       sync.WaitGroup
		came     = make(chan answer, 11)
	)
	for _, s := range []*sink{j, j, j, j, j, j, plain, plain, plain, plain, plain} {
		wg.Go(func() {
			b := newBatch(s.name, 50)
			code, took, _ := s.post(b.body)
			mu.Lock()
			a := answer{s.name, code, took, released, b}
			answers = append(answers, a)
			mu.Unlock()
			came <- a
		})
	}
	// The table stays locked until every journaled batch is answered and
	// the plain sink has refused the three over its two slots: an answer
	// while it is locked is one that did not wait for the database. The
	// minute only ends a test whose sink never answers.
	journaled, refused := 0, 0
	guard := time.After(time.Minute)
wait:
	for journaled < 6 || refused < 3 {
		select {
		case a := <-came:
			switch {
			case a.sink == "journaled":
				journaled++
			case a.code == http.StatusTooManyRequests:
				refused++
			}
		case <-guard:
			t.Errorf("with the table locked for a minute: %d of 6 journaled batches answered, %d of 3 refused by the plain sink", journaled, refused)
			break wait
		}
	}
	mu.Lock()
	released = true
	mu.Unlock()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	var acked []string
	throttled := 0
	for _, a := range answers {
		t.Logf("%-9s %d after %s", a.sink, a.code, a.took.Round(time.Millisecond))
		switch {
		case a.code == 0:
			t.Errorf("%s: no answer within 30 s", a.sink)
		case a.sink == "journaled" && a.code != http.StatusOK:
			t.Errorf("journaled: %d, want 200 from the journal", a.code)
		case a.sink == "journaled" && a.released:
			// No write reaches the table while it is locked: an answer
			// after the release waited for the database, not the deadline.
			t.Errorf("journaled: answered after %s, once the table was unlocked; want it at the write deadline, from the journal", a.took)
		case a.code == http.StatusTooManyRequests:
			throttled++
		case a.code != http.StatusOK:
			t.Errorf("%s: %d", a.sink, a.code)
		}
		if a.code == http.StatusOK {
			acked = append(acked, a.b.ids...)
		}
	}
	if throttled == 0 {
		t.Error("the sink without a journal throttled nothing beyond --webhook-max-in-flight")
	}
	j.waitDrained(time.Minute)
	c.checkStoredOnce(acked)
}

// TestGracefulShutdown stops the sink with SIGTERM while batches wait for a
// locked table: they end journaled and acknowledged, the sink exits cleanly,
// and the next start stores them.
func TestGracefulShutdown(t *testing.T) {
	c := newCluster(t)
	s := c.newSink("sink", filepath.Join(c.dir, "journal"))
	s.start(c.dsn)
	ctx := context.Background()
	conn := c.conn(ctx)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			b := newBatch("term", 50)
			code, took, err := s.post(b.body)
			if code != http.StatusOK {
				t.Errorf("batch in flight at SIGTERM: %d after %s (%v), want 200", code, took, err)
				return
			}
			mu.Lock()
			acked = append(acked, b.ids...)
			mu.Unlock()
		})
	}
	// SIGTERM once the four are in the sink, held by the lock.
	deadline := time.Now().Add(time.Minute)
	for s.metric("options_record_batches_in_flight") < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%v of 4 batches in flight after a minute", s.metric("options_record_batches_in_flight"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.terminate(45 * time.Second); err != nil {
		t.Errorf("sink exit after SIGTERM: %v", err)
	}
	wg.Wait()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	s.start(c.dsn)
	s.waitDrained(time.Minute)
	c.checkStoredOnce(acked)
}

// TestJournalDiskFull puts the journal on a 256 KiB tmpfs and stops
// PostgreSQL: once the journal's disk is full the sink answers 503 (the
// apiserver retries), stays up and becomes unready; when the database
// returns, what was acknowledged is stored and the sink takes batches again.
// Mounting needs root; the journal's size limit (Options.MaxBytes) behaves
// the same way and is tested in package journal.
func TestJournalDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		pgtest.Unavailable(t, "root, to mount a size-limited tmpfs for the journal", "sudo make test-fault",
			errors.New("not root (the journal's own size limit is tested in auditsink/journal)"))
	}
	c := newCluster(t)
	mnt := filepath.Join(c.dir, "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		// Under make this fails rather than skips: make test says it ran.
		pgtest.Unavailable(t, "a size-limited tmpfs for the journal (mount as root)", "sudo make test-fault",
			fmt.Errorf("%v: %s", err, out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	s := c.newSink("sink", mnt)
	s.start(c.dsn)
	c.stopPG()

	var acked []string
	full := false
	for range 100 {
		b := newBatch("full", 20) // about 40 KB journaled
		code, _, err := s.post(b.body)
		if code == http.StatusOK {
			acked = append(acked, b.ids...)
			continue
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("post: %d (%v), want 200 or 503", code, err)
		}
		full = true
		break
	}
	if !full || len(acked) == 0 {
		t.Fatalf("full = %v after %d acknowledged events: the 256 KiB journal should fill up", full, len(acked))
	}
	if code, _ := s.get("/healthz"); code != http.StatusOK || !s.alive() {
		t.Fatalf("sink not healthy with its journal full: %d", code)
	}
	if code, body := s.get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the journal full: %d %s, want 503", code, body)
	}
	if n := s.metric(`options_record_journal_errors_total{op="full"}`); n == 0 {
		t.Error("journal-full errors not counted")
	}
	t.Logf("%d events acknowledged before the journal filled", len(acked))

	c.startPG()
	s.waitDrained(time.Minute)
	b := newBatch("after", 20)
	if code, _, err := s.post(b.body); code != http.StatusOK {
		t.Errorf("after the database returned: %d (%v)", code, err)
	}
	if code, body := s.get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after draining: %d %s", code, body)
	}
	c.checkStoredOnce(append(acked, b.ids...))
}
