package tamper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/options-record/options-record/store/model"
)

// withNulls adds to a batch versions whose columns are NULL or empty where
// they can be: a baseline (no event, no resourceVersion), no object, no
// rules, an empty (not NULL) object_exact is not written (nullJSON).
func withNulls(b *model.Batch, at time.Time) *model.Batch {
	for i, s := range hostile[:min(len(hostile), 20)] {
		k := sha256.Sum256(fmt.Append(nil, "baseline", i, s))
		b.Versions = append(b.Versions, model.Version{
			Cluster: "default", UID: "b-" + s, Key: k[:], Origin: model.OriginBaseline, Verb: "baseline",
			ChangedAt: at.Add(time.Duration(i) * 999 * time.Nanosecond), Resource: "secrets", Name: s,
			Deleted: i%2 == 0, Complete: i%3 == 0, SecretDigested: i%2 == 1,
		})
	}
	return b
}

// unsureJSON is JSON whose jsonb text the ingest is not sure of: the
// events holding it in user_extra or annotations get no digest.
var unsureJSON = []string{`{"n":1.5}`, `{"a":1,"a":2}`, `{"n":1e400}`, `{"n":-0}`, `{"x":[1.0]}`}

// withEventJSON adds to a batch events whose user_extra and annotations
// are the hostile corpus as jsonb, and NULLs where they can be (no
// receivedAt, user_extra, annotations, request_object; impersonated
// groups NULL or empty), and an event per unsureJSON. It returns how many
// events it added whose pending rows have no digest.
func withEventJSON(b *model.Batch, at time.Time) (*model.Batch, int) {
	ev := func(i int, s, extra, annotations string) model.Event {
		k := sha256.Sum256(fmt.Append(nil, "jsonb event", i, s, extra, annotations))
		e := model.Event{
			Cluster: "default", Key: k[:], StageAt: at.Add(time.Duration(i) * 1003 * time.Nanosecond), AuditID: s,
			Stage: "ResponseComplete", Verb: "patch", RequestURI: "/x", Username: s, ResponseCode: int32(200 + i%300),
			UserExtra: []byte(extra), Annotations: []byte(annotations), ImpersonatedUser: s,
		}
		if i%2 == 0 {
			e.ImpersonatedGroups = []string{}
		}
		if i%3 == 0 {
			e.RequestObject, e.ReceivedAt = []byte(extra), at
		}
		return e
	}
	i := 0
	for _, s := range hostile {
		i++
		one, _ := json.Marshal(map[string]any{s: []string{s}, "a": map[string]any{}, "bb": []any{}, "c": int64(i) - 100})
		two, _ := json.Marshal(map[string]string{s: s, s + s: s, "z": s})
		b.Events = append(b.Events, ev(i, s, string(one), string(two)))
	}
	for _, j := range hostileJSON {
		if strings.Contains(j, `\u0000`) {
			continue // jsonb refuses it (the model never sends it: pgSafe)
		}
		i++
		b.Events = append(b.Events, ev(i, j, "", j))
	}
	i++
	b.Events = append(b.Events, ev(i, "", "", ""))
	unsure := 0
	for _, j := range hostileJSON {
		if jsonbUnsure(j) && !strings.Contains(j, `\u0000`) {
			unsure++
		}
	}
	for _, j := range unsureJSON {
		i++
		b.Events = append(b.Events, ev(i, j, j, `{}`), ev(i+1000, j, `{}`, j))
		unsure += 2
	}
	return b, unsure
}

// jsonbUnsure says which of hostileJSON the ingest cannot print as jsonb
// for sure (a fraction, an exponent, duplicate keys).
func jsonbUnsure(j string) bool {
	for _, s := range []string{`1e400`, `-0.0e-0`, `{"a":1,"a":2}`} {
		if strings.Contains(j, s) {
			return true
		}
	}
	return false
}

// TestPendingDigestIsStoredRows: the digest a batch writes in each
// version's and event's pending row, from the values it sent, is the
// digest of the row as PostgreSQL stores it (read back, json and jsonb
// hashed by PostgreSQL, ingested_at as stored), over the hostile corpus
// and NULLs: what verify recomputes. An event whose jsonb text the ingest
// is not sure of has none.
func TestPendingDigestIsStoredRows(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	b, unsure := withEventJSON(withNulls(e.batch("default", now, len(hostileJSON)+len(hostile)), now), now)
	e.write(b)
	ctx := context.Background()
	eventDigests := map[string][]byte{}
	rows, err := e.st.Pool().Query(ctx, "SELECT key, at, digest FROM log_pending_rows WHERE kind = 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, d []byte
		var at time.Time
		if err := rows.Scan(&key, &at, &d); err != nil {
			t.Fatal(err)
		}
		eventDigests[Ref{Kind: KindEvent, Cluster: "default", Key: key, At: at}.id()] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(eventDigests) != len(b.Events) {
		t.Fatalf("%d events pending, want %d", len(eventDigests), len(b.Events))
	}
	without := 0
	err = scanRows(ctx, e.st.Pool(), KindEvent, eventsOfClusterSQL, []any{"default"}, func(r Ref, stored [32]byte) error {
		d, ok := eventDigests[r.id()]
		switch {
		case !ok:
			t.Errorf("%s: no pending row", r)
		case d == nil:
			without++
		case !bytes.Equal(d, stored[:]):
			t.Errorf("%s: pending digest %x, stored row's %x", r, d, stored)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if without != unsure {
		t.Errorf("%d events pending without a digest, want %d (those with JSON the ingest is not sure of)", without, unsure)
	}
	rows, err = e.st.Pool().Query(ctx, "SELECT uid, key, digest FROM log_pending_rows WHERE kind = 2")
	if err != nil {
		t.Fatal(err)
	}
	pending := map[string][]byte{}
	for rows.Next() {
		var uid string
		var key, d []byte
		if err := rows.Scan(&uid, &key, &d); err != nil {
			t.Fatal(err)
		}
		pending[Ref{Kind: KindVersion, Cluster: "default", UID: uid, Key: key}.id()] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := len(hostileJSON) + len(hostile) + min(len(hostile), 20)
	if len(pending) != want {
		t.Fatalf("%d versions pending, want %d", len(pending), want)
	}
	n := 0
	err = scanRows(ctx, e.st.Pool(), KindVersion, versionsOfClusterSQL, []any{"default"}, func(r Ref, stored [32]byte) error {
		n++
		r.At = time.Time{}
		d, ok := pending[r.id()]
		switch {
		case !ok:
			t.Errorf("%s: no pending row", r)
		case d == nil:
			t.Errorf("%s: its pending row has no digest", r)
		case !bytes.Equal(d, stored[:]):
			t.Errorf("%s: pending digest %x, stored row's %x", r, d, stored)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("%d versions stored, want %d", n, want)
	}
}

// TestVersionChangedBeforeIntegration: a version changed between its batch
// and the integrator's pass fails verify, naming it: its leaf holds the
// digest of what the ingest wrote, not of what the pass would read.
func TestVersionChangedBeforeIntegration(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 5))
	e.exec(`UPDATE object_versions SET object = '{"changed":true}' WHERE uid = (SELECT min(uid) FROM object_versions)`)
	e.integrate()
	rep := e.verify(true)
	if rep.OK() {
		t.Fatal("verify passed on a version changed before its pass")
	}
	if p := problems(rep); !strings.Contains(p, `object_versions(cluster="default"`) || strings.Count(p, "\n") != 1 {
		t.Errorf("problems:\n%s\nwant the changed version, alone", p)
	}
}

// TestVersionGoneBeforeIntegration: a version deleted between its batch
// and the pass is looked up only when retention could have removed it
// (older than the minimum retention): then it has no leaf, though its
// pending row has its digest. One newer is logged unread, so its delete
// fails verify, naming it.
func TestVersionGoneBeforeIntegration(t *testing.T) {
	for _, c := range []struct {
		name     string
		age      time.Duration
		detected bool
	}{{"as retention", 2 * DefaultMinRetention, false}, {"recent", 0, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(e.batch("default", time.Now().Add(-c.age), 3))
			var uid string
			if err := e.st.Pool().QueryRow(context.Background(), `DELETE FROM object_versions WHERE uid = (SELECT min(uid) FROM object_versions) RETURNING uid`).Scan(&uid); err != nil {
				t.Fatal(err)
			}
			if n := e.count("SELECT count(*) FROM log_pending_rows WHERE kind = 2 AND digest IS NOT NULL"); n != 3 {
				t.Fatalf("%d versions pending with a digest, want 3", n)
			}
			e.integrate()
			want := 5 // 3 events, the 2 versions still stored
			if c.detected {
				want = 6
			}
			if n := e.count("SELECT count(*) FROM log_leaves"); n != want {
				t.Errorf("%d leaves, want %d", n, want)
			}
			rep := e.verify(true)
			if c.detected != !rep.OK() || c.detected && !strings.Contains(problems(rep), strconv.Quote(uid)) {
				t.Errorf("verify after a delete of %s before its pass (detected: %v):\n%s", uid, c.detected, problems(rep))
			}
		})
	}
}

// TestEventChangedBeforeIntegration: an event changed between its batch
// and the integrator's pass fails verify, naming it, as a version does:
// its leaf holds the digest of what the ingest wrote.
func TestEventChangedBeforeIntegration(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 5))
	if n := e.count("SELECT count(*) FROM log_pending_rows WHERE kind = 1 AND digest IS NOT NULL"); n != 5 {
		t.Fatalf("%d events pending with a digest, want 5", n)
	}
	e.exec(`UPDATE events SET annotations = '{"changed":true}' WHERE event_key = (SELECT event_key FROM events ORDER BY event_key LIMIT 1)`)
	e.integrate()
	rep := e.verify(true)
	if rep.OK() {
		t.Fatal("verify passed on an event changed before its pass")
	}
	if p := problems(rep); !strings.Contains(p, `events(cluster="default"`) || strings.Count(p, "\n") != 1 {
		t.Errorf("problems:\n%s\nwant the changed event, alone", p)
	}
}

// TestEventWithoutDigestIsReadBack: an event whose jsonb the ingest is
// not sure of has no digest in its pending row; the pass reads it back
// and logs it, and verify passes.
func TestEventWithoutDigestIsReadBack(t *testing.T) {
	e := newEnv(t)
	b := e.batch("default", time.Now(), 4)
	b.Events[1].Annotations = []byte(`{"n":1.50,"m":1e3}`) // jsonb prints 1.50 and 1000
	b.Events[2].UserExtra = []byte(`{"a":["x"],"a":["y"]}`)
	e.write(b)
	if n := e.count("SELECT count(*) FROM log_pending_rows WHERE kind = 1 AND digest IS NULL"); n != 2 {
		t.Fatalf("%d events pending without a digest, want 2", n)
	}
	e.integrate()
	if n := e.count("SELECT count(*) FROM log_leaves WHERE row_table = 'events'"); n != 4 {
		t.Errorf("%d events logged, want 4", n)
	}
	if rep := e.verify(true); !rep.OK() {
		t.Errorf("verify failed:\n%s", problems(rep))
	}
}

// TestEventGoneBeforeIntegration: an event deleted between its batch and
// the pass, as a version (TestVersionGoneBeforeIntegration): looked up,
// and not logged, only when retention could have removed it; a recent
// one's delete fails verify.
func TestEventGoneBeforeIntegration(t *testing.T) {
	for _, c := range []struct {
		name     string
		age      time.Duration
		detected bool
	}{{"as retention", 2 * DefaultMinRetention, false}, {"recent", 0, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(e.batch("default", time.Now().Add(-c.age), 3))
			e.exec(`DELETE FROM object_versions WHERE event_key = (SELECT event_key FROM events ORDER BY event_key LIMIT 1)`)
			e.exec(`DELETE FROM events WHERE event_key = (SELECT event_key FROM events ORDER BY event_key LIMIT 1)`)
			e.integrate()
			want := 2 // the 2 still stored
			if c.detected {
				want = 3
			}
			if n := e.count("SELECT count(*) FROM log_leaves WHERE row_table = 'events'"); n != want {
				t.Errorf("%d events logged, want %d", n, want)
			}
			rep := e.verify(true)
			if c.detected != !rep.OK() || c.detected && !strings.Contains(problems(rep), "events(") {
				t.Errorf("verify after a delete of an event before its pass (detected: %v):\n%s", c.detected, problems(rep))
			}
		})
	}
}

// TestEventsProbePrunesPartitions: the pass's probe of its events plans
// over the partitions of its range of stage_at only, not over every day
// kept (as eventsByRefSQL; the lookup of a batch's stored events alike).
func TestEventsProbePrunesPartitions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var days []time.Time
	for i := range 40 {
		days = append(days, now.AddDate(0, 0, -i))
	}
	if err := e.st.EnsurePartitionsFor(ctx, days); err != nil {
		t.Fatal(err)
	}
	e.write(e.batch("default", now, 20))
	var keys [][]byte
	var ats []time.Time
	rows, err := e.st.Pool().Query(ctx, "SELECT key, at FROM log_pending_rows WHERE kind = 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k []byte
		var at time.Time
		if err := rows.Scan(&k, &at); err != nil {
			t.Fatal(err)
		}
		keys, ats = append(keys, k), append(ats, at)
	}
	if err := rows.Err(); err != nil || len(keys) != 20 {
		t.Fatalf("%d pending events: %v", len(keys), err)
	}
	first, last := slices.MinFunc(ats, time.Time.Compare), slices.MaxFunc(ats, time.Time.Compare)
	rows, err = e.st.Pool().Query(ctx, "EXPLAIN "+eventsPresentSQL, "default", keys, ats, first, last)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[string]bool{}
	for _, line := range plan {
		for f := range strings.FieldsSeq(line) {
			if strings.HasPrefix(f, "events_p") {
				scanned[f] = true
			}
		}
	}
	if len(scanned) == 0 || len(scanned) > 2 {
		t.Errorf("the probe of a pass of one day plans over %d partitions, want 1 or 2:\n%s", len(scanned), strings.Join(plan, "\n"))
	}
}
