package tamper

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIntegrate: passes over batches of 500 events and their
// versions, the sink's share of the log's cost per pass (go test -run '^$'
// -bench Integrate -benchmem -cpuprofile cpu.out ./store/tamper/).
// cpu-ns/op is the CPU the test process (the sink) spent in the passes,
// user and system (sys-ns/op: the system's share, mostly the checkpoint
// files' writes and fsyncs, once a pass whatever its size): ns/op is wall
// time, PostgreSQL's share included, and moves with whatever else the
// machine runs. The garbage of each batch written is collected before
// its pass.
func BenchmarkIntegrate(b *testing.B) {
	e := newEnv(b)
	e.in.o.MaxLeaves = 10000
	now := time.Now()
	var user, sys time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e.write(e.batch("default", now, 500))
		runtime.GC() // the batch's garbage is not the pass's
		b.StartTimer()
		u0, s0 := processCPU(b)
		e.integrate()
		u1, s1 := processCPU(b)
		user, sys = user+u1-u0, sys+s1-s0
	}
	b.ReportMetric(float64((user+sys).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N), "sys-ns/op")
}

// processCPU is the user and system CPU time of the process so far.
func processCPU(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
