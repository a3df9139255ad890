package eventhubs

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
)

// Source names this source in source_checkpoints and the lag metrics.
const Source = "eventhubs"

// ConnectionStringUser is the SASL PLAIN user of Event Hubs' Kafka
// endpoint; the password is the connection string.
const ConnectionStringUser = "$ConnectionString"

// Categories are the diagnostic-settings categories of AKS's audit log:
// every event, and every event but get, list and watch.
var Categories = []string{"kube-audit", "kube-audit-admin"}

// Processor filters and stores a batch of events: auditsink.Pipeline.
type Processor interface {
	ProcessFrom(ctx context.Context, source, cluster string, events []auditv1.Event, undecodable map[string]int) (auditsink.Outcome, error)
}

// Checkpoints keeps where each partition was read up to: store.Store.
type Checkpoints interface {
	Checkpoints(ctx context.Context, source, group, topic string) (map[int32]int64, error)
	CommitCheckpoints(ctx context.Context, source, group, topic string, next map[int32]int64) error
}

// Options configure the consumer.
type Options struct {
	// Brokers are the Kafka endpoint: <namespace>.servicebus.windows.net:9093.
	Brokers []string
	// Topic is the event hub; Group its consumer group ($Default).
	Topic, Group string
	// ConnectionString, when set, authenticates with SASL PLAIN as
	// ConnectionStringUser, as Event Hubs asks.
	ConnectionString string
	// TLS, when set, is the connection's TLS (Event Hubs requires TLS).
	TLS *tls.Config
	// Cluster is the cluster the events are recorded for.
	Cluster string
	// Categories are the categories taken (default Categories).
	Categories []string
	// MaxPollRecords caps the Kafka records of one poll (default 200).
	MaxPollRecords int
	// WriteTimeout bounds the store write of one batch (default 20 s).
	WriteTimeout time.Duration
	// Horizon, if set, returns how far back the record keeps events: as
	// the webhook's (auditsink.HandlerOptions.Horizon), older events are
	// skipped and counted (reason "out_of_window") rather than each day
	// of them making a partition.
	Horizon func() time.Duration
	// Backoff paces the retries of a batch the store did not take
	// (default 1 s, doubling to 1 min, jittered).
	Backoff    wait.Backoff
	Pipeline   Processor
	Store      Checkpoints
	Lag        *auditsink.SourceLag
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// ClientOpts are added to the Kafka client's (tests: session timeouts).
	ClientOpts []kgo.Opt
}

// Consumer reads the audit events of an AKS cluster from Event Hubs.
type Consumer struct {
	o          Options
	categories map[string]bool
	records    *prometheus.CounterVec
	truncated  prometheus.Counter
	failures   prometheus.Counter
	errors     prometheus.Counter
	warned     atomic.Int64 // unix nanoseconds of the last request failure logged
}

// New validates the options.
func New(o Options) (*Consumer, error) {
	switch {
	case len(o.Brokers) == 0:
		return nil, errors.New("eventhubs: no brokers")
	case o.Topic == "" || o.Group == "":
		return nil, errors.New("eventhubs: the event hub (topic) and its consumer group are required")
	case o.Cluster == "":
		return nil, errors.New("eventhubs: no cluster to record the events for")
	case o.Pipeline == nil || o.Store == nil:
		return nil, errors.New("eventhubs: a pipeline and a checkpoint store are required")
	}
	if len(o.Categories) == 0 {
		o.Categories = Categories
	}
	if o.MaxPollRecords <= 0 {
		o.MaxPollRecords = 200
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 20 * time.Second
	}
	if o.Backoff.Duration <= 0 {
		o.Backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: time.Minute}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Consumer{o: o, categories: map[string]bool{},
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_eventhubs_records_total",
			Help: "Resource-log records read from Event Hubs, by category (other: a category not taken; undecodable: a Kafka record that is not a resource-log document).",
		}, []string{"category"}),
		truncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_eventhubs_truncated_lines_kept_total",
			Help: "Audit log lines Azure cut or whose bodies it skipped, kept as what they still prove (marked audit.k8s.io/truncated).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_eventhubs_batch_failures_total",
			Help: "Batches the store did not take, read again after a backoff.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_eventhubs_fetch_errors_total",
			Help: "Errors and warnings reading Event Hubs' Kafka endpoint (authentication, connection, group, partition errors).",
		}),
	}
	for _, cat := range o.Categories {
		c.categories[cat] = true
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(c.records, c.truncated, c.failures, c.errors)
	}
	return c, nil
}

// Run consumes until ctx is done. It returns nil then, or the error that
// kept the Kafka client from starting.
func (c *Consumer) Run(ctx context.Context) error {
	o := c.o
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ConsumerGroup(o.Group),
		kgo.ConsumeTopics(o.Topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(c.adjust),
		// The client's own warnings (a refused connection string, an
		// endpoint away, a group that does not form) are the source's.
		kgo.WithLogger(clientLog{c}),
		kgo.WithHooks(clientHooks{c}),
	}
	if o.ConnectionString != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: ConnectionStringUser, Pass: o.ConnectionString}.AsMechanism()))
	}
	if o.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(o.TLS))
	}
	opts = append(opts, o.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("eventhubs: %w", err)
	}
	defer cl.Close()
	backoff := o.Backoff
	for {
		fetches := cl.PollRecords(ctx, o.MaxPollRecords)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			cl.AllowRebalance()
			return nil
		}
		failed := false
		fetches.EachError(func(topic string, p int32, err error) {
			failed = true
			c.errors.Inc()
			o.Logger.Warn("reading Event Hubs", "topic", topic, "partition", p, "err", err)
		})
		if failed && fetches.NumRecords() == 0 {
			// Nothing read (the endpoint refuses us, or is away): wait
			// before asking again rather than spin on the error.
			cl.AllowRebalance()
			if !c.sleep(ctx, backoff.Step()) {
				return nil
			}
			continue
		}
		rewind, err := c.process(ctx, fetches)
		if err != nil {
			// What was not stored is read again, from where it starts.
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{o.Topic: rewind})
			cl.AllowRebalance()
			c.failures.Inc()
			d := backoff.Step()
			o.Logger.Error("Event Hubs batch not stored; reading it again", "err", err, "retry_in", d)
			if !c.sleep(ctx, d) {
				return nil
			}
			continue
		}
		backoff = o.Backoff
		cl.AllowRebalance()
	}
}

// clientLog passes the Kafka client's warnings and errors to the logger,
// counting them in options_record_eventhubs_fetch_errors_total: a
// consumer that cannot read says so.
type clientLog struct{ c *Consumer }

func (l clientLog) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l clientLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if level > kgo.LogLevelWarn || level == kgo.LogLevelNone {
		return
	}
	l.c.errors.Inc()
	l.c.o.Logger.Warn("Event Hubs client: "+msg, keyvals...)
}

// clientHooks count the requests to the endpoint that failed (a refused
// SASL authentication ends the connection: it shows only here) and log
// what broke a group session.
type clientHooks struct{ c *Consumer }

func (h clientHooks) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if err := e2e.Err(); err != nil {
		h.c.errors.Inc()
		// At most one warning a minute: the client retries on its own.
		now := time.Now().UnixNano()
		if last := h.c.warned.Load(); now-last >= int64(time.Minute) && h.c.warned.CompareAndSwap(last, now) {
			h.c.o.Logger.Warn("Event Hubs request failed (a refused connection string ends the connection; see options_record_eventhubs_fetch_errors_total)",
				"broker", meta.Host, "request_key", key, "err", err)
		}
	}
}

func (h clientHooks) OnGroupManageError(err error) {
	h.c.errors.Inc()
	h.c.o.Logger.Warn("Event Hubs consumer group session failed; joining again", "err", err)
}

// sleep waits d, or until ctx is done (false).
func (c *Consumer) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// adjust starts each assigned partition at its checkpoint, or at the
// start of what the event hub retains when it has none.
func (c *Consumer) adjust(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	parts, ok := assigned[c.o.Topic]
	if !ok {
		return assigned, nil
	}
	cps, err := c.o.Store.Checkpoints(ctx, Source, c.o.Group, c.o.Topic)
	if err != nil {
		return nil, err
	}
	for p := range parts {
		if off, ok := cps[p]; ok {
			parts[p] = kgo.NewOffset().At(off).WithEpoch(-1)
		} else {
			parts[p] = kgo.NewOffset().AtStart()
		}
	}
	c.o.Logger.Info("Event Hubs partitions assigned", "topic", c.o.Topic, "partitions", len(parts), "checkpoints", len(cps))
	return assigned, nil
}

// process stores a poll's records partition by partition, each
// partition's checkpoint once its batch is stored. On an error it returns
// where each partition not stored starts.
func (c *Consumer) process(ctx context.Context, fetches kgo.Fetches) (map[int32]kgo.EpochOffset, error) {
	type part struct {
		p       int32
		records []*kgo.Record
	}
	var parts []part
	fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) > 0 && ftp.Topic == c.o.Topic {
			parts = append(parts, part{ftp.Partition, ftp.Records})
		}
	})
	for i, pt := range parts {
		if err := c.store(ctx, pt.p, pt.records); err != nil {
			rewind := map[int32]kgo.EpochOffset{}
			for _, rest := range parts[i:] {
				rewind[rest.p] = kgo.EpochOffset{Epoch: -1, Offset: rest.records[0].Offset}
			}
			return rewind, err
		}
	}
	return nil, nil
}

// document is a resource-log document as Azure Monitor exports it.
type document struct {
	Records []struct {
		// Time is read as text: a record whose time does not parse is
		// still read (the time is used only for a cut line).
		Time       string `json:"time"`
		Category   string `json:"category"`
		ResourceID string `json:"resourceId"`
		Properties struct {
			Log json.RawMessage `json:"log"`
		} `json:"properties"`
	} `json:"records"`
}

// reasonUndecodable counts a Kafka record that is not a resource-log
// document as one event dropped.
const reasonUndecodable = "undecodable_record"

// store runs the records of one partition through the pipeline as one
// batch, then writes the partition's checkpoint.
func (c *Consumer) store(ctx context.Context, partition int32, records []*kgo.Record) error {
	var lines []decode.Line
	undecodable := map[string]int{}
	for _, r := range records {
		var doc document
		if err := json.Unmarshal(r.Value, &doc); err != nil {
			c.records.WithLabelValues("undecodable").Inc()
			undecodable[reasonUndecodable]++
			continue
		}
		for _, rec := range doc.Records {
			if !c.categories[rec.Category] {
				c.records.WithLabelValues("other").Inc()
				continue
			}
			c.records.WithLabelValues(rec.Category).Inc()
			text, err := logText(rec.Properties.Log)
			if err != nil {
				undecodable[reasonUndecodable]++
				continue
			}
			at, _ := time.Parse(time.RFC3339Nano, rec.Time)
			lines = append(lines, decode.Line{Text: text, Time: at})
		}
	}
	now := time.Now()
	res := decode.Lines(lines, now)
	events := res.Events
	c.truncated.Add(float64(res.Truncated))
	for _, i := range res.Unusable {
		c.o.Logger.Warn("a line Azure cut no longer says who did what (a padded request URI or header?): skipped",
			"partition", partition, "line_start", decode.Start(lines[i].Text))
	}
	for r, n := range res.Skipped {
		undecodable[r] += n
	}
	events, undecodable = auditsink.InWindow(c.o.Horizon, events, undecodable, now)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.o.WriteTimeout)
	defer cancel()
	if len(events) > 0 || len(undecodable) > 0 {
		out, err := c.o.Pipeline.ProcessFrom(wctx, Source, c.o.Cluster, events, undecodable)
		if err != nil {
			return err
		}
		if !out.Written.Journaled { // else its drain observes it
			c.o.Lag.Observe(wctx, Source, c.o.Cluster, events, time.Now())
		}
	}
	next := map[int32]int64{partition: records[len(records)-1].Offset + 1}
	if err := c.o.Store.CommitCheckpoints(wctx, Source, c.o.Group, c.o.Topic, next); err != nil {
		// Stored, not checkpointed: read again and found stored.
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// logText is properties.log: a JSON string holding the audit log line
// (as Azure writes it), or the Event itself as an object (as a transform
// may leave it).
func logText(raw json.RawMessage) ([]byte, error) {
	t := strings.TrimSpace(string(raw))
	if strings.HasPrefix(t, `"`) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	if strings.HasPrefix(t, "{") {
		return []byte(t), nil
	}
	return nil, errors.New("properties.log is neither a string nor an object")
}
