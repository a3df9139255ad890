package tamper

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// refHash is log_ref_hash (migration 00026) as the integrator of a release
// before migration 00034 computed it for the log_leaf_index entries it
// wrote: the lookups (leafIndexSQL, indexedSQL) must find those.
func refHash(kind Kind, uid string, key []byte) int64 {
	b := append([]byte{byte(kind)}, uid...)
	h := sha256.Sum256(append(append(b, 0), key...))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// refEpoch is log_version_ref's epoch: 2020-01-01T00:00:00Z.
const refEpoch = 1577836800

// versionRef is log_version_ref (migration 00032) as the integrator of a
// release from 00032 to 00034 computed it: the seconds of at since
// refEpoch (clamped to 0..2^31-1) in the high 32 bits, the low 32 bits of
// the version's refHash in the low ones.
func versionRef(uid string, key []byte, at time.Time) int64 {
	s := min(max(at.Unix()-refEpoch, 0), math.MaxInt32)
	return s<<32 | int64(uint32(refHash(KindVersion, uid, key)))
}

// loggedByOlderRelease makes the versions logged so far look as an
// integrator of a release before migration 00034 left them: found through
// log_leaf_index entries (keyed as key says, by the SQL function of that
// name: log_version_ref from 00032, log_ref_hash before), with no
// log_version_seconds rows.
func (e *env) loggedByOlderRelease(key string) {
	e.exec(`DELETE FROM log_version_seconds`)
	e.exec(`INSERT INTO log_leaf_index (cluster, ref_hash, log_index)
		SELECT cluster, ` + map[string]string{"log_version_ref": "log_version_ref(uid, key, at)", "log_ref_hash": "log_ref_hash(2::smallint, uid, key)"}[key] + `, log_index
		FROM log_leaves WHERE row_table = 'object_versions'`)
}

// TestVersionRefIsLogVersionRef: an older integrator's versionRef (which
// its COPY wrote) is the SQL log_version_ref (which the lookups compute),
// over the hostile strings and times on both sides of
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

// TestMigration00032: the migration rewrites nothing: the entries written
// before it keep their log_ref_hash keys, and proofs and an incremental
// verify find the versions by them. Down gives the entries of
// log_version_ref (a release from 00032 to 00034 wrote them) the old key
// back. Since 00034 a pass writes no entry.
func TestMigration00032(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first, since := e.olderAfterCheckpoint(5, 5)
	e.loggedByOlderRelease("log_ref_hash")
	p := e.migrations()
	const byOldKey = `SELECT count(*) FROM log_leaf_index x, log_leaves l
		WHERE l.cluster = x.cluster AND l.log_index = x.log_index AND x.ref_hash = log_ref_hash(2::smallint, l.uid, l.key)`
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
	if rep := e.verifySince(since); !rep.OK() || rep.Clusters[0].Rows != 20 {
		t.Errorf("incremental after the migration: %+v %s; want it to pass over 20 rows", rep.Clusters[0], problems(rep))
	}
	e.exec(`UPDATE log_leaf_index SET ref_hash = log_version_ref(l.uid, l.key, l.at)
		FROM log_leaves l WHERE l.cluster = log_leaf_index.cluster AND l.log_index = log_leaf_index.log_index AND l.log_index >= 10`)
	e.write(e.batch("default", time.Now(), 5))
	e.integrate()
	if n, m := e.count(byOldKey), e.count(`SELECT count(*) FROM log_leaf_index`); n != 5 || m != 10 {
		t.Errorf("after a pass: %d entries by log_ref_hash of %d; want 5 of 10 (a pass writes none since 00034)", n, m)
	}
	if _, err := p.DownTo(ctx, 31); err != nil {
		t.Fatal(err)
	}
	if n := e.count(byOldKey); n != 10 {
		t.Errorf("down again: %d entries by log_ref_hash; want 10", n)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeafIndexOlderReplicasEntry: a version logged before migration
// 00034, or by an integrator of an older release during a rolling upgrade,
// has a log_leaf_index entry (keyed by log_ref_hash before 00032,
// log_version_ref since) and no log_version_seconds row. A proof finds it
// through the index (not by searching the log) and an incremental verify
// passes over it.
func TestLeafIndexOlderReplicasEntry(t *testing.T) {
	for _, key := range []string{"log_ref_hash", "log_version_ref"} {
		t.Run(key, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			first, since := e.olderAfterCheckpoint(5, 5)
			e.loggedByOlderRelease(key)
			v := first.Versions[1]
			var leaf int64
			if err := e.st.Pool().QueryRow(ctx, leafIndexSQL, v.Cluster, v.UID, v.Key, maxCandidates+1, v.ChangedAt).Scan(&leaf); err != nil {
				t.Fatalf("the proof's lookup of an older integrator's entry: %v", err)
			}
			var got int64
			if err := pgx.BeginFunc(ctx, e.st.Pool(), func(tx pgx.Tx) (err error) {
				got, err = findLeaf(ctx, tx, v.Cluster, v.UID, v.Key, v.ChangedAt)
				return err
			}); err != nil || got != leaf {
				t.Errorf("findLeaf: leaf %d, %v; want %d, by the index", got, err, leaf)
			}
			if rep := e.verifySince(since); !rep.OK() || rep.Clusters[0].Rows != 20 {
				t.Errorf("incremental over an older integrator's entries: %+v %s; want it to pass over 20 rows", rep.Clusters[0], problems(rep))
			}
		})
	}
}

// TestEditedTimeBeforeCheckpoint: a version logged before the verified
// checkpoint whose changed_at was edited is found by the incremental verify
// through another version of its old second (the segment holding both is
// read), and reported changed at its leaf; with no version of its old
// second left (all of them edited), it is not found by its (new) time, and
// the incremental verify names it, saying its time may have been edited.
// A full verify finds each changed at its leaf.
func TestEditedTimeBeforeCheckpoint(t *testing.T) {
	for _, c := range []struct {
		name, edit, incremental string
	}{
		{"one of its second", "uid = $1 AND version_key = $2", "changed since it was logged at leaf"},
		{"all of its second", "changed_at >= $3", "or its time edited since it was logged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			first, since := e.olderAfterCheckpoint(5, 5)
			v := first.Versions[1]
			e.exec(`UPDATE object_versions SET changed_at = changed_at + interval '5 minutes' WHERE `+c.edit+` AND $1::text IS NOT NULL AND $2::bytea IS NOT NULL AND $3::timestamptz IS NOT NULL`,
				v.UID, v.Key, v.ChangedAt.Add(-5*time.Minute))
			rep := e.verifySince(since)
			if p := problems(rep); rep.OK() || !strings.Contains(p, fmt.Sprintf("uid=%q", v.UID)) || !strings.Contains(p, c.incremental) {
				t.Errorf("incremental verify after an edited changed_at: %s; want %q", p, c.incremental)
			}
			if p := problems(e.verify(false)); !strings.Contains(p, fmt.Sprintf("uid=%q", v.UID)) || !strings.Contains(p, "changed since it was logged at leaf") {
				t.Errorf("full verify after an edited changed_at: %s", p)
			}
		})
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
