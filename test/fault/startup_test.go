package fault

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestStartDuringDatabaseOutage starts a sink with a journal while
// PostgreSQL is down (after a crash, say): it becomes ready, acknowledges
// from the journal, opens the record when the database answers and drains
// the journal into it.
func TestStartDuringDatabaseOutage(t *testing.T) {
	c := newCluster(t)
	dsn := c.dsn
	c.stopPG()
	j := c.newSink("journaled", filepath.Join(c.dir, "journal"))
	j.start(dsn) // fails the test unless /readyz answers 200
	b := newBatch("cold-start", 50)
	if code, _, err := j.post(b.body); code != http.StatusOK {
		t.Fatalf("batch during the outage: %d (%v), want 200 from the journal", code, err)
	}
	if n := j.metric("options_record_journal_batches"); n < 1 {
		t.Fatalf("journal holds %v batches, want the acknowledged one", n)
	}
	c.startPG()
	d := j.waitDrained(time.Minute)
	t.Logf("drained %s after the database came back", d)
	after := newBatch("cold-start-after", 10)
	if code, _, err := j.post(after.body); code != http.StatusOK {
		t.Fatalf("batch after the outage: %d (%v)", code, err)
	}
	c.checkStoredOnce(append(b.ids, after.ids...))
}
