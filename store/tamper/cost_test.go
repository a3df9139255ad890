package tamper

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestVerifyCost logs what a full and an incremental verify of a log of
// 4,000 leaves cost (time and bytes allocated: a measure, not a check),
// and checks what differs by construction: the incremental one reads the
// rows of the 20 leaves logged since the checkpoint (and those as new),
// not the 4,000.
func TestVerifyCost(t *testing.T) {
	e := newEnv(t)
	e.in.o.MaxLeaves = 1000
	now := time.Now().Add(-time.Hour)
	for i := range 20 {
		e.write(e.batch("default", now.Add(time.Duration(i)*time.Second), 100))
	}
	e.integrate()
	var since map[string][]byte
	measure := func(name string, f func() Report) Report {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		start := time.Now()
		rep := f()
		took := time.Since(start)
		runtime.ReadMemStats(&b)
		c := rep.Clusters[0]
		t.Logf("%s verify of %d leaves (from %d): %d rows checked in %s, %.1f MB allocated", name, c.Size, c.From, c.Rows, took,
			float64(b.TotalAlloc-a.TotalAlloc)/1e6)
		if !rep.OK() {
			t.Fatalf("%s: %s", name, problems(rep))
		}
		return rep
	}
	full := measure("full", func() Report { return e.verify(false) })
	since = map[string][]byte{"default": full.Clusters[0].Checkpoint}
	e.write(e.batch("default", now.Add(time.Minute), 10))
	e.integrate()
	inc := measure("incremental", func() Report {
		rep, err := Verify(context.Background(), e.st.Pool(), VerifyOptions{Verifier: e.verifier, Since: since})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	})
	if c := inc.Clusters[0]; !c.Incremental || c.Size != 4020 || c.Rows >= 100 {
		t.Errorf("incremental: %+v; want 4020 leaves, from 4000, fewer than 100 rows read", c)
	}
	if c := full.Clusters[0]; c.Rows != 4000 {
		t.Errorf("full: %d rows, want 4000", c.Rows)
	}
}
