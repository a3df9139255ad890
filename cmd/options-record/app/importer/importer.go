// Package importer runs audit log files through the ingest pipeline for
// `options-record import`, in batches, and reports on it: a progress bar
// while it reads, a summary at the end. The files are decoded by package
// auditsink/decode (LogFile), and the pipeline is the webhook's: import is an
// adapter in front of it, never a second pipeline. It never opens the
// database or loads the rules: package app wires them.
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
)

// Processor filters and stores a batch of events: auditsink.Pipeline.
type Processor interface {
	Process(ctx context.Context, cluster string, events []auditv1.Event, undecodable map[string]int) (auditsink.Outcome, error)
}

// Options configure an import.
type Options struct {
	Cluster   string    // the cluster the events are recorded for
	BatchSize int       // events stored per transaction
	Progress  io.Writer // progress bar; nil for none
}

// Files runs the audit log files through pipe in batches of BatchSize
// events and returns what became of them. It stops at the first file it
// cannot read or parse, after storing the batches before the bad spot and
// nothing of the batch it could not fully decode.
func Files(ctx context.Context, pipe Processor, files []string, o Options) (auditsink.Outcome, error) {
	var total auditsink.Outcome
	for _, f := range files {
		if err := file(ctx, pipe, o, f, &total); err != nil {
			return total, err
		}
	}
	return total, nil
}

func file(ctx context.Context, pipe Processor, o Options, path string, total *auditsink.Outcome) error {
	f, err := decode.OpenLogFile(path, time.Now())
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	bar := newProgress(o.Progress, path, f.Size())
	defer bar.done()

	var batch []auditv1.Event
	skipped := map[string]int{}
	flush := func() error {
		out, err := pipe.Process(ctx, o.Cluster, batch, skipped)
		if err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
		total.Add(out)
		batch, skipped = batch[:0], map[string]int{}
		return nil
	}
	for {
		events, bad, err := f.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// err names the file and the line: "import bad.log:4: not JSON: ...".
			return fmt.Errorf("import %w (the %d events of the unfinished batch were not stored)", err, len(batch))
		}
		for r, n := range bad {
			skipped[r] += n
		}
		batch = append(batch, events...)
		if len(batch) >= o.BatchSize {
			if err := flush(); err != nil {
				return err
			}
		}
		bar.update(f.BytesRead())
	}
	if len(batch) > 0 || len(skipped) > 0 {
		return flush()
	}
	return nil
}

// PrintSummary prints what an import read, kept, dropped and stored.
func PrintSummary(w io.Writer, o *auditsink.Outcome) {
	if w == nil {
		return
	}
	dropped := 0
	for _, n := range o.Dropped {
		dropped += n
	}
	fmt.Fprintf(w, "read %d events: kept %d, dropped %d\n", o.Received, o.Kept, dropped)
	fmt.Fprintf(w, "stored %d events and %d object versions (%d already stored, %d no-op changes)\n",
		o.Written.Events, o.Written.Versions, o.Written.DuplicateEvents, o.Written.NoopVersions)
	printCounts(w, "dropped", o.Dropped)
	printCounts(w, "no version derived", o.Skipped)
}

func printCounts(w io.Writer, label string, m map[string]int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s %-14s %d\n", label, strings.ReplaceAll(k, " ", "_"), m[k])
	}
}

// progress draws a one-line progress bar on a terminal.
type progress struct {
	w    io.Writer
	name string
	size int64
	last time.Time
}

func newProgress(w io.Writer, name string, size int64) *progress {
	return &progress{w: w, name: name, size: size}
}

func (p *progress) update(n int64) {
	if p.w == nil || p.size == 0 || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	const width = 30
	done := int(float64(width) * float64(n) / float64(p.size))
	done = min(max(done, 0), width)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%%", p.name, strings.Repeat("=", done), strings.Repeat(" ", width-done), 100*float64(n)/float64(p.size))
}

func (p *progress) done() {
	if p.w != nil && !p.last.IsZero() {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", len(p.name)+40))
	}
}
