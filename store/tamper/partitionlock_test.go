package tamper

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestPartitionMadeWhileVerifyReads: a day's partition of events is made
// while a full verify's transaction reads events (its cursor holds ACCESS
// SHARE on events to its end, and the chart's scheduled verify may run
// for an hour): making it never waits for the verify, so neither do the
// batches behind it. The partition made has every index and constraint of
// events. (The context's deadline only detects the wait: made with
// CREATE TABLE ... PARTITION OF, which takes ACCESS EXCLUSIVE, it waited
// until the verify ended, which itself waited here.)
func TestPartitionMadeWhileVerifyReads(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(e.batch("default", now.Add(-time.Minute), 10))
	e.integrate()
	cfg, err := pgxpool.ParseConfig(e.url)
	if err != nil {
		t.Fatal(err)
	}
	day := now.AddDate(0, 0, 20)
	var ensureErr error
	cfg.ConnConfig.Tracer = &hook{match: "FROM verify_events", f: func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ensureErr = e.st.EnsurePartitionsFor(ctx, []time.Time{day})
	}}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := Verify(context.Background(), pool, VerifyOptions{Verifier: e.verifier}); err != nil {
		t.Fatal(err)
	}
	if ensureErr != nil {
		t.Fatalf("a day's partition made while a verify reads events: %v", ensureErr)
	}
	name := "events_p" + day.UTC().Format("20060102")
	if n := e.count(`SELECT count(*) FROM pg_index WHERE indrelid = $1::regclass`, name); n == 0 ||
		n != e.count(`SELECT count(*) FROM pg_index WHERE indrelid = 'events'::regclass`) {
		t.Errorf("%s has %d indexes, events %d", name, n, e.count(`SELECT count(*) FROM pg_index WHERE indrelid = 'events'::regclass`))
	}
	if n := e.count(`SELECT count(*) FROM pg_attribute a JOIN pg_attribute p ON p.attrelid = 'events'::regclass AND p.attname = a.attname
		AND p.atttypid = a.atttypid AND p.attnotnull = a.attnotnull AND p.attcompression = a.attcompression AND p.attstorage = a.attstorage
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped`, name); n != e.count(`SELECT count(*) FROM pg_attribute WHERE attrelid = 'events'::regclass AND attnum > 0 AND NOT attisdropped`) {
		t.Errorf("%s: %d columns as events has them", name, n)
	}
	e.write(e.batch("default", day, 2))
}
