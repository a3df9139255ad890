package tamper

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIncrementalFindsEventsBySegments: events have no log_leaf_index
// entries (migration 00028); an incremental verify finds those logged
// before its checkpoint, as new as the rows after it, in the segments
// whose range of event times holds theirs, and proves each against the
// verified root. The range is not trusted: widened or unknown, it reads
// more segments and passes; narrowed to hide a segment, the events there
// are reported as not in the log; a changed event fails either way.
func TestIncrementalFindsEventsBySegments(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(e *env, first [][]byte)
		want   []string // each in some problem; none: it passes
		events int      // how many problems name an event (-1: any)
	}{{
		name:   "untouched",
		tamper: func(*env, [][]byte) {},
	}, {
		name: "ranges widened",
		tamper: func(e *env, _ [][]byte) {
			e.exec(`UPDATE log_segments SET events_from = '-infinity', events_to = 'infinity'`)
		},
	}, {
		name: "ranges unknown (segments written before 00028)",
		tamper: func(e *env, _ [][]byte) {
			e.exec(`UPDATE log_segments SET events_from = NULL, events_to = NULL`)
		},
	}, {
		name: "ranges moved to hide the segments below the checkpoint",
		tamper: func(e *env, _ [][]byte) {
			e.exec(`UPDATE log_segments SET events_from = events_from - interval '1 day', events_to = events_from - interval '1 day' WHERE tree_size <= 10`)
		},
		want:   []string{`events(cluster="default"`, "not in the log, and not pending"},
		events: 5,
	}, {
		name: "an event logged before the checkpoint changed",
		tamper: func(e *env, first [][]byte) {
			e.exec(`UPDATE events SET username = 'mallory' WHERE event_key = $1`, first[2])
		},
		want:   []string{`events(cluster="default"`, "changed since it was logged at leaf"},
		events: 1,
	}, {
		name: "an event changed and its segment's range moved away",
		tamper: func(e *env, first [][]byte) {
			e.exec(`UPDATE events SET username = 'mallory' WHERE event_key = $1`, first[2])
			e.exec(`UPDATE log_segments SET events_from = 'infinity', events_to = 'infinity' WHERE tree_size <= 10`)
		},
		want:   []string{`events(cluster="default"`, "not in the log, and not pending"},
		events: 5,
	}, {
		name: "an event's stored time and the segments' edited alike",
		tamper: func(e *env, first [][]byte) {
			e.exec(`UPDATE log_segments SET ats = ARRAY(SELECT a + interval '1 second' FROM unnest(ats) a),
				events_from = events_from + interval '1 second', events_to = events_to + interval '1 second' WHERE tree_size <= 10`)
			e.exec(`UPDATE events SET stage_at = stage_at + interval '1 second' WHERE event_key = $1`, first[2])
		},
		// And the other events, whose times the segments no longer hold,
		// and the newest leaves of the checkpoint's pass are named.
		want:   []string{"changed since it was logged at leaf", "not in the log, and not pending", "does not lead to the verified checkpoint's root"},
		events: -1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			now := time.Now().Add(-time.Hour)
			first := e.batch("default", now.Add(10*time.Minute), 5)
			e.write(first)
			e.integrate() // two passes: 7 leaves and 3 (MaxLeaves)
			base := e.verify(false)
			if !base.OK() || base.Clusters[0].Size != 10 {
				t.Fatalf("full verify: %+v %s", base.Clusters, problems(base))
			}
			// Committed later, but older: the incremental verify looks for
			// the first batch's rows, as new as these, below its checkpoint.
			e.write(e.batch("default", now, 5))
			e.integrate()
			if n, m := e.count(`SELECT count(*) FROM log_leaf_index`), e.count(`SELECT count(*) FROM log_version_seconds`); n != 0 || m == 0 {
				t.Fatalf("%d log_leaf_index entries, %d log_version_seconds rows; want none, and the versions' seconds'", n, m)
			}
			if n := e.count(`SELECT count(*) FROM log_segments s WHERE events_from IS NULL
				OR events_from IS DISTINCT FROM (SELECT min(at) FROM unnest(s.kinds, s.ats) AS l(kind, at) WHERE kind = 1)
				OR events_to IS DISTINCT FROM (SELECT max(at) FROM unnest(s.kinds, s.ats) AS l(kind, at) WHERE kind = 1)`); n != 0 {
				t.Fatalf("%d segments whose events_from and events_to are not the range of their events' times", n)
			}
			var keys [][]byte
			for _, ev := range first.Events {
				keys = append(keys, ev.Key)
			}
			tc.tamper(e, keys)
			rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": base.Clusters[0].Checkpoint}})
			if err != nil {
				t.Fatal(err)
			}
			got := problems(rep)
			if len(tc.want) == 0 {
				// The 10 new rows, and the first batch's 10 found below.
				if c := rep.Clusters[0]; !rep.OK() || !c.Incremental || c.Rows != 20 {
					t.Fatalf("incremental: %+v %s; want it to pass over 20 rows", c, got)
				}
				return
			}
			if rep.OK() {
				t.Fatal("incremental passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no problem says %q; got:\n%s", w, got)
				}
			}
			if n := strings.Count(got, `events(cluster="default"`); tc.events >= 0 && n != tc.events {
				t.Errorf("%d problems name an event; want %d:\n%s", n, tc.events, got)
			}
		})
	}
}

// TestEventsBeforeLookupIndexed: over a log of 50,000 segments, the
// lookup of events logged before the checkpoint reads the segments whose
// range of event times holds theirs, found by the index on
// (cluster, events_to), not every segment: the buffers its plan touches,
// from EXPLAIN (ANALYZE, BUFFERS), logged with the plan.
func TestEventsBeforeLookupIndexed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Synthetic segments of 2 events and 2 versions, a second apart, and
	// one of a late event ten minutes older than its pass: only their
	// references and ranges are read here.
	const segments = 50000
	e.exec(`INSERT INTO log_segments (cluster, first_index, tree_size, stored_from, kinds, uids, keys, ats, digests, hashes, checkpoint, events_from, events_to)
		SELECT 'big', p * 4, p * 4 + 4, 0, '{1,2,1,2}', ARRAY['', 'u' || p, '', 'v' || p],
			ARRAY[sha256(('e' || p)::bytea), sha256(('v' || p)::bytea), sha256(('f' || p)::bytea), sha256(('w' || p)::bytea)],
			ARRAY[t, t, t + interval '1 ms', t + interval '1 ms'], '', '', '', t, t + interval '1 ms'
		FROM generate_series(0, $1::int - 1) p, LATERAL (SELECT '2026-01-01'::timestamptz + p * interval '1 second' AS t) x`, segments)
	e.exec(`UPDATE log_segments SET ats[1] = ats[1] - interval '10 minutes', events_from = events_from - interval '10 minutes'
		WHERE cluster = 'big' AND first_index = 4 * ($1::int - 100)`, segments)
	e.exec(`ANALYZE log_segments`)
	// The events of the segment before the last, and the late one.
	p, late := segments-2, segments-100
	at := func(p int, d time.Duration) time.Time {
		return time.Date(2026, 1, 1, 0, 0, p, 0, time.UTC).Add(d)
	}
	keys := [][]byte{[]byte("e" + strconv.Itoa(p)), []byte("f" + strconv.Itoa(p)), []byte("e" + strconv.Itoa(late))}
	ats := []time.Time{at(p, 0), at(p, time.Millisecond), at(late, -10*time.Minute)}
	sql := strings.ReplaceAll(eventsBeforeSQL, "unnest($2::bytea[]", "unnest(ARRAY(SELECT sha256(k) FROM unnest($2::bytea[]) k)")
	args := []any{"big", keys, ats, int64(4 * segments), at(late, -10*time.Minute), at(p, time.Millisecond)}
	rows, err := e.st.Pool().Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	found := map[int64]int64{}
	for rows.Next() {
		var n, index int64
		if err := rows.Scan(&n, &index); err != nil {
			t.Fatal(err)
		}
		found[n] = index
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if want := map[int64]int64{1: int64(4 * p), 2: int64(4*p + 2), 3: int64(4 * late)}; len(found) != 3 || found[1] != want[1] || found[2] != want[2] || found[3] != want[3] {
		t.Fatalf("found %v; want %v", found, want)
	}
	plan := e.explain("ANALYZE, BUFFERS", sql, args...)
	all := e.count(`SELECT pg_relation_size('log_segments') / current_setting('block_size')::int`)
	buffers := 0
	for _, l := range plan { // the top node's buffers count its children's
		if m := regexp.MustCompile(`Buffers: shared (?:hit=(\d+))?\s?(?:read=(\d+))?`).FindStringSubmatch(l); m != nil {
			h, _ := strconv.Atoi(m[1])
			r, _ := strconv.Atoi(m[2])
			buffers = h + r
			break
		}
	}
	t.Logf("the lookup over %d segments (%d pages), %d buffers:\n%s", segments, all, buffers, strings.Join(plan, "\n"))
	if !strings.Contains(strings.Join(plan, "\n"), "log_segments_events_to") {
		t.Errorf("the lookup does not use the index on events_to")
	}
	if buffers == 0 || buffers*10 > all {
		t.Errorf("%d buffers of the %d pages of log_segments: want a tenth or less", buffers, all)
	}
}

// TestMigration00028: on a record logged with events' log_leaf_index
// entries and no ranges (migration 00028 down), the migration deletes the
// events' entries and computes each segment's range of event times from
// its references; an incremental verify finds the events logged before
// its checkpoint; and down restores the entries.
func TestMigration00028(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Add(-time.Hour)
	first := e.batch("default", now.Add(10*time.Minute), 5)
	e.write(first)
	e.integrate()
	base := e.verify(false)
	e.write(e.batch("default", now, 5))
	e.integrate()
	e.exec(`INSERT INTO log_pending (cluster, kind, at) VALUES ('default', 3, $1)`, now.Add(-24*time.Hour))
	e.in.o.MinRetention = -100 * 365 * 24 * time.Hour // it logs the cutoff: a segment with no events
	e.integrate()
	e.loggedByOlderRelease("log_version_ref") // the versions' entries, as before 00034
	p := e.migrations()
	if _, err := p.DownTo(ctx, 27); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM log_leaf_index`); n != 20 {
		t.Fatalf("down: %d log_leaf_index entries; want 20, the events' and the versions'", n)
	}
	if n := e.count(`SELECT count(*) FROM information_schema.columns WHERE table_name = 'log_segments' AND column_name LIKE 'events_%'`); n != 0 {
		t.Fatalf("down: log_segments has %d events_ columns", n)
	}
	if _, err := p.UpTo(ctx, 28); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM log_leaf_index`); n != 10 {
		t.Fatalf("up: %d log_leaf_index entries; want 10, the versions'", n)
	}
	want := e.count(`SELECT count(*) FROM log_segments`)
	if n := e.count(`SELECT count(*) FROM log_segments s WHERE
		events_from IS NOT DISTINCT FROM (SELECT coalesce(min(at), 'infinity') FROM unnest(s.kinds, s.ats) AS l(kind, at) WHERE kind = 1)
		AND events_to IS NOT DISTINCT FROM (SELECT coalesce(max(at), '-infinity') FROM unnest(s.kinds, s.ats) AS l(kind, at) WHERE kind = 1)`); n != want || want < 3 {
		t.Fatalf("up: %d of %d segments have the range of their events' times; want all, at least 3 (two batches' and the cutoff's)", n, want)
	}
	if n := e.count(`SELECT count(*) FROM log_segments WHERE events_from = 'infinity' AND events_to = '-infinity'`); n != 1 {
		t.Errorf("up: %d segments with the empty range; want 1, the cutoff's", n)
	}
	if _, err := p.Up(ctx); err != nil { // this release's verify reads later migrations' functions
		t.Fatal(err)
	}
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": base.Clusters[0].Checkpoint}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Clusters[0]; !rep.OK() || c.Rows != 20 {
		t.Errorf("incremental after the migration: %+v %s; want it to pass over 20 rows", c, problems(rep))
	}
}

// TestSegmentsWithoutEventsAreNotRead: a segment without events (a
// cutoff's, a pass of versions only: baselines, confirmations) gets the
// empty range, so the incremental verify's lookup of events never reads
// it; only a segment without a range (an older replica's) is read
// whatever the time.
func TestSegmentsWithoutEventsAreNotRead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	b := e.batch("default", time.Now(), 3)
	b.Events = nil
	for i := range b.Versions {
		b.Versions[i].EventKey = nil
	}
	e.write(b)
	e.integrate()
	if n := e.count(`SELECT count(*) FROM log_segments WHERE events_from = 'infinity' AND events_to = '-infinity'`); n != 1 {
		t.Fatalf("%d segments of versions only with the empty range, want 1", n)
	}
	// An event's reference planted in it: the lookup of that event does
	// not find it while the range is empty, and does once it is NULL.
	at := time.Now().UTC().Truncate(time.Microsecond)
	e.exec(`UPDATE log_segments SET kinds = kinds || 1::smallint, keys = keys || '\x6b'::bytea, ats = ats || $1::timestamptz`, at)
	found := func() int {
		var n int
		err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM (`+eventsBeforeSQL+`) x`, "default",
			[][]byte{[]byte("k")}, []time.Time{at}, int64(1<<40), at.Add(-time.Hour), at.Add(time.Hour)).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := found(); n != 0 {
		t.Errorf("the lookup read a segment with the empty range: found %d", n)
	}
	e.exec(`UPDATE log_segments SET events_from = NULL, events_to = NULL`)
	if n := found(); n != 1 {
		t.Errorf("the lookup of a segment without a range found %d, want 1", n)
	}
}
