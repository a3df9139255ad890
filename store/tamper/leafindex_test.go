package tamper

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store/model"
)

// oldLeafIndexSQL is how ProveVersion found a leaf before log_leaf_index:
// the references of every segment of the cluster.
const oldLeafIndexSQL = `
SELECT s.first_index + l.n - 1
FROM log_segments s, unnest(s.kinds, s.uids, s.keys) WITH ORDINALITY AS l(kind, uid, key, n)
WHERE s.cluster = $1 AND l.kind = 2 AND l.uid = $2 AND l.key = $3
ORDER BY 1 LIMIT 1`

// TestLeafLookupIndexed: over a log of 100,000 leaves (200 passes of 500,
// each of its own second), finding a version's leaf reads a few index
// pages and the references of the segment of its second
// (log_version_seconds, migration 00034), or a few index pages
// (log_leaf_index, an older release's entries), where the scan of the
// segments' references it replaces read them all: the buffers each plan
// touches, from EXPLAIN (ANALYZE, BUFFERS), logged with the plans.
func TestLeafLookupIndexed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Synthetic segments: only their references are read here.
	e.exec(`INSERT INTO log_segments (cluster, first_index, tree_size, stored_from, kinds, uids, keys, ats, digests, hashes, checkpoint)
		SELECT 'big', p * 500, p * 500 + 500, 0,
			array_fill(2::smallint, ARRAY[500]),
			ARRAY(SELECT 'uid-' || (p * 500 + i) FROM generate_series(0, 499) i),
			ARRAY(SELECT sha256(('key-' || (p * 500 + i))::bytea) FROM generate_series(0, 499) i),
			array_fill(to_timestamp(1800000000 + p), ARRAY[500]), '', '', ''
		FROM generate_series(0, 199) p`)
	e.exec(`INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
		SELECT s.cluster, log_version_ref(l.uid, l.key, l.at), s.first_index + l.n - 1
		FROM log_segments s, unnest(s.kinds, s.uids, s.keys, s.ats) WITH ORDINALITY AS l(kind, uid, key, at, n) WHERE s.cluster = 'big'`)
	e.exec(`INSERT INTO log_version_seconds (cluster, second, first_index)
		SELECT 'big', 1800000000 + p, p * 500 FROM generate_series(0, 199) p`)
	// And those of a month of another cluster's log (a segment a second).
	e.exec(`INSERT INTO log_version_seconds (cluster, second, first_index)
		SELECT 'other', 1800000000 + s, s * 500 FROM generate_series(0, 30 * 86400, 10) s`)
	e.exec(`ANALYZE log_segments`)
	e.exec(`ANALYZE log_leaf_index`)
	e.exec(`ANALYZE log_version_seconds`)
	uid, key, at := "uid-77777", "key-77777", time.Unix(1800000000+77777/500, 0)
	buffers := map[string]int{}
	for name, sql := range map[string]string{
		"scan of the segments": strings.ReplaceAll(oldLeafIndexSQL, "$3", "sha256($3::bytea) AND $4::timestamptz IS NOT NULL"),
		"log_leaf_index":       strings.NewReplacer("$4", "65", "$5", "$4", "$3", "sha256($3::bytea)").Replace(leafIndexSQL),
		"log_version_seconds":  strings.NewReplacer("$4", "floor(extract(epoch FROM $4::timestamptz))::bigint", "$5", "64", "$3", "sha256($3::bytea)").Replace(leafBySecondSQL),
	} {
		var idx int64
		if err := e.st.Pool().QueryRow(ctx, sql, "big", uid, key, at).Scan(&idx); err != nil || idx != 77777 {
			t.Fatalf("%s: leaf %d, %v; want 77777", name, idx, err)
		}
		plan := e.explain("ANALYZE, BUFFERS", sql, "big", uid, key, at)
		// The top node's buffers count its children's.
		for _, l := range plan {
			if m := regexp.MustCompile(`Buffers: shared (?:hit=(\d+))?\s?(?:read=(\d+))?`).FindStringSubmatch(l); m != nil {
				h, _ := strconv.Atoi(m[1])
				r, _ := strconv.Atoi(m[2])
				buffers[name] = h + r
				break
			}
		}
		t.Logf("%s over 100000 leaves:\n%s", name, strings.Join(plan, "\n"))
		if index := map[string]string{"log_leaf_index": "log_leaf_index_ref", "log_version_seconds": "log_version_seconds_second"}[name]; index != "" && !strings.Contains(strings.Join(plan, "\n"), index) {
			t.Errorf("%s: the lookup does not use the index %s:\n%s", name, index, strings.Join(plan, "\n"))
		}
	}
	t.Logf("buffers: %v", buffers)
	for _, name := range []string{"log_leaf_index", "log_version_seconds"} {
		if buffers[name] == 0 || buffers[name]*10 > buffers["scan of the segments"] {
			t.Errorf("buffers %v: want the lookup by %s to read a tenth of the scan or less", buffers, name)
		}
	}
}

// TestLeafIndexSharedHash: log_leaf_index (where a version logged before
// migration 00034 is found) names leaves by a 64-bit hash of their
// reference, so a lookup may find another row's leaf with the
// same hash (or an entry someone planted) before the row's own. A proof
// and an incremental verify still find the row's own leaf and pass.
func TestLeafIndexSharedHash(t *testing.T) {
	e := newEnv(t)
	first, since := e.olderAfterCheckpoint(5, 5)
	e.loggedByOlderRelease("log_version_ref")
	// Every leaf of the log before a version's own now shares its hash.
	for _, v := range first.Versions {
		e.exec(`INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
			SELECT 'default', log_version_ref($1, $2, $3), i FROM generate_series(0, 19) i`, v.UID, v.Key, v.ChangedAt)
	}
	v := first.Versions[3]
	if n := e.count(`SELECT count(DISTINCT log_index) FROM log_leaf_index WHERE ref_hash = log_version_ref($1, $2, $3)`, v.UID, v.Key, v.ChangedAt); n != 20 {
		t.Fatalf("%d entries share the version's hash; want 20", n)
	}
	pv, err := VerifyProof(e.prove(e.st.Pool(), v), e.verifier)
	if err != nil {
		t.Fatalf("proof with entries sharing the hash: %v", err)
	}
	if pv.Ref.UID != v.UID {
		t.Errorf("proved %s, want %s", pv.Ref.UID, v.UID)
	}
	if rep := e.verifySince(since); !rep.OK() || !rep.Clusters[0].Incremental || rep.Clusters[0].Rows < 20 {
		t.Errorf("incremental verify with entries sharing the hashes: %+v %s; want it to pass, over the 20 rows", rep.Clusters[0], problems(rep))
	}
}

// TestRefHashIsLogRefHash: an older integrator's refHash (which its COPY
// wrote) is the SQL log_ref_hash (which the lookups compute), over the
// hostile strings.
func TestRefHashIsLogRefHash(t *testing.T) {
	e := newEnv(t)
	for i, s := range hostile {
		for _, k := range []Kind{KindEvent, KindVersion} {
			key := []byte(s)
			if i%2 == 0 {
				key = nil
			}
			var got int64
			if err := e.st.Pool().QueryRow(context.Background(), `SELECT log_ref_hash($1::smallint, $2, $3)`, int16(k), s, append([]byte{}, key...)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := refHash(k, s, key); got != want {
				t.Fatalf("log_ref_hash(%d, %q, %x) = %d, refHash %d", k, s, key, got, want)
			}
		}
	}
}

// TestLeafIndexRebuiltLog: a log whose segments were removed logs the
// same rows again at the same indexes, whose log_version_seconds rows are
// there already: the pass logs them all the same (and writes its rows
// again: no unique key), and proofs verify.
func TestLeafIndexRebuiltLog(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000
	b := e.batch("default", time.Now().Add(-time.Hour), 10)
	e.write(b)
	e.integrate()
	e.exec(`INSERT INTO log_pending (cluster, kind, uid, key, at)
		SELECT cluster, CASE row_table WHEN 'events' THEN 1 ELSE 2 END, uid, key, at FROM log_leaves`)
	e.exec(`DELETE FROM log_segments`)
	before := e.count(`SELECT count(*) FROM log_version_seconds`)
	if err := e.in.IntegrateAll(context.Background()); err != nil {
		t.Fatalf("a pass over rows whose seconds' rows are there: %v", err)
	}
	if n := e.count(`SELECT count(*) FROM log_pending`); n != 0 {
		t.Errorf("%d rows still pending", n)
	}
	if n, d := e.count(`SELECT count(*) FROM log_version_seconds`), e.count(`SELECT count(*) FROM (SELECT DISTINCT * FROM log_version_seconds) x`); before == 0 || n != 2*before || d != before {
		t.Errorf("%d rows of log_version_seconds (%d distinct) after the pass, %d before; want them written again", n, d, before)
	}
	if _, err := VerifyProof(e.prove(e.st.Pool(), b.Versions[4]), e.verifier); err != nil {
		t.Error(err)
	}
}

// TestLeafIndexFlood: log_leaf_index (where a version logged before
// migration 00034 is found) has no unique key (migration 00030),
// so whoever writes it can plant any number of entries under a version's
// hash. A proof checks each leaf once and at most maxCandidates of them,
// then searches the log; an incremental verify proves at most
// maxCandidates leaves a row and reports the row whose entries pass that.
// Unbounded, 20,000 planted entries cost a proof about 2 s (a query
// each).
func TestLeafIndexFlood(t *testing.T) {
	e := newEnv(t)
	first, since := e.olderAfterCheckpoint(40, 2)
	e.loggedByOlderRelease("log_version_ref")
	v := first.Versions[3]
	// 20,000 entries naming leaf 0, and one naming each of 70 leaves
	// before it (no leaf has those indexes: each proof of one fails).
	e.exec(`INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
		SELECT 'default', log_version_ref($1, $2, $3), 0 FROM generate_series(1, 20000)`, v.UID, v.Key, v.ChangedAt)
	e.exec(`INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
		SELECT 'default', log_version_ref($1, $2, $3), -i FROM generate_series(1, 70) i`, v.UID, v.Key, v.ChangedAt)
	before := leafChecks.Load()
	pv, err := VerifyProof(e.prove(e.st.Pool(), v), e.verifier)
	if err != nil || pv.Ref.UID != v.UID {
		t.Fatalf("proof under a flood of entries: %v, %+v", err, pv.Ref)
	}
	if n := leafChecks.Load() - before; n > maxCandidates {
		t.Errorf("the proof checked %d leaves the index named; want at most %d", n, maxCandidates)
	}
	rep := e.verifySince(since)
	want := fmt.Sprintf("log_leaf_index names more than %d leaves", maxCandidates)
	if rep.OK() || !strings.Contains(problems(rep), want) || !strings.Contains(problems(rep), fmt.Sprintf("uid=%q", v.UID)) {
		t.Errorf("incremental verify under a flood: %s; want the version reported: %q", problems(rep), want)
	}
}

// TestVersionSeconds: a pass writes one log_version_seconds row per second
// of its versions (migration 00034) and no log_leaf_index entry; each
// version is found among the segments of its second, at the leaf
// log_leaves names; and an incremental verify that looks up versions
// logged before its checkpoint finds them there.
func TestVersionSeconds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Add(-time.Hour).Truncate(time.Second)
	var versions []model.Version
	for _, at := range []time.Time{now.Add(10*time.Minute + 100*time.Millisecond), now.Add(10*time.Minute + time.Second), now.Add(11 * time.Minute)} {
		b := e.batch("default", at, 4)
		e.write(b)
		versions = append(versions, b.Versions...)
	}
	e.integrate() // one pass, of three seconds
	base := e.verify(false)
	if !base.OK() {
		t.Fatal(problems(base))
	}
	late := e.batch("default", now.Add(10*time.Minute), 3) // of the first second, older than all, in a second pass
	e.write(late)
	e.integrate()
	versions = append(versions, late.Versions...)
	if n := e.count(`SELECT count(*) FROM log_leaf_index`); n != 0 {
		t.Errorf("%d log_leaf_index entries; want none", n)
	}
	const want = `SELECT count(*) FROM (SELECT DISTINCT cluster, floor(extract(epoch FROM at))::bigint, s.first_index
		FROM log_leaves l JOIN log_segments s USING (cluster) WHERE l.row_table = 'object_versions' AND l.log_index >= s.first_index AND l.log_index < s.tree_size) x`
	if n, w := e.count(`SELECT count(*) FROM log_version_seconds`), e.count(want); n != 4 || w != 4 {
		t.Errorf("%d rows of log_version_seconds, %d (segment, second) pairs of versions; want 4 (3 seconds in the first pass, 1 in the second)", n, w)
	}
	for _, v := range versions {
		var got, leaf int64
		if err := e.st.Pool().QueryRow(ctx, leafBySecondSQL, v.Cluster, v.UID, v.Key, v.ChangedAt.Unix(), maxSecondSegments).Scan(&got); err != nil {
			t.Fatalf("%s: %v", v.UID, err)
		}
		if err := e.st.Pool().QueryRow(ctx, `SELECT log_index FROM log_leaves WHERE row_table = 'object_versions' AND uid = $1 AND key = $2`, v.UID, v.Key).Scan(&leaf); err != nil || got != leaf {
			t.Errorf("%s: found at leaf %d; log_leaves says %d (%v)", v.UID, got, leaf, err)
		}
	}
	if _, err := VerifyProof(e.prove(e.st.Pool(), versions[5]), e.verifier); err != nil {
		t.Error(err)
	}
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": base.Clusters[0].Checkpoint}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Clusters[0]; !rep.OK() || !c.Incremental || c.Rows != 30 {
		t.Errorf("incremental verify: %+v %s; want it to pass over the 30 rows as new as the late ones", c, problems(rep))
	}
}

// TestVersionSecondsFlood: log_version_seconds has no unique key, so
// whoever writes it can plant any number of rows for a version's second.
// A proof reads at most maxSecondSegments segments of it, then searches the
// log: it still proves the version; an incremental verify reads each
// segment once and passes.
func TestVersionSecondsFlood(t *testing.T) {
	e := newEnv(t)
	first, since := e.olderAfterCheckpoint(5, 2)
	v := first.Versions[3]
	// 100,000 rows naming no segment, and 70 naming the log's first
	// leaves (before the version's segment in the lookup's order).
	e.exec(`INSERT INTO log_version_seconds (cluster, second, first_index)
		SELECT 'default', $1, -i FROM generate_series(1, 100000) i`, v.ChangedAt.Unix())
	e.exec(`INSERT INTO log_version_seconds (cluster, second, first_index)
		SELECT 'default', $1, 0 FROM generate_series(1, 70)`, v.ChangedAt.Unix())
	pv, err := VerifyProof(e.prove(e.st.Pool(), v), e.verifier)
	if err != nil || pv.Ref.UID != v.UID {
		t.Fatalf("proof under a flood of rows: %v, %+v", err, pv.Ref)
	}
	if rep := e.verifySince(since); !rep.OK() {
		t.Errorf("incremental verify under a flood: %s", problems(rep))
	}
}

// TestDocsLeafQuery: the query docs/sql.md gives for a version's leaf
// finds it, by log_version_seconds for a version this release logged
// (one of before 1970 too, a fraction of a second before it), and by
// log_leaf_index for one an older release logged: the leaf log_leaves
// names.
func TestDocsLeafQuery(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	_, q, ok := strings.Cut(string(doc), "-- Where is this version's leaf?")
	if q, _, ok = strings.Cut(q, ";\n"); !ok {
		t.Fatal(`docs/sql.md has no query "Where is this version's leaf?"`)
	}
	q = strings.NewReplacer("'prod'", "$1", "'<uid>'", "$2", `'\x<version_key hex>'::bytea`, "$3::bytea").Replace(q)
	q = q[strings.Index(q, "\n")+1:] // its comment's end
	e := newEnv(t)
	ctx := context.Background()
	leafOf := func(v model.Version) (docs, want int64) {
		t.Helper()
		if err := e.st.Pool().QueryRow(ctx, q, v.Cluster, v.UID, v.Key).Scan(&docs); err != nil {
			t.Fatalf("%s: the docs' query: %v", v.UID, err)
		}
		if err := e.st.Pool().QueryRow(ctx, `SELECT log_index FROM log_leaves WHERE row_table = 'object_versions' AND uid = $1 AND key = $2`, v.UID, v.Key).Scan(&want); err != nil {
			t.Fatal(err)
		}
		return docs, want
	}
	old := e.batch("default", time.Now().Add(-time.Hour), 3)
	e.write(old)
	e.integrate()
	e.loggedByOlderRelease("log_version_ref")
	now := e.batch("default", time.Now(), 3)
	before1970 := e.batch("default", time.Unix(-1, 500_000_000), 1)
	e.write(now)
	e.write(before1970)
	e.integrate()
	for _, v := range append(append(old.Versions, now.Versions...), before1970.Versions...) {
		if got, want := leafOf(v); got != want {
			t.Errorf("%s at %s: the docs' query says leaf %d, log_leaves %d", v.UID, v.ChangedAt, got, want)
		}
	}
}
