package tamper

import (
	"context"
	"testing"
	"time"
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
