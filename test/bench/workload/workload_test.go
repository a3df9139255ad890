package workload

import (
	"context"
	"testing"
	"time"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store/model"
)

// nopWriter stands in for PostgreSQL: the benchmarks measure the sink's own
// work on a batch (decode, filter, convert), not the database's.
type nopWriter struct{}

func (nopWriter) WriteBatch(_ context.Context, b *model.Batch) (model.WriteResult, error) {
	return model.WriteResult{Events: len(b.Events), Versions: len(b.Versions)}, nil
}

func benchRules(tb testing.TB) *filter.Rules {
	tb.Helper()
	objs, err := filter.Parse([]byte(RulesYAML))
	if err != nil {
		tb.Fatal(err)
	}
	rules, statuses := filter.Compile(objs, filter.Options{})
	for _, s := range statuses {
		if !s.Ready {
			tb.Fatalf("rule %s/%s: %s", s.Namespace, s.Name, s.Message)
		}
	}
	return rules
}

// TestWorkload checks that the generated batches are what the bench claims:
// valid EventLists, the mix's fraction kept with no event dropped as noise,
// one object version per kept event, and new identities in every round.
func TestWorkload(t *testing.T) {
	rules := benchRules(t)
	for _, m := range Mixes {
		t.Run(m.Key, func(t *testing.T) {
			p, err := Generate(m, 2, 2, 400)
			if err != nil {
				t.Fatal(err)
			}
			if want := int(float64(p.Events) * m.Kept); p.Kept != want {
				t.Errorf("kept %d of %d events, want %d", p.Kept, p.Events, want)
			}
			if per := p.Bytes / p.Events; per < 6000 || per > 10000 {
				t.Errorf("%d bytes per event, want about 8 KB", per)
			}
			pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, nopWriter{}, nil, nil)
			keys := map[string]bool{}
			for round := 1; round <= 2; round++ {
				for _, ts := range p.PerWorker {
					for _, tpl := range ts {
						tpl.Stamp(round, time.Now())
						// The pipeline cuts managedFields in the body's bytes: the
						// template stays the load generator's.
						evs, bad, err := decode.EventList(append([]byte(nil), tpl.Body...), time.Now())
						if err != nil || len(bad) > 0 {
							t.Fatalf("decode: %v, skipped %v", err, bad)
						}
						for i := range evs {
							k := string(model.EventKey("default", &evs[i]))
							if keys[k] {
								t.Fatalf("event %s repeats an identity", evs[i].AuditID)
							}
							keys[k] = true
						}
						out, err := pipe.Process(context.Background(), "default", evs, nil)
						if err != nil {
							t.Fatal(err)
						}
						if out.Kept != tpl.Kept || out.Written.Versions != tpl.Kept || len(out.Skipped) > 0 {
							t.Fatalf("kept %d, versions %d, skipped %v; want %d kept with one version each (dropped: %v)",
								out.Kept, out.Written.Versions, out.Skipped, tpl.Kept, out.Dropped)
						}
						for reason := range out.Dropped {
							if reason != string(filter.DropNoRule) {
								t.Fatalf("dropped for %s: %v", reason, out.Dropped)
							}
						}
					}
				}
			}
		})
	}
}

// BenchmarkPipeline is the sink's CPU per batch without PostgreSQL, TLS or
// HTTP: decoding the EventList (decode.EventList) and filtering and
// converting the events into rows (Pipeline.Process with a writer that
// stores nothing), on the bench's own batches. Profile it with
//
//	go test ./test/bench/workload -run '^$' -bench Pipeline -cpuprofile cpu.out
//	go tool pprof -top -nodecount 40 workload.test cpu.out
func BenchmarkPipeline(b *testing.B) {
	rules := benchRules(b)
	for _, m := range Mixes {
		p, err := Generate(m, 1, 8, 400)
		if err != nil {
			b.Fatal(err)
		}
		ts := p.PerWorker[0]
		for _, t := range ts {
			t.Stamp(1, time.Now())
		}
		pipe := auditsink.NewPipeline(auditsink.StaticRules{Rules: rules}, nopWriter{}, nil, nil)
		ctx := context.Background()

		b.Run(m.Key+"/decode", func(b *testing.B) {
			b.SetBytes(int64(p.Bytes / len(ts)))
			for i := 0; b.Loop(); i++ {
				if _, _, err := decode.EventList(ts[i%len(ts)].Body, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*400), "µs/event")
		})
		// The pipeline rewrites the body's bytes (it cuts managedFields in
		// place), so each iteration processes a fresh copy of a body; the
		// filter and conversion cost is /all less /decode.
		b.Run(m.Key+"/all", func(b *testing.B) {
			b.SetBytes(int64(p.Bytes / len(ts)))
			for i := 0; b.Loop(); i++ {
				evs, bad, err := decode.EventList(append([]byte(nil), ts[i%len(ts)].Body...), time.Now())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pipe.Process(ctx, "default", evs, bad); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*400), "µs/event")
		})
	}
}
