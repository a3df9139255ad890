// Command bench measures `options-record serve` the way a fleet of
// kube-apiservers loads it: it starts a throwaway PostgreSQL (fsync on) and
// the sink as a separate process, POSTs pre-generated audit.k8s.io/v1
// EventLists over HTTPS from several connections for a bounded time,
// and prints throughput, ack latency, the sink's memory, the CPU of the sink
// and of PostgreSQL, and the storage per kept event. It is a command, not a
// test: `make bench` runs it. With -compare it measures another build on
// the same mixes, one window after the other; with -together as well, both
// builds at the same time, each on its own database (together.go).
//
//	go build -o bin/options-record ./cmd/options-record && go run ./test/bench [flags]
//
// It talks only to 127.0.0.1 (and to PostgreSQL over its private Unix
// socket) and stops every process it started, also on error or Ctrl-C.
package main

import (
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/options-record/options-record/test/bench/workload"
)

type options struct {
	sinkBin string
	// compareBin, when set, is another build (today's release) run on
	// the same mixes in the same run, before sinkBin: the summary shows
	// both and their ratios.
	compareBin string
	// reference runs the minimal reference writer (reference.go) on each
	// mix too: the floor of what storing the same rows costs.
	reference bool
	pgBinDir  string
	pgSet     pgSettings
	mixes     []workload.Mix
	rates     []float64 // per mix; 0: as fast as the sink acknowledges
	workers   int
	batchSize int
	poolSize  int
	warmup    time.Duration
	duration  time.Duration
	keep      bool
	perfDir   string
	analyze   bool
	days      int
	// tamperLog runs each sink that has the tamper-evident log
	// (--log-signing-key-file) with it.
	tamperLog bool
	// together runs -sink and -compare at the same time, each on its own
	// PostgreSQL with its own connections, for rounds windows per mix
	// (together.go).
	together bool
	rounds   int
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "serve" {
		// Started by the bench itself as the reference writer.
		return referenceMain(args[1:], stderr)
	}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills the bench; the children then get their death signals
	}()
	if err := bench(ctx, o, stdout); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var mixList, rateList string
	fs.StringVar(&o.sinkBin, "sink", "bin/options-record", "the options-record `binary` to run as the sink (make bench builds it)")
	fs.StringVar(&o.compareBin, "compare", "", "another options-record `binary` (today's release) measured on the same mixes in the same run, first; the summary prints both and their ratios")
	fs.BoolVar(&o.reference, "reference", true, "also run the minimal reference writer on each mix (decode, the same rows, COPY, nothing else): the floor the summary's second ratio compares with")
	fs.StringVar(&o.pgBinDir, "pg-bin", "", "directory of initdb and postgres (default: the newest /usr/lib/postgresql/*/bin)")
	fs.Var(&o.pgSet, "pg", "a PostgreSQL `setting=value` for the throwaway server, to measure a tuning (repeatable)")
	fs.StringVar(&mixList, "mix", "all,10pct", "mixes to run, in order: all (every event kept), 10pct (10% kept)")
	fs.StringVar(&rateList, "rate", "0", "offered load in events/s, one value for every mix or one per mix (\"9600,36000\"); 0: as fast as acknowledged")
	fs.IntVar(&o.workers, "workers", 6, "concurrent connections (apiservers), each sending one batch at a time")
	fs.IntVar(&o.batchSize, "batch", 400, "events per EventList (the apiserver's default batch size)")
	fs.IntVar(&o.poolSize, "pool", 4, "distinct pre-generated batches per connection, replayed with fresh identities")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "load before measuring")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measured time per mix")
	fs.IntVar(&o.days, "days", 30, "days of (empty) event partitions before today, as a sink with the default 30-day retention holds")
	fs.BoolVar(&o.analyze, "analyze", false, "ANALYZE the record's tables after the warm-up, as autovacuum does after about a minute, to measure that steady state rather than a fresh database's first seconds")
	fs.BoolVar(&o.tamperLog, "tamper-log", true, "run a sink build that has the tamper-evident log with it (a key from its log-key, checkpoints in its directory); the summary shows the log's bytes and integration lag")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directories (database, sink log) for inspection")
	fs.BoolVar(&o.together, "together", false, "with -compare: run both builds at the same time, each on its own PostgreSQL with its own -workers connections, measured over the same window, -rounds times per mix; prints each round's ratios, their median and spread (no reference writer)")
	fs.IntVar(&o.rounds, "rounds", 5, "with -together: windows per mix, the side started first alternating")
	fs.StringVar(&o.perfDir, "perf", "", "record a system-wide CPU profile of each measured window with perf into `dir`")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: bench [flags]\n\nMeasures options-record serve on a throwaway PostgreSQL (fsync on) under audit webhook load.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for key := range strings.SplitSeq(mixList, ",") {
		i := slicesIndex(key)
		if i < 0 {
			return o, fmt.Errorf("-mix: unknown mix %q (want all or 10pct)", key)
		}
		o.mixes = append(o.mixes, workload.Mixes[i])
	}
	for r := range strings.SplitSeq(rateList, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil || v < 0 {
			return o, fmt.Errorf("-rate: %q is not a rate in events/s", r)
		}
		o.rates = append(o.rates, v)
	}
	switch {
	case len(o.rates) == 1:
		for len(o.rates) < len(o.mixes) {
			o.rates = append(o.rates, o.rates[0])
		}
	case len(o.rates) != len(o.mixes):
		return o, fmt.Errorf("-rate: %d values for %d mixes", len(o.rates), len(o.mixes))
	}
	if o.workers < 1 || o.batchSize < 1 || o.poolSize < 1 || o.duration <= 0 || o.warmup < 0 || o.days < 0 {
		return o, errors.New("-workers, -batch, -pool and -duration must be positive")
	}
	if o.together {
		switch {
		case o.compareBin == "":
			return o, errors.New("-together needs -compare: the build to run beside -sink")
		case o.rounds < 1:
			return o, errors.New("-rounds must be positive")
		case o.perfDir != "":
			return o, errors.New("-perf profiles a window of one build: not with -together")
		}
		o.reference = false
	}
	if _, err := os.Stat(o.sinkBin); err != nil {
		return o, fmt.Errorf("-sink: %w (build it: CGO_ENABLED=0 go build -trimpath -o bin/options-record ./cmd/options-record)", err)
	}
	abs, err := filepath.Abs(o.sinkBin)
	if err != nil {
		return o, fmt.Errorf("-sink: %w", err)
	}
	o.sinkBin = abs
	if o.compareBin != "" {
		if o.compareBin, err = filepath.Abs(o.compareBin); err != nil {
			return o, fmt.Errorf("-compare: %w", err)
		}
		if _, err := os.Stat(o.compareBin); err != nil {
			return o, fmt.Errorf("-compare: %w", err)
		}
	}
	return o, nil
}

func slicesIndex(key string) int {
	for i, m := range workload.Mixes {
		if m.Key == strings.TrimSpace(key) {
			return i
		}
	}
	return -1
}

// result is the measurement of one mix.
type result struct {
	mix          workload.Mix
	sink         string // "" for -sink, "base" for -compare
	rate         float64
	pools        *workload.Pools
	window       time.Duration
	counts       counts
	sinkCPU      time.Duration
	pgCPU        time.Duration
	pgProcs      int
	benchCPU     time.Duration
	benchShare   time.Duration // -together: this side's share of benchCPU, by events
	otherCPU     time.Duration // everything else on the machine
	sinkPeakRSS  int64
	storage      storage
	walBytes     int64
	metrics      sinkMetrics
	pg           pgInfo
	perfFile     string
	pgWaits      waitSample
	sinkLogLines int
}

func bench(ctx context.Context, o options, out io.Writer) error {
	m := describeMachine(runtime.NumCPU())
	fmt.Fprintf(out, "options-record bench, %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "machine: %d CPUs (%s), %s RAM, load average before start: %s\n", m.cpus, m.model, m.memory, m.loadavg)
	fmt.Fprintf(out, "sink: %s serve (%s), separate process, --log-level warn, default --webhook-max-in-flight (8)\n", o.sinkBin, buildDescription(o.sinkBin))
	fmt.Fprintf(out, "load: %d connections (apiservers) over HTTPS, one batch in flight each; %d events per EventList; warm-up %s, measured %s per mix\n",
		o.workers, o.batchSize, o.warmup, o.duration)
	fmt.Fprintf(out, "      non-2xx answers are retried like the apiserver does (Retry-After, else 1 s; %d attempts, then the batch is dropped)\n", maxAttempts)
	fmt.Fprintln(out, "database: a throwaway PostgreSQL per mix (store/pgembed) with fsync ON: an ack waits for the WAL flush, durability is part of what is measured")

	if o.together {
		return benchTogether(ctx, o, out)
	}
	if o.compareBin != "" {
		fmt.Fprintf(out, "compared with: %s serve (%s), run first on each mix\n", o.compareBin, buildDescription(o.compareBin))
	}
	if o.reference {
		fmt.Fprintln(out, "reference: the minimal writer (this bench's own `serve`: the sink's decoder, rules and rows, COPY in one transaction per batch, nothing else), run before this build on each mix")
	}
	var results []result
	runs := 0
	for i, mx := range o.mixes {
		var sinks []struct{ label, bin string }
		if o.compareBin != "" {
			sinks = append(sinks, struct{ label, bin string }{"base", o.compareBin})
		}
		if o.reference {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("reference writer: %w", err)
			}
			sinks = append(sinks, struct{ label, bin string }{"reference", self})
		}
		sinks = append(sinks, struct{ label, bin string }{"", o.sinkBin})
		for _, sk := range sinks {
			if runs > 0 {
				// The previous run left hundreds of MiB of dirty pages whose
				// writeback would slow this run's WAL flushes: flush them first.
				syscall.Sync()
				time.Sleep(3 * time.Second)
			}
			runs++
			ro := o
			ro.sinkBin = sk.bin
			name := mx.Name
			if sk.label != "" {
				name += " (" + sk.label + ")"
			}
			fmt.Fprintf(out, "\n== mix %q: %.0f%% of the events in namespaces a rule selects; offered load %s; sink %s\n", name, mx.Kept*100, rateString(o.rates[i]), sk.bin)
			r, err := runMix(ctx, ro, mx, o.rates[i], out)
			if err != nil {
				return fmt.Errorf("mix %q: %w", name, err)
			}
			r.sink = sk.label
			results = append(results, r)
			printMix(out, r)
		}
	}
	printSummary(out, o, results)
	return nil
}

// buildDescription says which source the sink binary was built from.
func buildDescription(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "build info unavailable: " + err.Error()
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " with uncommitted changes"
			}
		}
	}
	if rev == "" {
		// Built with -buildvcs=false: describe the work tree it was most
		// likely built from.
		if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
			return fmt.Sprintf("work tree %s, %s", strings.TrimSpace(string(out)), info.GoVersion)
		}
		return info.GoVersion + ", no VCS information"
	}
	return fmt.Sprintf("commit %.12s%s, %s", rev, modified, info.GoVersion)
}

func rateString(r float64) string {
	if r == 0 {
		return "unlimited (closed loop)"
	}
	return fmt.Sprintf("%.0f events/s", r)
}

func runMix(ctx context.Context, o options, mx workload.Mix, rate float64, out io.Writer) (r result, err error) {
	s, err := prepareSide(ctx, o, mx, rate, out)
	if err != nil {
		r.mix, r.rate = mx, rate
		return r, err
	}
	defer s.close()
	s.startLoad(ctx)

	if err := sleep(ctx, o.warmup); err != nil {
		return s.r, err
	}
	if err := s.e.sinkAlive(); err != nil {
		return s.r, err
	}
	if o.analyze {
		t := time.Now()
		if err := s.e.analyze(ctx); err != nil {
			return s.r, err
		}
		fmt.Fprintf(out, "ANALYZE events, object_versions after the warm-up: %s\n", time.Since(t).Round(time.Millisecond))
	}
	self0, err := processCPU(os.Getpid())
	if err != nil {
		return s.r, err
	}
	sys0, err := systemCPU()
	if err != nil {
		return s.r, err
	}
	perf := startPerf(o.perfDir, mx, out)
	if err := s.begin(ctx); err != nil {
		perf.stop()
		return s.r, err
	}
	if err := sleep(ctx, o.duration); err != nil {
		perf.stop()
		s.waits()
		return s.r, err
	}
	t1 := time.Now()
	s.r.perfFile = perf.stop()
	if err := s.end(ctx, t1); err != nil {
		return s.r, err
	}
	self1, err := processCPU(os.Getpid())
	if err != nil {
		return s.r, err
	}
	sys1, err := systemCPU()
	if err != nil {
		return s.r, err
	}
	s.r.benchCPU = self1 - self0
	s.r.otherCPU = max(0, (sys1-sys0)-s.r.sinkCPU-s.r.pgCPU-s.r.benchCPU)
	err = s.collect(ctx)
	return s.r, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// perfRun is an optional `perf record -a` of the measured window.
type perfRun struct {
	cmd  *exec.Cmd
	file string
}

func startPerf(dir string, mx workload.Mix, out io.Writer) *perfRun {
	if dir == "" {
		return &perfRun{}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(out, "perf: %v\n", err)
		return &perfRun{}
	}
	file := filepath.Join(dir, "perf-"+mx.Key+".data")
	cmd := exec.Command("perf", "record", "-a", "-g", "-F", "499", "-o", file)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(out, "perf: %v (no profile)\n", err)
		return &perfRun{}
	}
	return &perfRun{cmd: cmd, file: file}
}

func (p *perfRun) stop() string {
	if p.cmd == nil {
		return ""
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
	return p.file
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func thousands(n float64) string {
	s := strconv.FormatInt(int64(n+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func non2xxString(c counts) string {
	if len(c.non2xx) == 0 {
		return "none"
	}
	var parts []string
	for code, n := range c.non2xx {
		name := strconv.Itoa(code)
		if code == 0 {
			name = "network error"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func printMix(out io.Writer, r result) {
	c := r.counts
	secs := r.window.Seconds()
	fmt.Fprintf(out, "measured %.2f s: %s batches acknowledged (2xx) over %s, %s events/s accepted, %s events/s kept (sink's answers)\n",
		secs, thousands(float64(c.batchesOK)), c.proto, thousands(float64(c.eventsOK)/secs), thousands(float64(c.keptOK)/secs))
	fmt.Fprintf(out, "  ack latency per POST (2xx): p50 %s, p90 %s, p99 %s, max %s\n",
		ms(quantile(c.latencies, .5)), ms(quantile(c.latencies, .9)), ms(quantile(c.latencies, .99)), ms(quantile(c.latencies, 1)))
	fmt.Fprintf(out, "  non-2xx answers: %s; retries sent: %d; batches dropped after %d attempts: %d\n", non2xxString(c), c.retries, maxAttempts, c.dropped)
	fmt.Fprintf(out, "  CPU in the window: sink %.1f s (%.2f cores), PostgreSQL %.1f s (%.2f cores, %d processes), load generator %.1f s (%.2f cores), rest of the machine %.1f s (%.2f cores)\n",
		r.sinkCPU.Seconds(), r.sinkCPU.Seconds()/secs, r.pgCPU.Seconds(), r.pgCPU.Seconds()/secs, r.pgProcs, r.benchCPU.Seconds(), r.benchCPU.Seconds()/secs,
		r.otherCPU.Seconds(), r.otherCPU.Seconds()/secs)
	if other := r.otherCPU.Seconds() / secs; other > 0.1*float64(runtime.NumCPU()) {
		fmt.Fprintf(out, "  WARNING: other processes used %.2f of the %d CPUs during the window: these numbers are lower than the machine can do\n", other, runtime.NumCPU())
	}
	fmt.Fprintf(out, "  sink peak RSS (VmHWM): %.1f MiB\n", float64(r.sinkPeakRSS)/(1<<20))
	s := r.storage
	perKept := 0.0
	if s.events > 0 {
		perKept = float64(s.eventBytes+s.versionBytes+s.logBytes) / float64(s.events)
	}
	fmt.Fprintf(out, "  stored: %s events (%d partitions, %.1f MiB with indexes and TOAST), %s object versions (%.1f MiB): %s bytes per kept event\n",
		thousands(float64(s.events)), s.partitions, float64(s.eventBytes)/(1<<20), thousands(float64(s.versions)), float64(s.versionBytes)/(1<<20), thousands(perKept))
	if s.events > 0 {
		fmt.Fprintf(out, "  where the bytes are (per kept event):")
		for _, p := range s.parts {
			fmt.Fprintf(out, " %s %s;", p.name, thousands(float64(p.bytes)/float64(s.events)))
		}
		fmt.Fprintln(out)
	}
	if s.logged {
		fmt.Fprintf(out, "  tamper-evident log: %.1f MiB (%s bytes per kept event, in the total above), log_pending and log_pending_batches %.1f MiB (empty now: its peak backlog, reused after a vacuum), integration lag (ingested_at to integrated_at) p50 %s, p99 %s, max %s\n",
			float64(s.logBytes)/(1<<20), thousands(float64(s.logBytes)/float64(max(s.events, 1))), float64(s.pendingBytes)/(1<<20), ms(s.lagP50), ms(s.lagP99), ms(s.lagMax))
	}
	fmt.Fprintf(out, "  sequential scans (whole run): events partitions %s (%s rows read), object_versions %s (%s rows read)\n",
		thousands(float64(s.eventSeqScans)), thousands(float64(s.eventSeqRows)), thousands(float64(s.versionSeqScans)), thousands(float64(s.versionSeqRows)))
	if c.keptOK > 0 {
		fmt.Fprintf(out, "  WAL written in the window: %.1f MiB, %s bytes per kept event\n", float64(r.walBytes)/(1<<20), thousands(float64(r.walBytes)/float64(c.keptOK)))
	}
	var drops []string
	for reason, n := range r.metrics.dropped {
		if n > 0 {
			drops = append(drops, fmt.Sprintf("%s %s", reason, thousands(n)))
		}
	}
	slices.Sort(drops)
	if len(drops) == 0 {
		drops = []string{"none"}
	}
	fmt.Fprintf(out, "  sink counters (whole run): received %s, kept %s, dropped: %s; sink log: %d lines at warn or above\n",
		thousands(r.metrics.received), thousands(r.metrics.kept), strings.Join(drops, ", "), r.sinkLogLines)
	if w := r.pgWaits.String(); w != "" {
		fmt.Fprintf(out, "  PostgreSQL backends (sampled every 100 ms while writing): %s\n", w)
	}
	if r.perfFile != "" {
		fmt.Fprintf(out, "  perf profile: %s (perf report -i %s --no-children --sort comm,dso,sym)\n", r.perfFile, r.perfFile)
	}
}

func printSummary(out io.Writer, o options, rs []result) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(out, "\n== summary (the issue's targets are for reference; p99 target applies at 80% of the target rate, see -rate)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(r result) string, target string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t", f(r))
		}
		fmt.Fprintf(tw, "%s\t\n", target)
	}
	row("", func(r result) string {
		if r.sink != "" {
			return r.mix.Name + " (" + r.sink + ")"
		}
		return r.mix.Name
	}, "target")
	row("offered load (events/s)", func(r result) string {
		if r.rate == 0 {
			return "unlimited"
		}
		return thousands(r.rate)
	}, "")
	row("events/s accepted (2xx)", func(r result) string { return thousands(float64(r.counts.eventsOK) / r.window.Seconds()) },
		targetList(rs, func(m workload.Mix) string { return "≥ " + thousands(m.Target) }))
	row("kept events/s", func(r result) string { return thousands(float64(r.counts.keptOK) / r.window.Seconds()) }, "")
	row("batches (2xx)", func(r result) string { return thousands(float64(r.counts.batchesOK)) }, "")
	row("ack p50", func(r result) string { return ms(quantile(r.counts.latencies, .5)) }, "")
	row("ack p90", func(r result) string { return ms(quantile(r.counts.latencies, .9)) }, "")
	row("ack p99", func(r result) string { return ms(quantile(r.counts.latencies, .99)) }, "≤ 250 ms at 80% of target rate")
	row("ack max", func(r result) string { return ms(quantile(r.counts.latencies, 1)) }, "")
	row("non-2xx / retries / dropped", func(r result) string {
		n := 0
		for _, v := range r.counts.non2xx {
			n += v
		}
		return fmt.Sprintf("%d / %d / %d", n, r.counts.retries, r.counts.dropped)
	}, "")
	row("sink peak RSS", func(r result) string { return fmt.Sprintf("%.0f MiB", float64(r.sinkPeakRSS)/(1<<20)) }, "≤ 256 MiB")
	row("sink CPU (cores)", func(r result) string { return fmt.Sprintf("%.2f", r.sinkCPU.Seconds()/r.window.Seconds()) }, "")
	row("PostgreSQL CPU (cores)", func(r result) string { return fmt.Sprintf("%.2f", r.pgCPU.Seconds()/r.window.Seconds()) }, "")
	row("load generator CPU (cores)", func(r result) string { return fmt.Sprintf("%.2f", r.benchCPU.Seconds()/r.window.Seconds()) }, "")
	row("other processes CPU (cores)", func(r result) string { return fmt.Sprintf("%.2f", r.otherCPU.Seconds()/r.window.Seconds()) }, "")
	row("sink CPU µs per event", func(r result) string { return perEvent(r.sinkCPU, r.counts.eventsOK) }, "")
	row("PostgreSQL CPU µs per kept event", func(r result) string { return perEvent(r.pgCPU, r.counts.keptOK) }, "")
	row("stored bytes per kept event", func(r result) string {
		if r.storage.events == 0 {
			return "-"
		}
		return thousands(float64(r.storage.eventBytes+r.storage.versionBytes+r.storage.logBytes) / float64(r.storage.events))
	}, "≤ 6,144")
	row("of which the tamper log's", func(r result) string {
		if r.storage.events == 0 || !r.storage.logged {
			return "-"
		}
		return thousands(float64(r.storage.logBytes) / float64(r.storage.events))
	}, "")
	row("integration lag p50 / p99", func(r result) string {
		if !r.storage.logged {
			return "-"
		}
		return ms(r.storage.lagP50) + " / " + ms(r.storage.lagP99)
	}, "")
	row("WAL bytes per kept event", func(r result) string {
		if r.counts.keptOK == 0 {
			return "-"
		}
		return thousands(float64(r.walBytes) / float64(r.counts.keptOK))
	}, "")
	_ = tw.Flush()
	fmt.Fprintf(out, "(%d CPUs shared by the load generator, the sink and PostgreSQL)\n", runtime.NumCPU())
	printRatios(out, rs)
}

// printRatios compares each mix's run of -sink with its run of -compare
// (today's release) and with the reference writer's.
func printRatios(out io.Writer, rs []result) {
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("×%.2f", a/b)
	}
	rate := func(r result) float64 { return float64(r.counts.eventsOK) / r.window.Seconds() }
	stored := func(r result) float64 {
		if r.storage.events == 0 {
			return 0
		}
		return float64(r.storage.eventBytes+r.storage.versionBytes+r.storage.logBytes) / float64(r.storage.events)
	}
	wal := func(r result) float64 {
		if r.counts.keptOK == 0 {
			return 0
		}
		return float64(r.walBytes) / float64(r.counts.keptOK)
	}
	pg := func(r result) float64 {
		if r.counts.keptOK == 0 {
			return 0
		}
		return float64(r.pgCPU.Microseconds()) / float64(r.counts.keptOK)
	}
	for _, this := range rs {
		if this.sink != "" {
			continue
		}
		for _, other := range rs {
			if other.mix.Key != this.mix.Key || other.sink == "" {
				continue
			}
			name := "the compared build"
			if other.sink == "reference" {
				name = "the reference writer"
			}
			fmt.Fprintf(out, "%s, this build / %s: events/s %s, stored bytes per kept event %s, WAL per kept event %s, PostgreSQL CPU per kept event %s, peak RSS %s\n",
				this.mix.Name, name, ratio(rate(this), rate(other)), ratio(stored(this), stored(other)), ratio(wal(this), wal(other)),
				ratio(pg(this), pg(other)), ratio(float64(this.sinkPeakRSS), float64(other.sinkPeakRSS)))
		}
	}
}

func perEvent(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(d.Microseconds())/float64(n))
}

func targetList(rs []result, f func(m workload.Mix) string) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, f(r.mix))
	}
	return strings.Join(parts, " / ")
}

// pgSettings collects -pg name=value flags.
type pgSettings map[string]string

func (p *pgSettings) String() string { return fmt.Sprint(map[string]string(*p)) }

func (p *pgSettings) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want setting=value, got %q", v)
	}
	if *p == nil {
		*p = pgSettings{}
	}
	(*p)[name] = value
	return nil
}
