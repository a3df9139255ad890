package tamper

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var verifyLeaves = flag.Int("verify-leaves", 5000, "TestVerifyMemory: the leaves of the smaller log (the larger has 4 times as many)")

// peakLive runs f and returns the largest live heap a garbage collection
// found meanwhile (GOGC 5: a collection each time the heap grows by 5%).
// It measures what f holds, not what it allocates and drops.
func peakLive(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var mu sync.Mutex
	var peak uint64
	done := false
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak {
			peak = v
		}
	}
	// A finalizer runs after each collection that finds its object
	// unreachable; it sets up the next.
	type sentinel struct {
		p *int
		_ [64]byte
	}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
			mu.Lock()
			defer mu.Unlock()
			read()
			if !done {
				arm()
			}
		})
	}
	arm()
	runtime.GC() // the baseline: the live heap before f
	f()
	mu.Lock()
	defer mu.Unlock()
	read()
	done = true
	return peak
}

// TestVerifyMemory: a full verify's peak live heap does not grow with the
// log: a log of 4 times as many leaves (and rows) takes fewer than 100
// bytes more per extra leaf (the record's rows are compared with the log's
// leaves as two streams PostgreSQL sorts, not held in maps: those took
// about 0.7 KB per leaf). The segments are of one size: a check holds one
// at a time. Live heap, not allocations, and no clock.
func TestVerifyMemory(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000 // segments of 1,000 leaves: a check holds one
	now := time.Now().Add(-time.Hour)
	grow := func(leaves int) {
		for n := 0; n < leaves; n += 1000 {
			e.write(e.batch("default", now.Add(time.Duration(n)*time.Millisecond), 500)) // 1,000 leaves
		}
		e.integrate()
	}
	measure := func() (int64, uint64) {
		start := time.Now() // a measure, logged, not a check
		rep := e.verify(false)
		took := time.Since(start)
		peak := peakLive(func() { rep = e.verify(false) })
		if !rep.OK() {
			t.Fatalf("%s", problems(rep))
		}
		c := rep.Clusters[0]
		t.Logf("full verify of %d leaves: %d rows in %s, peak live heap %.1f MB", c.Size, c.Rows, took, float64(peak)/1e6)
		return c.Size, peak
	}
	grow(*verifyLeaves)
	n1, p1 := measure()
	grow(3 * *verifyLeaves)
	n2, p2 := measure()
	if n2 != 4*n1 {
		t.Fatalf("%d leaves, then %d: want 4 times as many", n1, n2)
	}
	perLeaf := (float64(p2) - float64(p1)) / float64(n2-n1)
	t.Logf("%.0f bytes of peak live heap per extra leaf", perLeaf)
	if perLeaf > 100 {
		t.Errorf("a full verify holds %.0f bytes more per extra leaf (peak live heap %d B at %d leaves, %d B at %d): want under 100, a bound independent of the rows",
			perLeaf, p1, n1, p2, n2)
	}
}

// TestVerifyProblemsStream: a full verify of a record with many problems
// (rows deleted, rows inserted around the ingest) holds no more per
// problem than a bound (it counts them, hands each to OnProblem as found
// and keeps none), and hands the first over while it still reads the
// rows: a check killed halfway has printed what it found. The order is
// observed on the database (the verifier's backend, in its snapshot,
// last ran a FETCH of the events, not yet of the versions), not timed.
func TestVerifyProblemsStream(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000
	now := time.Now().Add(-time.Hour)
	for n := 0; n < 20000; n += 1000 {
		e.write(e.batch("default", now.Add(time.Duration(n)*time.Millisecond), 500)) // 1,000 leaves
	}
	e.integrate()
	ctx := context.Background()
	measure := func() (int, uint64) {
		var first []string // the verifier's backend at the first problem
		found := 0
		o := VerifyOptions{Verifier: e.verifier, KeepProblems: -1, OnProblem: func(p Problem) {
			if found++; found > 1 {
				return
			}
			rows, err := e.st.Pool().Query(ctx, `SELECT state || ': ' || query FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`)
			if err == nil {
				first, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
			if err != nil {
				t.Error(err)
			}
		}}
		var rep Report
		var peak uint64
		for i := range 2 { // the smaller of two: less of what else the process does
			found = 0
			p := peakLive(func() {
				var err error
				if rep, err = Verify(ctx, e.st.Pool(), o); err != nil {
					t.Fatal(err)
				}
			})
			if i == 0 || p < peak {
				peak = p
			}
		}
		if rep.Failed != found || len(rep.Problems) != 0 || rep.Clusters[0].Problems != found || rep.OK() {
			t.Fatalf("%d problems handed over, the report counts %d (cluster %d) and keeps %d", found, rep.Failed, rep.Clusters[0].Problems, len(rep.Problems))
		}
		if len(first) != 1 || !strings.HasPrefix(first[0], "idle in transaction: FETCH 1000 FROM verify_events") {
			t.Errorf("at the first problem the verifier's backend was %q: want it reading the events, the problems handed over as found", first)
		}
		t.Logf("%d problems, peak live heap %.1f MB; at the first, the verifier was %q", found, float64(peak)/1e6, first)
		return found, peak
	}
	e.exec(`DELETE FROM events WHERE ctid IN (SELECT ctid FROM events ORDER BY event_key LIMIT 1000)`)
	n1, p1 := measure()
	e.exec(`DELETE FROM events WHERE ctid IN (SELECT ctid FROM events ORDER BY event_key LIMIT 5000)`)
	e.exec(`DELETE FROM object_versions`)
	e.exec(`INSERT INTO events SELECT cluster, event_key, stage_at + interval '1 microsecond', received_at, audit_id, stage, verb,
		request_uri, 'mallory', user_uid, user_groups, user_extra, impersonated_user, impersonated_groups, source_ips, user_agent,
		api_group, api_version, resource, subresource, namespace, name, object_uid, response_code, response_reason,
		response_message, request_object, annotations, rules, secret_digested, ingested_at FROM events`)
	n2, p2 := measure()
	if n2 < n1+10000 {
		t.Fatalf("%d problems, then %d: want many more", n1, n2)
	}
	perProblem := (float64(p2) - float64(p1)) / float64(n2-n1)
	t.Logf("%.0f bytes of peak live heap per extra problem", perProblem)
	if perProblem > 50 {
		t.Errorf("a full verify holds %.0f bytes more per extra problem (peak live heap %d B at %d problems, %d B at %d): want under 50",
			perProblem, p1, n1, p2, n2)
	}
}

// TestVerifyOversizedSegment: a segment planted with arrays far longer
// than its leaves (as the owner could; the ingest and API roles cannot
// write log_segments) is reported malformed, by its first leaf and what is
// wrong, without being decoded: the peak live heap of the check grows by
// less than 2 bytes per planted leaf (decoded, each took about 220).
func TestVerifyOversizedSegment(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000
	now := time.Now().Add(-time.Hour)
	for n := 0; n < 5000; n += 1000 {
		e.write(e.batch("default", now.Add(time.Duration(n)*time.Millisecond), 500)) // 1,000 leaves
	}
	e.integrate()
	var rep Report
	p1 := peakLive(func() { rep = e.verify(false) })
	if !rep.OK() {
		t.Fatalf("%s", problems(rep))
	}
	const times = 300 // the leaves of the segment at 2,000, 300 times over
	e.exec(`UPDATE log_segments SET
		kinds = (SELECT array_agg(k) FROM unnest(kinds) k, generate_series(1, $1)),
		uids = (SELECT array_agg(u) FROM unnest(uids) u, generate_series(1, $1)),
		keys = (SELECT array_agg(k) FROM unnest(keys) k, generate_series(1, $1)),
		ats = (SELECT array_agg(a) FROM unnest(ats) a, generate_series(1, $1)),
		digests = decode(repeat(encode(digests, 'hex'), $1), 'hex')
		WHERE first_index = 2000`, times)
	p2 := peakLive(func() { rep = e.verify(false) })
	planted := float64(1000 * (times - 1))
	perLeaf := (float64(p2) - float64(p1)) / planted
	t.Logf("peak live heap %.1f MB, then %.1f MB with %.0f leaves planted: %.1f bytes per planted leaf\n%s",
		float64(p1)/1e6, float64(p2)/1e6, planted, perLeaf, problems(rep))
	want := `cluster "default": log: malformed log: segment at 2000 (after 2000 leaves): its kinds have 300000 entries, want 1000`
	if len(rep.Problems) != 1 || !strings.HasPrefix(rep.Problems[0].String(), want) {
		t.Errorf("problems:\n%s\nwant one beginning %q", problems(rep), want)
	}
	if perLeaf > 2 {
		t.Errorf("the check holds %.1f bytes more per planted leaf (peak live heap %d B, then %d B): want the segment refused before it is decoded", perLeaf, p1, p2)
	}
}

// TestVerifyPendingMemory: a full verify's peak live heap grows by less
// than 30 bytes per pending row (stored, not yet integrated): they are
// read as a fourth cursor sorted as the rows are, not held in a map by id
// (about 150 bytes each).
func TestVerifyPendingMemory(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000
	now := time.Now().Add(-time.Hour)
	write := func(rows int) {
		for n := 0; n < rows; n += 1000 {
			e.write(e.batch("default", now.Add(time.Duration(e.seq)*time.Millisecond), 500)) // 1,000 rows
		}
	}
	write(5000)
	e.integrate()
	measure := func(pending int) uint64 {
		var rep Report
		var peak uint64
		for i := range 2 { // the smaller of two: less of what else the process does
			p := peakLive(func() { rep = e.verify(false) })
			if i == 0 || p < peak {
				peak = p
			}
		}
		if !rep.OK() || rep.Clusters[0].Pending != pending {
			t.Fatalf("%d rows pending, want %d\n%s", rep.Clusters[0].Pending, pending, problems(rep))
		}
		t.Logf("%d rows pending: peak live heap %.1f MB", pending, float64(peak)/1e6)
		return peak
	}
	write(1000)
	p1 := measure(1000)
	write(30000)
	p2 := measure(31000)
	perRow := (float64(p2) - float64(p1)) / 30000
	t.Logf("%.0f bytes of peak live heap per extra pending row", perRow)
	if perRow > 30 {
		t.Errorf("a full verify holds %.0f bytes more per extra pending row (peak live heap %d B, then %d B): want under 30", perRow, p1, p2)
	}
}

// TestVerifyEditedHashesMemory: a log whose stored hashes were all edited
// (each a problem) is checked in the memory of one with a few edited: the
// check keeps the rebuilt hashes a proof or the root can read (the right
// edge of the tree, those beside the trusted checkpoint's), not each that
// differs (about 80 bytes each).
func TestVerifyEditedHashesMemory(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000
	now := time.Now().Add(-time.Hour)
	write := func(leaves int) {
		for n := 0; n < leaves; n += 1000 {
			e.write(e.batch("default", now.Add(time.Duration(e.seq)*time.Millisecond), 500)) // 1,000 leaves
		}
		e.integrate()
	}
	write(10000) // the trusted checkpoint: 10,000 leaves
	latest := filepath.Join(e.dir, "cluster=default", "latest")
	trusted, err := os.ReadFile(latest)
	if err != nil {
		t.Fatal(err)
	}
	write(30000)
	if err := os.WriteFile(latest, trusted, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	measure := func() (int, uint64) {
		edited := 0
		o := VerifyOptions{Verifier: e.verifier, Trusted: e.bucket, KeepProblems: -1, OnProblem: func(p Problem) {
			if strings.HasPrefix(p.What, "stored hash ") {
				edited++
			}
		}}
		var rep Report
		var peak uint64
		for i := range 2 { // the smaller of two: less of what else the process does
			edited = 0
			p := peakLive(func() {
				var err error
				if rep, err = Verify(ctx, e.st.Pool(), o); err != nil {
					t.Fatal(err)
				}
			})
			if i == 0 || p < peak {
				peak = p
			}
		}
		if c := rep.Clusters[0]; c.TrustedSize != 10000 {
			t.Fatalf("the trusted checkpoint: %d leaves, want 10000", c.TrustedSize)
		}
		t.Logf("%d stored hashes edited, %d problems: peak live heap %.1f MB", edited, rep.Failed, float64(peak)/1e6)
		return edited, peak
	}
	// The trusted checkpoint is of 10,000 leaves: what the consistency
	// proof reads of the stored hashes is beside it.
	e.exec(`UPDATE log_segments SET hashes = '\x00'::bytea || substring(hashes FROM 2) WHERE first_index = 20000`)
	n1, p1 := measure()
	e.exec(`UPDATE log_segments SET hashes = decode(repeat('00', octet_length(hashes)), 'hex')`)
	n2, p2 := measure()
	if n2 < n1+10000 {
		t.Fatalf("%d stored hashes edited, then %d: want many more", n1, n2)
	}
	per := (float64(p2) - float64(p1)) / float64(n2-n1)
	t.Logf("%.0f bytes of peak live heap per extra edited stored hash", per)
	if per > 25 {
		t.Errorf("a full verify holds %.0f bytes more per extra stored hash edited (peak live heap %d B at %d, %d B at %d): want under 25",
			per, p1, n1, p2, n2)
	}
}
