package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/options-record/options-record/test/bench/workload"
)

// -together measures two builds at the same time rather than one after
// the other: this virtual machine's speed drifts between windows by more
// than a change may cost, and drift in a shared window hits both sides
// alike. Each side has its own throwaway PostgreSQL, its own sink process
// and its own -workers connections (the same number each, so that each
// sink sees the concurrency it sees alone: the same batches in flight and
// the same group commits; only the CPU is shared). Both are started, warmed
// up and measured over the same window, -rounds times per mix on fresh
// databases, the side started first alternating. The ratio of each round
// is a paired measure; their median and spread are the result.

// round is one window of -together.
type round struct {
	first      string // the side started first: "" (this build) or "base"
	this, base result
}

func benchTogether(ctx context.Context, o options, out io.Writer) error {
	fmt.Fprintf(out, "together with: %s serve (%s), at the same time: each build its own PostgreSQL and its own %d connections, started, warmed up and measured together; %d rounds per mix on fresh databases, the side started first alternating\n",
		o.compareBin, buildDescription(o.compareBin), o.workers, o.rounds)
	runs := 0
	for i, mx := range o.mixes {
		var rounds []round
		for n := range o.rounds {
			if runs > 0 {
				// The previous round left hundreds of MiB of dirty pages whose
				// writeback would slow this round's WAL flushes: flush them first.
				syscall.Sync()
				if err := sleep(ctx, 3*time.Second); err != nil {
					return err
				}
			}
			runs++
			rd, err := runRound(ctx, o, mx, o.rates[i], n, out)
			if err != nil {
				return fmt.Errorf("mix %q, round %d: %w", mx.Name, n+1, err)
			}
			rounds = append(rounds, rd)
			fmt.Fprintf(out, "round %d/%d, %s\n", n+1, o.rounds, roundRatios(rd))
		}
		printTogether(out, mx, rounds)
	}
	return nil
}

// runRound measures both builds over one window. In round n (from 0),
// the compared build starts first when n is even, this build when odd.
func runRound(ctx context.Context, o options, mx workload.Mix, rate float64, n int, out io.Writer) (rd round, err error) {
	type build struct{ label, bin string }
	builds := []build{{"base", o.compareBin}, {"", o.sinkBin}}
	if n%2 == 1 {
		slices.Reverse(builds)
	}
	rd.first = builds[0].label
	// Both prepared at once; each one's report kept apart, then printed in turn.
	var (
		sides [2]*side
		errs  [2]error
		logs  [2]bytes.Buffer
		wg    sync.WaitGroup
	)
	for k, b := range builds {
		wg.Go(func() {
			so := o
			so.sinkBin = b.bin
			sides[k], errs[k] = prepareSide(ctx, so, mx, rate, &logs[k])
		})
	}
	wg.Wait()
	for _, s := range sides {
		if s != nil {
			defer s.close()
		}
	}
	for k, b := range builds {
		fmt.Fprintf(out, "\n== mix %q, round %d/%d: %s; offered load %s each; sink %s (%s)\n", mx.Name, n+1, o.rounds, sideName(b.label), rateString(rate), b.bin, startedOrder(k))
		_, _ = out.Write(logs[k].Bytes())
	}
	if err := errors.Join(errs[:]...); err != nil {
		return rd, err
	}
	for _, s := range sides {
		s.startLoad(ctx)
	}
	for _, s := range sides {
		defer s.stopLoad()
	}
	if err := sleep(ctx, o.warmup); err != nil {
		return rd, err
	}
	for _, s := range sides {
		if err := s.e.sinkAlive(); err != nil {
			return rd, err
		}
		if o.analyze {
			if err := s.e.analyze(ctx); err != nil {
				return rd, err
			}
		}
	}
	self0, err := processCPU(os.Getpid())
	if err != nil {
		return rd, err
	}
	sys0, err := systemCPU()
	if err != nil {
		return rd, err
	}
	for k, s := range sides {
		if err := s.begin(ctx); err != nil {
			for _, b := range sides[:k] {
				b.waits()
			}
			return rd, err
		}
	}
	if err := sleep(ctx, o.duration); err != nil {
		for _, s := range sides {
			s.waits()
		}
		return rd, err
	}
	for k, s := range sides {
		if err := s.end(ctx, time.Now()); err != nil {
			for _, b := range sides[k+1:] {
				b.waits()
			}
			return rd, err
		}
	}
	self1, err := processCPU(os.Getpid())
	if err != nil {
		return rd, err
	}
	sys1, err := systemCPU()
	if err != nil {
		return rd, err
	}
	// The load generator is one process for both sides, and the rest of
	// the machine is theirs to share: both results carry the whole.
	bench := self1 - self0
	other := max(0, (sys1-sys0)-bench-sides[0].r.sinkCPU-sides[0].r.pgCPU-sides[1].r.sinkCPU-sides[1].r.pgCPU)
	for _, s := range sides {
		s.stopLoad()
	}
	for k, s := range sides {
		if err := s.collect(ctx); err != nil {
			return rd, fmt.Errorf("%s: %w", sideName(builds[k].label), err)
		}
	}
	total := sides[0].r.counts.eventsOK + sides[1].r.counts.eventsOK
	for k, s := range sides {
		s.r.sink = builds[k].label
		s.r.benchCPU, s.r.otherCPU = bench, other
		if total > 0 {
			s.r.benchShare = time.Duration(float64(bench) * float64(s.r.counts.eventsOK) / float64(total))
		}
		fmt.Fprintf(out, "\n-- %s, round %d/%d (load generator and rest of the machine: both sides')\n", sideName(builds[k].label), n+1, o.rounds)
		printMix(out, s.r)
		if builds[k].label == "base" {
			rd.base = s.r
		} else {
			rd.this = s.r
		}
	}
	return rd, nil
}

func sideName(label string) string {
	if label == "base" {
		return "the compared build"
	}
	return "this build"
}

func startedOrder(k int) string {
	if k == 0 {
		return "started first"
	}
	return "started second"
}

// metric is one line of the together summary: a value per result, and
// whether the result has it.
type metric struct {
	name  string
	value func(r result) (float64, bool)
	unit  func(v float64) string
}

var togetherMetrics = []metric{
	{"events/s accepted (2xx)", func(r result) (float64, bool) {
		return float64(r.counts.eventsOK) / r.window.Seconds(), r.window > 0
	}, thousands},
	{"sink CPU µs per event", func(r result) (float64, bool) {
		return float64(r.sinkCPU.Microseconds()) / float64(r.counts.eventsOK), r.counts.eventsOK > 0
	}, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	{"PostgreSQL CPU µs per kept event", func(r result) (float64, bool) {
		return float64(r.pgCPU.Microseconds()) / float64(r.counts.keptOK), r.counts.keptOK > 0
	}, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	// What a saturated machine's rate follows alone (the load generator's
	// share aside): its inverse ratio is the sequential rate's ratio.
	{"sink + PostgreSQL CPU µs per event", func(r result) (float64, bool) {
		return float64((r.sinkCPU + r.pgCPU).Microseconds()) / float64(r.counts.eventsOK), r.counts.eventsOK > 0
	}, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	// A saturated machine's rate alone is its CPU over the CPU an event
	// takes: the sink's, PostgreSQL's and the load generator's (the same
	// for both builds: the same bodies). So the ratio of this line is the
	// rate ratio each build would show on the machine alone, which the
	// sequential -compare measures, less the drift between its windows.
	{"events per CPU second (sink, PostgreSQL, load generator)", func(r result) (float64, bool) {
		cpu := r.sinkCPU + r.pgCPU + r.benchShare
		return float64(r.counts.eventsOK) / cpu.Seconds(), cpu > 0
	}, thousands},
	{"WAL bytes per kept event", func(r result) (float64, bool) {
		return float64(r.walBytes) / float64(r.counts.keptOK), r.counts.keptOK > 0
	}, thousands},
	{"stored bytes per kept event", func(r result) (float64, bool) {
		s := r.storage
		return float64(s.eventBytes+s.versionBytes+s.logBytes) / float64(s.events), s.events > 0
	}, thousands},
	{"sink peak RSS (MiB)", func(r result) (float64, bool) {
		return float64(r.sinkPeakRSS) / (1 << 20), r.sinkPeakRSS > 0
	}, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
}

// ratio is this build's value over the compared build's, when both have one.
func (m metric) ratio(rd round) (float64, bool) {
	a, okA := m.value(rd.this)
	b, okB := m.value(rd.base)
	if !okA || !okB || b == 0 {
		return 0, false
	}
	return a / b, true
}

// roundRatios is one round's line: which side started first and this
// build's ratios to the compared build's.
func roundRatios(rd round) string {
	var parts []string
	for _, m := range togetherMetrics {
		if v, ok := m.ratio(rd); ok {
			parts = append(parts, fmt.Sprintf("%s ×%.3f", m.name, v))
		} else {
			parts = append(parts, m.name+" -")
		}
	}
	return fmt.Sprintf("%s started first; this build / the compared build: %s", sideName(rd.first), strings.Join(parts, ", "))
}

// spread is the median and the range of a set of values.
type spread struct {
	n                int
	median, min, max float64
}

// spreadOf summarizes values; n is 0 when there are none.
func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	s := spread{n: len(v), min: v[0], max: v[len(v)-1]}
	if h := len(v) / 2; len(v)%2 == 1 {
		s.median = v[h]
	} else {
		s.median = (v[h-1] + v[h]) / 2
	}
	return s
}

// width is the range as a share of the median: the noise a reader sees.
func (s spread) width() float64 {
	if s.n == 0 || s.median == 0 {
		return math.NaN()
	}
	return (s.max - s.min) / math.Abs(s.median)
}

// printTogether prints a mix's rounds: per metric each build's median
// (min–max), each round's ratio, and the ratios' median and spread.
func printTogether(out io.Writer, mx workload.Mix, rounds []round) {
	fmt.Fprintf(out, "\n== together: mix %q, %d rounds, both builds measured at the same time; ratio = this build / the compared build, paired by round\n", mx.Name, len(rounds))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tthis build, median (min–max)\tthe compared build, median (min–max)\tratio per round\tratio median\tratio min–max (of the median)\t")
	for _, m := range togetherMetrics {
		var this, base, ratios []float64
		var per []string
		for _, rd := range rounds {
			if v, ok := m.value(rd.this); ok {
				this = append(this, v)
			}
			if v, ok := m.value(rd.base); ok {
				base = append(base, v)
			}
			if v, ok := m.ratio(rd); ok {
				ratios = append(ratios, v)
				per = append(per, fmt.Sprintf("×%.3f", v))
			} else {
				per = append(per, "-")
			}
		}
		r := spreadOf(ratios)
		med, rng := "-", "-"
		if r.n > 0 {
			med = fmt.Sprintf("×%.3f", r.median)
			rng = fmt.Sprintf("×%.3f–×%.3f (%.1f%%)", r.min, r.max, 100*r.width())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", m.name, spreadString(spreadOf(this), m.unit), spreadString(spreadOf(base), m.unit),
			strings.Join(per, " "), med, rng)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "(the ratio's range, as a share of its median, is the noise of this measure on this machine; run the same build on both sides to read it alone)")
}

func spreadString(s spread, unit func(float64) string) string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s–%s)", unit(s.median), unit(s.min), unit(s.max))
}
