package tamper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

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

// TestPendingDigestIsStoredRows: the digest a batch writes in each
// version's pending row, from the values it sent, is the digest of the row
// as PostgreSQL stores it (read back, json hashed by PostgreSQL), over the
// hostile corpus and NULLs: what verify recomputes.
func TestPendingDigestIsStoredRows(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.write(withNulls(e.batch("default", now, len(hostileJSON)+len(hostile)), now))
	ctx := context.Background()
	rows, err := e.st.Pool().Query(ctx, "SELECT uid, key, digest FROM log_pending_rows WHERE kind = 2")
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
// and the pass (retention dropped it) has no leaf, though its pending row
// has its digest: the pass looks each one up.
func TestVersionGoneBeforeIntegration(t *testing.T) {
	e := newEnv(t)
	e.write(e.batch("default", time.Now(), 3))
	e.exec(`DELETE FROM object_versions WHERE uid = (SELECT min(uid) FROM object_versions)`)
	if n := e.count("SELECT count(*) FROM log_pending_rows WHERE kind = 2 AND digest IS NOT NULL"); n != 3 {
		t.Fatalf("%d versions pending with a digest, want 3", n)
	}
	e.integrate()
	if n := e.count("SELECT count(*) FROM log_leaves"); n != 5 {
		t.Errorf("%d leaves, want 5 (3 events, the 2 versions still stored)", n)
	}
	if rep := e.verify(true); !rep.OK() {
		t.Errorf("verify failed:\n%s", problems(rep))
	}
}
