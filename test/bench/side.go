package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/options-record/options-record/test/bench/workload"
)

// side is one sink under load: its throwaway PostgreSQL, the sink process,
// its load generator's connections, and the measurement of its window.
// runMix runs one side at a time; -together runs two at once.
type side struct {
	o       options
	r       result
	e       *env
	ws      []*worker
	stop    chan struct{}
	done    chan struct{}
	stopped bool
	// At the window's start.
	sink0, pg0 time.Duration
	wal0       int64
	t0         time.Time
	waits      func() waitSample
}

// prepareSide generates the side's bodies (nothing generated while the
// clock runs), starts its PostgreSQL and sink, and makes its connections.
// On error everything started is stopped again.
func prepareSide(ctx context.Context, o options, mx workload.Mix, rate float64, out io.Writer) (_ *side, err error) {
	s := &side{o: o}
	s.r.mix, s.r.rate = mx, rate
	if s.r.pools, err = workload.Generate(mx, o.workers, o.poolSize, o.batchSize); err != nil {
		return nil, err
	}
	p := s.r.pools
	fmt.Fprintf(out, "generated %d distinct batches (%d events, %.1f MiB, %.0f bytes per event, %.1f%% kept) in %s\n",
		o.workers*o.poolSize, p.Events, float64(p.Bytes)/(1<<20), float64(p.Bytes)/float64(p.Events),
		100*float64(p.Kept)/float64(p.Events), p.GeneratedIn.Round(time.Millisecond))

	if s.e, err = startEnv(ctx, o); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.e.close()
		}
	}()
	if s.r.pg, err = s.e.describePG(ctx); err != nil {
		return nil, err
	}
	if err := s.e.keepDays(ctx, o.days); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "record: %d days of event partitions before today (-days), as the default 30-day retention keeps\n", o.days)
	fmt.Fprintf(out, "PostgreSQL %s (pid %d): %s\n", s.r.pg.version, s.e.pgPID, s.r.pg.settings)
	fmt.Fprintf(out, "sink pid %d, webhook %s, metrics %s\n", s.e.sink.Process.Pid, strings.TrimSuffix(s.e.webhook, "?timeout=30s"), s.e.metrics)

	s.ws = make([]*worker, o.workers)
	for i := range s.ws {
		c, err := newClient(s.e.caFile)
		if err != nil {
			return nil, err
		}
		s.ws[i] = &worker{client: c, url: s.e.webhook, auth: "Bearer " + s.e.token, pool: p.PerWorker[i]}
	}
	return s, nil
}

// startLoad starts the side's connections.
func (s *side) startLoad(ctx context.Context) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	p := newPacer(s.r.rate, s.o.batchSize)
	for _, w := range s.ws {
		go func() {
			defer func() { s.done <- struct{}{} }()
			w.run(ctx, s.stop, p)
		}()
	}
}

// stopLoad tells the connections to stop after the batch in hand.
func (s *side) stopLoad() {
	if s.stop == nil || s.stopped {
		return
	}
	s.stopped = true
	close(s.stop)
}

// waitLoad stops the connections and waits for them to finish their batch.
func (s *side) waitLoad() {
	if s.stop == nil || s.done == nil {
		return
	}
	s.stopLoad()
	deadline := time.After(90 * time.Second)
	for range s.ws {
		select {
		case <-s.done:
		case <-deadline:
			fmt.Fprintln(os.Stderr, "bench: a connection did not finish its batch in 90 s")
			s.done = nil
			return
		}
	}
	s.done = nil
}

// close stops the load, the sink and PostgreSQL.
func (s *side) close() {
	s.waitLoad()
	s.e.close()
}

// begin reads the side's counters at the window's start.
func (s *side) begin(ctx context.Context) (err error) {
	if s.sink0, err = processCPU(s.e.sink.Process.Pid); err != nil {
		return err
	}
	if s.pg0, _, err = treeCPU(s.e.pgPID); err != nil {
		return err
	}
	if s.wal0, err = s.e.walLSN(ctx); err != nil {
		return err
	}
	s.waits = s.e.sampleWaits(ctx)
	s.t0 = time.Now()
	return nil
}

// end closes the side's window at t1 and reads its counters.
func (s *side) end(ctx context.Context, t1 time.Time) error {
	s.r.window = t1.Sub(s.t0)
	s.r.pgWaits = s.waits()
	sink1, err := processCPU(s.e.sink.Process.Pid)
	if err != nil {
		return fmt.Errorf("%w: %w", err, s.e.sinkAlive())
	}
	pg1, n, err := treeCPU(s.e.pgPID)
	if err != nil {
		return err
	}
	wal1, err := s.e.walLSN(ctx)
	if err != nil {
		return err
	}
	s.r.sinkCPU, s.r.pgCPU, s.r.pgProcs, s.r.walBytes = sink1-s.sink0, pg1-s.pg0, n, wal1-s.wal0
	return nil
}

// collect stops the load and reads what the window did: the POSTs that
// completed in it, the sink's peak memory and counters, and the storage.
func (s *side) collect(ctx context.Context) (err error) {
	s.waitLoad()
	s.r.counts = summarize(s.ws, s.t0, s.t0.Add(s.r.window))
	if s.r.counts.workerError != nil {
		return s.r.counts.workerError
	}
	if err := s.e.sinkAlive(); err != nil {
		return err
	}
	if s.r.sinkPeakRSS, err = peakRSS(s.e.sink.Process.Pid); err != nil {
		return err
	}
	if s.r.metrics, err = s.e.scrape(); err != nil {
		return err
	}
	if s.r.storage, err = s.e.storage(ctx); err != nil {
		return err
	}
	if b, err := os.ReadFile(s.e.sinkLog); err == nil {
		s.r.sinkLogLines = strings.Count(string(b), "\n")
	}
	return nil
}
