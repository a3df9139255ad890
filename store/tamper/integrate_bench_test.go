package tamper

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkIntegrate: passes over batches of 500 events and their
// versions, the sink's share of the log's cost per pass (go test -run '^$'
// -bench Integrate -benchmem -cpuprofile cpu.out ./store/tamper/).
// cpu-ns/op is the CPU the test process (the sink) spent in the passes,
// user and system: ns/op is wall time, PostgreSQL's share included, and
// moves with whatever else the machine runs.
func BenchmarkIntegrate(b *testing.B) {
	e := newEnv(b)
	e.in.o.MaxLeaves = 10000
	now := time.Now()
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e.write(e.batch("default", now, 500))
		b.StartTimer()
		before := processCPU(b)
		e.integrate()
		cpu += processCPU(b) - before
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the user and system CPU time of the process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
