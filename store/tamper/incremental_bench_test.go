package tamper

import (
	"context"
	"testing"
	"time"
)

// BenchmarkIncrementalManySegments: an incremental verify of a record of
// 4,000 segments (40 batches of 500 events and their versions, passes of
// 10 leaves) after a late batch of 500: stamped just before the newest
// batch (the 1,000 rows of its 100 segments are as new, and are looked
// for below the checkpoint), then one stamped before the oldest (all
// 41,000, the first late batch's included). go test -run '^$' -bench IncrementalManySegments ./store/tamper/
func BenchmarkIncrementalManySegments(b *testing.B) {
	e := newEnv(b)
	e.in.o.MaxLeaves = 10
	const batches = 40
	start := time.Now().Add(-time.Hour)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	for i := range batches {
		e.write(e.batch("default", at(i), 500))
		e.integrate()
	}
	if n := e.count(`SELECT count(*) FROM log_segments`); n != 4000 {
		b.Fatalf("%d segments; want 4000", n)
	}
	for _, tc := range []struct {
		name string
		late time.Time
		rows int
	}{
		{"late by the newest batch", at(batches - 1).Add(-100 * time.Millisecond), 2000},
		{"late by the whole record", at(0).Add(-100 * time.Millisecond), 2 * 500 * (batches + 2)},
	} {
		base := e.verify(false)
		if !base.OK() {
			b.Fatal(problems(base))
		}
		e.write(e.batch("default", tc.late, 500))
		e.integrate()
		since := map[string][]byte{"default": base.Clusters[0].Checkpoint}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: since})
				if err != nil {
					b.Fatal(err)
				}
				if c := rep.Clusters[0]; !rep.OK() || c.Rows != tc.rows {
					b.Fatalf("%+v %s; want it to pass over %d rows", c, problems(rep), tc.rows)
				}
			}
		})
	}
}
