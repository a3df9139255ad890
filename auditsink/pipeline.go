package auditsink

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store/model"
)

// RuleSource gives the rule set in force for a cluster's events.
type RuleSource interface {
	RulesFor(cluster string) *filter.Rules
}

// StaticRules is a RuleSource with one rule set for every cluster.
type StaticRules struct{ Rules *filter.Rules }

// RulesFor implements RuleSource.
func (s StaticRules) RulesFor(string) *filter.Rules { return s.Rules }

// Observer sees every decoded event, in the batch's order, before it is
// filtered: a rule source follows OptionsRecordController changes through
// it, so a changed rule applies to the events after it in the same batch,
// and the events before it are judged by the rules they were made under.
// It reports whether the rules changed.
type Observer interface {
	ObserveEvents(cluster string, evs []auditv1.Event) bool
}

// Pipeline filters decoded events, converts the kept ones into rows and
// writes them as one batch.
type Pipeline struct {
	rules    RuleSource
	writer   model.Writer
	metrics  *Metrics
	log      *slog.Logger
	observer Observer
	self     func(cluster string, ev *auditv1.Event) bool
	onStored func(cluster string, events []model.Event)
	digester *model.SecretDigester
}

// WithSecretDigester sets how Secret values are digested. Without one an
// event that holds Secret values is not stored: it is skipped and counted
// as convert_error (model.ErrNoDigester), never digested more weakly.
func (p *Pipeline) WithSecretDigester(d *model.SecretDigester) *Pipeline { p.digester = d; return p }

// WithObserver sets the observer of decoded batches.
func (p *Pipeline) WithObserver(o Observer) *Pipeline { p.observer = o; return p }

// WithSelf sets the test for events caused by the sink's own requests (its
// LISTs and status writes), which are never recorded. Restores, which the
// sink performs impersonating an operator, are not its own.
func (p *Pipeline) WithSelf(fn func(cluster string, ev *auditv1.Event) bool) *Pipeline {
	p.self = fn
	return p
}

// WithOnStored sets a function called with the events of each stored batch
// (for per-rule statistics).
func (p *Pipeline) WithOnStored(fn func(cluster string, events []model.Event)) *Pipeline {
	p.onStored = fn
	return p
}

// reasonSelf drops the sink's own requests.
const reasonSelf = "self"

// reasonConvert skips an event that does not convert into rows.
const reasonConvert = "convert_error"

// NewPipeline builds a pipeline. metrics and log may be nil.
func NewPipeline(rules RuleSource, w model.Writer, m *Metrics, log *slog.Logger) *Pipeline {
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{rules: rules, writer: w, metrics: m, log: log}
}

// Outcome counts what happened to the events of one batch.
type Outcome struct {
	Received int
	Kept     int
	Dropped  map[string]int // by reason: filter reasons, malformed, invalid
	Skipped  map[string]int // kept events that gave no version, by reason
	// Sanitized counts kept events in which values PostgreSQL cannot store
	// (NUL, invalid UTF-8) were replaced with U+FFFD.
	Sanitized int
	Written   model.WriteResult
	// Retained says the writer may still read the events' memory after
	// Process returned (model.Batch.Retained): the body they were decoded
	// from must not be reused.
	Retained bool
}

func (o *Outcome) drop(reason string, n int) {
	if n == 0 {
		return
	}
	if o.Dropped == nil {
		o.Dropped = map[string]int{}
	}
	o.Dropped[reason] += n
}

// Add folds another outcome into o.
func (o *Outcome) Add(p Outcome) {
	o.Received += p.Received
	o.Kept += p.Kept
	for k, v := range p.Dropped {
		o.drop(k, v)
	}
	for k, v := range p.Skipped {
		if o.Skipped == nil {
			o.Skipped = map[string]int{}
		}
		o.Skipped[k] += v
	}
	o.Sanitized += p.Sanitized
	o.Written.Events += p.Written.Events
	o.Written.Versions += p.Written.Versions
	o.Written.DuplicateEvents += p.Written.DuplicateEvents
	o.Written.NoopVersions += p.Written.NoopVersions
	o.Written.Journaled = o.Written.Journaled || p.Written.Journaled
	o.Retained = o.Retained || p.Retained
}

// Process filters and stores events as one batch for cluster. undecodable
// counts the items of the batch that were already skipped by the decoder.
// It returns after the batch is durable, or with the write error.
//
// The events' strings and objects are slices of the body they were
// decoded from, and Process rewrites those bytes in place (it cuts
// managedFields out of the states it keeps): the caller must not read the
// body's bytes after Process. It may reuse them for another body unless the
// outcome is Retained. Nothing Process calls keeps a slice of the body
// after it returns (an observer that keeps a string clones it).
func (p *Pipeline) Process(ctx context.Context, cluster string, events []auditv1.Event, undecodable map[string]int) (Outcome, error) {
	return p.ProcessFrom(ctx, "", cluster, events, undecodable)
}

// ProcessFrom is Process for the events of an audit source (webhook,
// firehose, pubsub, eventhubs): the batch carries its name, so that a
// journaled batch's drain records the source's progress. A caller records
// that progress itself only when the outcome's Written.Journaled is false.
func (p *Pipeline) ProcessFrom(ctx context.Context, source, cluster string, events []auditv1.Event, undecodable map[string]int) (Outcome, error) {
	out := Outcome{Received: len(events)}
	for reason, n := range undecodable {
		out.Received += n
		out.drop(reason, n)
	}
	rules := p.rules.RulesFor(cluster)
	batch := &model.Batch{Source: source}
	for i := range events {
		ev := &events[i]
		if p.observer != nil && p.observer.ObserveEvents(cluster, events[i:i+1]) {
			rules = p.rules.RulesFor(cluster) // changed: from this event on
		}
		if p.self != nil && p.self(cluster, ev) {
			out.drop(reasonSelf, 1)
			continue
		}
		d := rules.Match(ev)
		if !d.Keep {
			out.drop(string(d.Reason), 1)
			continue
		}
		c, err := model.Convert(cluster, ev, model.Selection{Rules: d.Rules, RecordSecretData: d.RecordSecretData, Notify: routes(d.Notify)}, p.digester)
		if err != nil {
			p.log.Warn("skipping event", "audit_id", ev.AuditID, "err", err)
			out.drop(reasonConvert, 1)
			continue
		}
		out.Kept++
		if c.Sanitized {
			out.Sanitized++
		}
		batch.Events = append(batch.Events, c.Event)
		batch.Versions = append(batch.Versions, c.Versions...)
		for _, s := range c.Skips {
			if out.Skipped == nil {
				out.Skipped = map[string]int{}
			}
			out.Skipped[s]++
		}
	}
	start := time.Now()
	res, err := p.writer.WriteBatch(ctx, batch)
	p.metrics.write.Observe(time.Since(start).Seconds())
	out.Retained = batch.Retained
	stored := batch.Events
	if err != nil && model.IsInvalidData(err) && len(batch.Events) > 0 {
		res, stored, err = p.eventByEvent(ctx, batch, &out)
	}
	if err != nil {
		return out, fmt.Errorf("store batch: %w", err)
	}
	out.Written = res
	p.record(cluster, &out)
	// A redelivered batch was counted the first time (a partly redelivered
	// one, rare, is not counted: statistics are approximate by design).
	if p.onStored != nil && len(stored) > 0 && res.DuplicateEvents == 0 {
		p.onStored(cluster, stored)
	}
	return out, nil
}

// reasonRejected drops an event PostgreSQL refused as invalid data that
// the conversion did not make safe (pgSafe): the others of its batch are
// stored.
const reasonRejected = "rejected_by_database"

// eventByEvent stores a batch PostgreSQL refused as invalid data one event
// (with its versions) at a time, so that one event the conversion did not
// make safe costs only itself, dropped and counted, not its whole batch:
// the apiserver would retry that forever, then lose it. Another failure
// stops it: the batch is answered 503 and redelivered, and the events
// stored by then are found stored.
func (p *Pipeline) eventByEvent(ctx context.Context, batch *model.Batch, out *Outcome) (model.WriteResult, []model.Event, error) {
	byEvent := make(map[string][]model.Version, len(batch.Events))
	for _, v := range batch.Versions {
		k := v.Cluster + "\x00" + string(v.EventKey)
		byEvent[k] = append(byEvent[k], v)
	}
	var (
		total  model.WriteResult
		stored []model.Event
	)
	for i := range batch.Events {
		e := &batch.Events[i]
		one := &model.Batch{Events: batch.Events[i : i+1], Versions: byEvent[e.Cluster+"\x00"+string(e.Key)], Source: batch.Source}
		res, err := p.writer.WriteBatch(ctx, one)
		out.Retained = out.Retained || one.Retained
		if err != nil && model.IsInvalidData(err) {
			p.log.Warn("event refused by the database as invalid data: skipped, the rest of its batch stored",
				"audit_id", e.AuditID, "verb", e.Verb, "resource", e.Resource, "namespace", e.Namespace, "name", e.Name, "err", err)
			out.Kept--
			out.drop(reasonRejected, 1)
			continue
		}
		if err != nil {
			return total, stored, err
		}
		total.Events += res.Events
		total.Versions += res.Versions
		total.DuplicateEvents += res.DuplicateEvents
		total.NoopVersions += res.NoopVersions
		total.Journaled = total.Journaled || res.Journaled
		stored = append(stored, *e)
	}
	return total, stored, nil
}

func (p *Pipeline) record(cluster string, o *Outcome) {
	m := p.metrics
	m.received.WithLabelValues(cluster).Add(float64(o.Received))
	m.kept.WithLabelValues(cluster).Add(float64(o.Kept))
	m.sanitized.WithLabelValues(cluster).Add(float64(o.Sanitized))
	for r, n := range o.Dropped {
		m.dropped.WithLabelValues(cluster, r).Add(float64(n))
	}
	for r, n := range o.Skipped {
		m.skipped.WithLabelValues(r).Add(float64(n))
	}
	m.versions.WithLabelValues("stored").Add(float64(o.Written.Versions))
	m.versions.WithLabelValues("noop").Add(float64(o.Written.NoopVersions))
	m.versions.WithLabelValues("duplicate_event").Add(float64(o.Written.DuplicateEvents))
}

// routes are the model's copy of a decision's notification routes.
func routes(rs []filter.Route) []model.Route {
	if len(rs) == 0 {
		return nil
	}
	out := make([]model.Route, len(rs))
	for i, r := range rs {
		out[i] = model.Route{Rule: r.Rule, Destination: r.Destination}
	}
	return out
}
