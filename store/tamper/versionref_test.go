package tamper

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestVersionRefIsLogVersionRef: the integrator's versionRef (which its
// COPY writes) is the SQL log_version_ref (which the lookups and the
// migration compute), over the hostile strings and times on both sides of
// each edge: the epoch's second, fractions of a second, before 2020, after
// 2088; infinite times (SQL only) take the ends.
func TestVersionRefIsLogVersionRef(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	times := []time.Time{
		time.Unix(refEpoch, 0), time.Unix(refEpoch-1, 999999000), time.Unix(refEpoch, 1000),
		time.Date(2026, 11, 27, 10, 59, 59, 999999000, time.UTC), time.Date(2026, 11, 27, 11, 0, 0, 0, time.FixedZone("x", -7*3600)),
		time.Unix(-1, 500000000), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2088, 1, 19, 3, 14, 7, 0, time.UTC), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i, s := range hostile {
		key := []byte(s)
		if i%2 == 0 {
			key = nil
		}
		at := times[i%len(times)]
		var got int64
		if err := e.st.Pool().QueryRow(ctx, `SELECT log_version_ref($1, $2, $3)`, s, append([]byte{}, key...), at).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := versionRef(s, key, at); got != want {
			t.Fatalf("log_version_ref(%q, %x, %s) = %x, versionRef %x", s, key, at, got, want)
		}
		if uint32(got) != uint32(refHash(KindVersion, s, key)) {
			t.Fatalf("the low 32 bits of %x are not those of the version's log_ref_hash", got)
		}
	}
	for _, c := range []struct {
		at   string
		high int64
	}{{"-infinity", 0}, {"infinity", 1<<31 - 1}, {"2019-12-31 23:59:59.999999+00", 0}, {"2020-01-01 00:00:01.5+00", 1}} {
		var got int64
		if err := e.st.Pool().QueryRow(ctx, `SELECT log_version_ref('u', '\x00'::bytea, $1::timestamptz)`, c.at).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.at, err)
		}
		if got>>32 != c.high {
			t.Errorf("log_version_ref at %s: high bits %d, want %d", c.at, got>>32, c.high)
		}
	}
}

// TestLeafIndexKeysGrowWithTime: a pass writes its versions' entries in
// the order of their keys, and a later pass's versions (of a later
// second) sort after an earlier one's: the index grows at its right edge
// (migration 00032) rather than at a random page per entry.
func TestLeafIndexKeysGrowWithTime(t *testing.T) {
	e := newEnv(t)
	now := time.Now().Truncate(time.Second)
	e.write(e.batch("default", now.Add(-time.Minute), 30))
	e.integrate()
	e.write(e.batch("default", now, 30))
	e.integrate()
	if n := e.count(`SELECT count(*) FROM log_leaf_index`); n != 60 {
		t.Fatalf("%d entries; want 60", n)
	}
	// In the heap's order (the COPY's), every key at least the one before.
	if n := e.count(`SELECT count(*) FROM (SELECT ref_hash < lag(ref_hash) OVER (ORDER BY ctid) AS down FROM log_leaf_index) x WHERE down`); n != 0 {
		t.Errorf("%d entries written after a greater key; want the entries in key order", n)
	}
	if n := e.count(`SELECT count(*) FROM log_leaf_index x, log_leaves l
		WHERE l.cluster = x.cluster AND l.log_index = x.log_index AND x.ref_hash = log_version_ref(l.uid, l.key, l.at)`); n != 60 {
		t.Errorf("%d entries are log_version_ref of the leaf they name; want 60", n)
	}
}

// TestMigration00032: the migration rewrites nothing: the entries written
// before it keep their log_ref_hash keys, proofs and an incremental verify
// find the versions by them, and the entries of the versions logged after
// it are log_version_ref. Down gives those the old key back.
func TestMigration00032(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Add(-time.Hour)
	first := e.batch("default", now.Add(10*time.Minute), 5)
	e.write(first)
	e.integrate()
	base := e.verify(false)
	e.write(e.batch("default", now, 5)) // older: the incremental verify looks first's versions up
	e.integrate()
	p := e.migrations()
	const byOldKey = `SELECT count(*) FROM log_leaf_index x, log_leaves l
		WHERE l.cluster = x.cluster AND l.log_index = x.log_index AND x.ref_hash = log_ref_hash(2::smallint, l.uid, l.key)`
	const byNewKey = `SELECT count(*) FROM log_leaf_index x, log_leaves l
		WHERE l.cluster = x.cluster AND l.log_index = x.log_index AND x.ref_hash = log_version_ref(l.uid, l.key, l.at)`
	if _, err := p.DownTo(ctx, 31); err != nil {
		t.Fatal(err)
	}
	if n := e.count(byOldKey); n != 10 {
		t.Fatalf("down: %d entries by log_ref_hash; want the 10 versions'", n)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(byOldKey); n != 10 {
		t.Fatalf("up: %d entries by log_ref_hash; want the 10 versions' as they were", n)
	}
	v := first.Versions[2]
	var leaf int64
	if err := e.st.Pool().QueryRow(ctx, leafIndexSQL, v.Cluster, v.UID, v.Key, maxCandidates+1, v.ChangedAt).Scan(&leaf); err != nil {
		t.Fatalf("the proof's lookup of an entry written before the migration: %v", err)
	}
	if pv, err := VerifyProof(e.prove(e.st.Pool(), v), e.verifier); err != nil || pv.Index != leaf {
		t.Errorf("proof after the migration: %v (leaf %d, the index names %d)", err, pv.Index, leaf)
	}
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": base.Clusters[0].Checkpoint}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Clusters[0]; !rep.OK() || c.Rows != 20 {
		t.Errorf("incremental after the migration: %+v %s; want it to pass over 20 rows", c, problems(rep))
	}
	e.write(e.batch("default", now.Add(20*time.Minute), 5))
	e.integrate()
	if n, m := e.count(byOldKey), e.count(byNewKey); n != 10 || m != 5 {
		t.Errorf("after a pass: %d entries by log_ref_hash, %d by log_version_ref; want 10 and 5", n, m)
	}
	if _, err := p.DownTo(ctx, 31); err != nil {
		t.Fatal(err)
	}
	if n := e.count(byOldKey); n != 15 {
		t.Errorf("down again: %d entries by log_ref_hash; want 15", n)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeafIndexOlderReplicasEntry: during a rolling upgrade, an integrator
// of a release before migration 00032 writes its versions' entries by
// log_ref_hash. A proof finds such a version through the index (not by
// searching the log) and an incremental verify passes over it.
func TestLeafIndexOlderReplicasEntry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Add(-time.Hour)
	first := e.batch("default", now.Add(10*time.Minute), 5)
	e.write(first)
	e.integrate()
	base := e.verify(false)
	e.write(e.batch("default", now, 5)) // older: the incremental verify looks first's versions up
	e.integrate()
	// As an older integrator would have written them.
	e.exec(`UPDATE log_leaf_index x SET ref_hash = log_ref_hash(2::smallint, l.uid, l.key)
		FROM log_leaves l WHERE l.cluster = x.cluster AND l.log_index = x.log_index`)
	v := first.Versions[1]
	var leaf int64
	if err := e.st.Pool().QueryRow(ctx, leafIndexSQL, v.Cluster, v.UID, v.Key, maxCandidates+1, v.ChangedAt).Scan(&leaf); err != nil {
		t.Fatalf("the proof's lookup of an older integrator's entry: %v", err)
	}
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": base.Clusters[0].Checkpoint}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Clusters[0]; !rep.OK() || c.Rows != 20 {
		t.Errorf("incremental over an older integrator's entries: %+v %s; want it to pass over 20 rows", c, problems(rep))
	}
}

// TestEditedTimeBeforeCheckpoint: a version logged before the verified
// checkpoint whose changed_at was edited is not found by its (new) time:
// the incremental verify names it, saying its time may have been edited,
// and a full verify finds it changed at its leaf.
func TestEditedTimeBeforeCheckpoint(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().Add(-time.Hour)
	first := e.batch("default", now.Add(10*time.Minute), 5)
	e.write(first)
	e.integrate()
	base := e.verify(false)
	e.write(e.batch("default", now, 5)) // older: the incremental verify looks first's versions up
	e.integrate()
	v := first.Versions[1]
	e.exec(`UPDATE object_versions SET changed_at = changed_at + interval '5 minutes' WHERE uid = $1 AND version_key = $2`, v.UID, v.Key)
	rep, err := Verify(ctx, e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: map[string][]byte{"default": base.Clusters[0].Checkpoint}})
	if err != nil {
		t.Fatal(err)
	}
	if p := problems(rep); rep.OK() || !strings.Contains(p, fmt.Sprintf("uid=%q", v.UID)) || !strings.Contains(p, "or its time edited since it was logged") {
		t.Errorf("incremental verify after an edited changed_at: %s", p)
	}
	if p := problems(e.verify(false)); !strings.Contains(p, fmt.Sprintf("uid=%q", v.UID)) || !strings.Contains(p, "changed since it was logged at leaf") {
		t.Errorf("full verify after an edited changed_at: %s", p)
	}
}

// TestVersionRefInlined: PostgreSQL inlines log_version_ref into the
// queries that call it (not STRICT, immutable parts only): called as a
// function, it cost a lookup or a migration about 20 µs a row.
func TestVersionRefInlined(t *testing.T) {
	e := newEnv(t)
	plan := e.explain("VERBOSE, COSTS OFF", `SELECT log_version_ref(l.uid, l.key, l.at) FROM log_leaves l`)
	if p := strings.Join(plan, "\n"); strings.Contains(p, "log_version_ref(") {
		t.Errorf("log_version_ref is called, not inlined:\n%s", p)
	}
}
