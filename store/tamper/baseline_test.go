package tamper

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/store/model"
)

// TestBaselinesAreLogged: the versions a baseline LIST stores
// (Store.WriteBaseline) are logged like any other; one already stored
// (a LIST seen twice) adds nothing.
func TestBaselinesAreLogged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	b := e.batch("default", now, 3)
	vs := b.Versions
	for i := range vs {
		vs[i].Origin, vs[i].Verb, vs[i].EventKey, vs[i].Complete = "baseline", "baseline", nil, true
	}
	n, err := e.st.WriteBaseline(ctx, vs)
	if err != nil || n != 3 {
		t.Fatalf("WriteBaseline: %d, %v", n, err)
	}
	if n, err := e.st.WriteBaseline(ctx, vs); err != nil || n != 0 {
		t.Fatalf("WriteBaseline again: %d, %v", n, err)
	}
	if n := e.count(`SELECT count(*) FROM log_pending_rows WHERE kind = 2`); n != 3 {
		t.Errorf("%d versions pending, want the 3 baselines once each", n)
	}
	e.integrate()
	if rep := e.verify(false); !rep.OK() || rep.Clusters[0].Rows != 3 {
		t.Fatalf("verify after baselines: %+v\n%s", rep.Clusters, problems(rep))
	}
}

// TestLogBaselinesStoredBefore: the SQL docs/upgrading.md gives logs the
// baselines a build before the fix stored without pending rows, once.
func TestLogBaselinesStoredBefore(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	b := e.batch("default", time.Now(), 4)
	e.write(&model.Batch{Events: b.Events[:2], Versions: b.Versions[:2]})
	e.integrate()
	vs := b.Versions[2:]
	for i := range vs {
		vs[i].Origin, vs[i].Verb, vs[i].EventKey, vs[i].Complete = "baseline", "baseline", nil, true
	}
	if _, err := e.st.WriteBaseline(ctx, vs); err != nil {
		t.Fatal(err)
	}
	e.exec(`DELETE FROM log_pending_batches`) // as the build before the fix left them
	e.integrate()
	if rep := e.verify(false); rep.OK() {
		t.Fatal("verify passed with two baselines never logged")
	}
	const upgradeSQL = `
  INSERT INTO log_pending (cluster, kind, uid, key, at)
  SELECT v.cluster, 2, v.uid, v.version_key, v.changed_at FROM object_versions v
  WHERE v.origin = 'baseline' AND NOT EXISTS (
      SELECT FROM log_leaves l
      WHERE l.cluster = v.cluster AND l.row_table = 'object_versions' AND l.uid = v.uid AND l.key = v.version_key);`
	doc, err := os.ReadFile("../../docs/upgrading.md")
	if err != nil || !strings.Contains(string(doc), upgradeSQL) {
		t.Fatalf("docs/upgrading.md does not give this test's SQL: %v", err)
	}
	e.exec(upgradeSQL)
	e.integrate()
	e.exec(upgradeSQL) // run twice: logs nothing more
	if n := e.count(`SELECT count(*) FROM log_pending`); n != 0 {
		t.Errorf("%d rows pending after the second run, want none", n)
	}
	if rep := e.verify(false); !rep.OK() || rep.Clusters[0].Rows != 6 {
		t.Fatalf("verify after logging the baselines: %+v\n%s", rep.Clusters, problems(rep))
	}
}
