package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/test/bench/workload"
)

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		name             string
		in               []float64
		n                int
		median, min, max float64
	}{
		{"odd, unsorted", []float64{0.9, 0.8, 1.1}, 3, 0.9, 0.8, 1.1},
		{"even: the mean of the middle two", []float64{1.0, 0.8, 0.9, 1.2}, 4, 0.95, 0.8, 1.2},
		{"one", []float64{0.85}, 1, 0.85, 0.85, 0.85},
		{"none", nil, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			s := spreadOf(in)
			if s.n != tc.n || !near(s.median, tc.median) || s.min != tc.min || s.max != tc.max {
				t.Errorf("spreadOf(%v) = %+v, want n %d median %v min %v max %v", tc.in, s, tc.n, tc.median, tc.min, tc.max)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Errorf("spreadOf sorted its argument: %v", in)
				}
			}
		})
	}
	if w := spreadOf([]float64{0.95, 1.0, 1.05}).width(); !near(w, 0.1) {
		t.Errorf("width of 0.95–1.05 around 1.0 = %v, want 0.1", w)
	}
	if w := spreadOf(nil).width(); !math.IsNaN(w) {
		t.Errorf("width of nothing = %v, want NaN", w)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// fakeResult is a window of 10 s with the given counts and CPU.
func fakeResult(events, kept int, sinkCPU, pgCPU time.Duration, wal int64) result {
	return result{
		mix:         workload.Mixes[0],
		window:      10 * time.Second,
		counts:      counts{eventsOK: events, keptOK: kept},
		sinkCPU:     sinkCPU,
		pgCPU:       pgCPU,
		walBytes:    wal,
		sinkPeakRSS: 200 << 20,
		storage:     storage{events: int64(kept), eventBytes: int64(kept) * 3000, versionBytes: int64(kept) * 1000},
	}
}

func TestRoundRatios(t *testing.T) {
	rd := round{
		first: "base",
		// this build: 80,000 events in 10 s, 50 µs sink and 70 µs PostgreSQL per event.
		this: fakeResult(80000, 80000, 4*time.Second, 5600*time.Millisecond, 80000*4800),
		// the compared build: 100,000 events, 40 and 60 µs.
		base: fakeResult(100000, 100000, 4*time.Second, 6*time.Second, 100000*4200),
	}
	rd.this.benchShare, rd.base.benchShare = 800*time.Millisecond, time.Second
	want := map[string]float64{
		"events/s accepted (2xx)":            0.8,
		"sink CPU µs per event":              50.0 / 40,
		"PostgreSQL CPU µs per kept event":   70.0 / 60,
		"sink + PostgreSQL CPU µs per event": 120.0 / 100,
		// 80,000 events in 9.6 + 0.8 s against 100,000 in 10 + 1 s.
		"events per CPU second (sink, PostgreSQL, load generator)": (80000 / 10.4) / (100000 / 11.0),
		"WAL bytes per kept event":                                 4800.0 / 4200,
		"stored bytes per kept event":                              1,
		"sink peak RSS (MiB)":                                      1,
	}
	for _, m := range togetherMetrics {
		got, ok := m.ratio(rd)
		w, known := want[m.name]
		if !known {
			t.Errorf("metric %q has no expectation in this test", m.name)
			continue
		}
		if !ok || !near(got, w) {
			t.Errorf("%s: ratio %v (%v), want %v", m.name, got, ok, w)
		}
	}
	line := roundRatios(rd)
	for _, s := range []string{"the compared build started first", "events/s accepted (2xx) ×0.800", "sink CPU µs per event ×1.250"} {
		if !strings.Contains(line, s) {
			t.Errorf("round line %q lacks %q", line, s)
		}
	}
	// A side with no kept events has no per-kept-event ratio.
	rd.base = fakeResult(0, 0, time.Second, time.Second, 0)
	if _, ok := togetherMetrics[2].ratio(rd); ok {
		t.Error("a ratio over a side that kept nothing")
	}
	if line := roundRatios(rd); !strings.Contains(line, "PostgreSQL CPU µs per kept event -") {
		t.Errorf("round line %q does not mark the missing ratio", line)
	}
}

func TestPrintTogether(t *testing.T) {
	base := fakeResult(100000, 100000, 4*time.Second, 6*time.Second, 100000*4200)
	var rounds []round
	// Rates of this build: 90,000, 95,000, 100,000 events against 100,000.
	for i, events := range []int{95000, 90000, 100000} {
		first := "base"
		if i%2 == 1 {
			first = ""
		}
		rounds = append(rounds, round{first: first, this: fakeResult(events, events, 4*time.Second, 6*time.Second, int64(events)*4200), base: base})
	}
	var b bytes.Buffer
	printTogether(&b, workload.Mixes[0], rounds)
	out := b.String()
	var rateLine string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "events/s accepted") {
			rateLine = line
		}
	}
	for _, s := range []string{
		"9,500 (9,000–10,000)",   // this build's median and range
		"10,000 (10,000–10,000)", // the compared build's
		"×0.950 ×0.900 ×1.000",   // each round, in order
		"×0.950",                 // the median
		"×0.900–×1.000 (10.5%)",  // the spread, 0.1 of 0.95
	} {
		if !strings.Contains(rateLine, s) {
			t.Errorf("events/s line %q lacks %q; all:\n%s", rateLine, s, out)
		}
	}
	if !strings.Contains(out, `mix "all kept", 3 rounds`) {
		t.Errorf("no heading with the mix and the rounds:\n%s", out)
	}
}

func TestParseFlagsTogether(t *testing.T) {
	dir := t.TempDir()
	sink := filepath.Join(dir, "options-record")
	base := filepath.Join(dir, "release")
	for _, f := range []string{sink, base} {
		if err := os.WriteFile(f, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o, err := parseFlags([]string{"-sink", sink, "-compare", base, "-together", "-rounds", "4", "-mix", "all"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.together || o.rounds != 4 || o.reference || o.compareBin != base {
		t.Errorf("parsed %+v: want together, 4 rounds, no reference writer, -compare %s", o, base)
	}
	if o, err := parseFlags([]string{"-sink", sink, "-compare", base}, io.Discard); err != nil || o.together || !o.reference {
		t.Errorf("without -together: %+v, %v; want the sequential comparison with the reference writer", o, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-sink", sink, "-together"}, "-together needs -compare"},
		{[]string{"-sink", sink, "-compare", base, "-together", "-rounds", "0"}, "-rounds must be positive"},
		{[]string{"-sink", sink, "-compare", base, "-together", "-perf", dir}, "not with -together"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
