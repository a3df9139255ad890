package tamper

import (
	"testing"
	"time"
)

// BenchmarkIntegrate: passes over batches of 500 events and their
// versions, the sink's share of the log's cost per pass (go test -run '^$'
// -bench Integrate -benchmem -cpuprofile cpu.out ./store/tamper/).
func BenchmarkIntegrate(b *testing.B) {
	e := newEnv(b)
	e.in.o.MaxLeaves = 10000
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e.write(e.batch("default", now, 500))
		b.StartTimer()
		e.integrate()
	}
}
