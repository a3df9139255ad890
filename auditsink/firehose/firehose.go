package firehose

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/auditsink/decode"
)

// The headers of the specification.
const (
	HeaderRequestID       = "X-Amz-Firehose-Request-Id"
	HeaderAccessKey       = "X-Amz-Firehose-Access-Key"
	HeaderProtocolVersion = "X-Amz-Firehose-Protocol-Version"
	protocolVersion       = "1.0"
)

// The messageType of CloudWatch Logs' subscription messages.
const (
	dataMessage    = "DATA_MESSAGE"
	controlMessage = "CONTROL_MESSAGE"
)

// auditStreamPrefix starts the names of the log streams of the audit log
// in an EKS cluster's log group (the other streams are the apiserver's
// own log, the authenticator's, the scheduler's...).
const auditStreamPrefix = "kube-apiserver-audit"

// Options configure the Firehose endpoint.
type Options struct {
	// AccessKeyFile holds the access key configured on the Firehose
	// stream's HTTP endpoint (the file's content, without a trailing
	// newline); required. It is read again when it changes, at most every
	// ReloadInterval (default 15 s).
	AccessKeyFile  string
	ReloadInterval time.Duration
	// Clusters maps a log group (/aws/eks/<name>/cluster) to the cluster
	// its events are recorded for. When it is empty, every log group's
	// events are DefaultCluster's; when it is not, a log group it does not
	// name is refused: its events are skipped and counted
	// (options_record_firehose_log_events_skipped_total, reason
	// unknown_log_group), never recorded under another cluster.
	Clusters       map[string]string
	DefaultCluster string
	// MaxDecodedBytes caps what a request's records decompress to
	// (default 64 MiB): a request beyond it is refused with 413, so a
	// compression bomb holds no more than it.
	MaxDecodedBytes int64
	// Registerer registers the endpoint's metrics (nil: not registered).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Delivery is the Firehose HTTP endpoint, an auditsink.Delivery.
type Delivery struct {
	opts Options
	key  *keyFile

	records   *prometheus.CounterVec
	skipped   *prometheus.CounterVec
	truncated prometheus.Counter
}

// New validates the options and reads the access key.
func New(o Options) (*Delivery, error) {
	if o.AccessKeyFile == "" {
		return nil, errors.New("firehose: an access key file is required")
	}
	if o.DefaultCluster == "" && len(o.Clusters) == 0 {
		return nil, errors.New("firehose: no cluster to record the events for")
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = 15 * time.Second
	}
	if o.MaxDecodedBytes <= 0 {
		o.MaxDecodedBytes = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	k := &keyFile{path: o.AccessKeyFile, interval: o.ReloadInterval, log: o.Logger}
	if err := k.load(); err != nil {
		return nil, err
	}
	d := &Delivery{opts: o, key: k,
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_firehose_records_total",
			Help: "Firehose records received, by CloudWatch Logs message type (DATA_MESSAGE, CONTROL_MESSAGE, skipped) or undecodable.",
		}, []string{"type"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "options_record_firehose_log_events_skipped_total",
			Help: "CloudWatch Logs log events not taken as audit events, by reason (not_audit_stream, unknown_log_group).",
		}, []string{"reason"}),
		truncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "options_record_firehose_truncated_lines_kept_total",
			Help: "Audit log lines CloudWatch Logs cut at its size limit, kept as what they still prove (marked audit.k8s.io/truncated).",
		}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(d.records, d.skipped, d.truncated)
	}
	return d, nil
}

// Name implements auditsink.Delivery.
func (d *Delivery) Name() string { return "firehose" }

// Authenticate compares the access key in constant time (of digests, so
// that not even its length shows).
func (d *Delivery) Authenticate(r *http.Request) bool {
	got := r.Header.Get(HeaderAccessKey)
	if got == "" {
		return false
	}
	want := d.key.get()
	g := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(g[:], want[:]) == 1
}

// Check refuses what Firehose does not send.
func (d *Delivery) Check(r *http.Request) (int, error) {
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, errors.New("method not allowed: POST a Firehose delivery")
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content type %q: want application/json", ct)
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "gzip") && !strings.EqualFold(ce, "identity") {
		return http.StatusUnsupportedMediaType, fmt.Errorf("unsupported content encoding %q: want gzip or none", ce)
	}
	if v := r.Header.Get(HeaderProtocolVersion); v != "" && v != protocolVersion {
		return http.StatusBadRequest, fmt.Errorf("unsupported %s %q: want %s", HeaderProtocolVersion, v, protocolVersion)
	}
	if r.Header.Get(HeaderRequestID) == "" {
		return http.StatusBadRequest, fmt.Errorf("no %s header", HeaderRequestID)
	}
	return 0, nil
}

// request is the body Firehose posts.
type request struct {
	RequestID string `json:"requestId"`
	Timestamp int64  `json:"timestamp"`
	Records   []struct {
		Data []byte `json:"data"` // base64 in the JSON
	} `json:"records"`
}

// logsMessage is a CloudWatch Logs subscription message.
type logsMessage struct {
	MessageType         string   `json:"messageType"`
	Owner               string   `json:"owner"`
	LogGroup            string   `json:"logGroup"`
	LogStream           string   `json:"logStream"`
	SubscriptionFilters []string `json:"subscriptionFilters"`
	LogEvents           []struct {
		ID        string `json:"id"`
		Timestamp int64  `json:"timestamp"` // ms since the epoch
		Message   string `json:"message"`
	} `json:"logEvents"`
}

// errTooLarge refuses a request that decompresses to more than allowed.
var errTooLarge = errors.New("decompressed body too large")

// tooLarge answers errTooLarge with 413, as the specification's example
// does ("Payload too large"); other errors with 400.
func tooLarge(err error) error {
	if errors.Is(err, errTooLarge) {
		return &auditsink.DeliveryError{Status: http.StatusRequestEntityTooLarge,
			Err: fmt.Errorf("%w: lower the Firehose stream's buffer size or raise --firehose-max-decoded-bytes", err)}
	}
	return err
}

// reasonUndecodableRecord counts a record whose data is not a gzipped
// CloudWatch Logs message as one event dropped.
const reasonUndecodableRecord = "undecodable_record"

// Decode implements auditsink.Delivery: the records' audit log lines, one
// batch per cluster.
func (d *Delivery) Decode(r *http.Request, body []byte, now time.Time) ([]auditsink.DeliveryBatch, error) {
	budget := d.opts.MaxDecodedBytes
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		var err error
		if body, err = gunzip(body, &budget); err != nil {
			return nil, tooLarge(fmt.Errorf("request body: %w", err))
		}
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("not a Firehose delivery: %v", err)
	}
	if id := r.Header.Get(HeaderRequestID); req.RequestID != "" && req.RequestID != id {
		return nil, fmt.Errorf("requestId %q of the body differs from %s %q", req.RequestID, HeaderRequestID, id)
	}
	lines := map[string][]decode.Line{}
	bad := map[string]map[string]int{}
	count := func(cluster, reason string) {
		if bad[cluster] == nil {
			bad[cluster] = map[string]int{}
		}
		bad[cluster][reason]++
	}
	for _, rec := range req.Records {
		msg, err := d.message(rec.Data, &budget)
		if errors.Is(err, errTooLarge) {
			return nil, tooLarge(err)
		}
		if err != nil {
			d.records.WithLabelValues("undecodable").Inc()
			d.opts.Logger.Warn("skipping an undecodable Firehose record", "request_id", r.Header.Get(HeaderRequestID), "err", err)
			if d.opts.DefaultCluster != "" {
				count(d.opts.DefaultCluster, reasonUndecodableRecord)
			}
			continue
		}
		switch msg.MessageType {
		case controlMessage:
			d.records.WithLabelValues(controlMessage).Inc()
			continue
		case dataMessage:
			d.records.WithLabelValues(dataMessage).Inc()
		default:
			d.records.WithLabelValues("skipped").Inc()
			continue
		}
		cluster, ok := d.cluster(msg.LogGroup)
		if !ok {
			d.skipped.WithLabelValues("unknown_log_group").Add(float64(len(msg.LogEvents)))
			d.opts.Logger.Warn("skipping the events of a log group no cluster is mapped to", "log_group", msg.LogGroup,
				"events", len(msg.LogEvents))
			continue
		}
		if !strings.HasPrefix(msg.LogStream, auditStreamPrefix) {
			d.skipped.WithLabelValues("not_audit_stream").Add(float64(len(msg.LogEvents)))
			continue
		}
		for _, le := range msg.LogEvents {
			lines[cluster] = append(lines[cluster], decode.Line{Text: []byte(le.Message), Time: time.UnixMilli(le.Timestamp)})
		}
	}
	clusters := make([]string, 0, len(lines)+len(bad))
	for c := range lines {
		clusters = append(clusters, c)
	}
	for c := range bad {
		if _, ok := lines[c]; !ok {
			clusters = append(clusters, c)
		}
	}
	sort.Strings(clusters)
	batches := make([]auditsink.DeliveryBatch, 0, len(clusters))
	for _, c := range clusters {
		res := decode.Lines(lines[c], now)
		events, skipped := res.Events, res.Skipped
		d.truncated.Add(float64(res.Truncated))
		for _, i := range res.Unusable {
			d.opts.Logger.Warn("a line CloudWatch Logs cut no longer says who did what (a padded request URI or header?): skipped",
				"request_id", r.Header.Get(HeaderRequestID), "cluster", c, "line_start", decode.Start(lines[c][i].Text))
		}
		for reason, n := range bad[c] {
			if skipped == nil {
				skipped = map[string]int{}
			}
			skipped[reason] += n
		}
		batches = append(batches, auditsink.DeliveryBatch{Cluster: c, Events: events, Undecodable: skipped})
	}
	return batches, nil
}

// message decodes one record's data: a CloudWatch Logs message, gzipped
// as CloudWatch Logs sends it (or not, when the Firehose stream
// decompresses it).
func (d *Delivery) message(data []byte, budget *int64) (*logsMessage, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		var err error
		if data, err = gunzip(data, budget); err != nil {
			return nil, err
		}
	}
	var m logsMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a CloudWatch Logs message: %v", err)
	}
	return &m, nil
}

func (d *Delivery) cluster(logGroup string) (string, bool) {
	if len(d.opts.Clusters) == 0 {
		return d.opts.DefaultCluster, true
	}
	c, ok := d.opts.Clusters[logGroup]
	return c, ok
}

// gunzip decompresses b, taking what it decompresses to from budget.
func gunzip(b []byte, budget *int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, *budget+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > *budget {
		return nil, errTooLarge
	}
	*budget -= int64(len(out))
	return out, nil
}

// Answer writes the answer of the specification: {"requestId",
// "timestamp"}, with "errorMessage" on a failure.
func (d *Delivery) Answer(w http.ResponseWriter, r *http.Request, status int, msg string) {
	ans := struct {
		RequestID    string `json:"requestId"`
		Timestamp    int64  `json:"timestamp"`
		ErrorMessage string `json:"errorMessage,omitempty"`
	}{RequestID: r.Header.Get(HeaderRequestID), Timestamp: time.Now().UnixMilli(), ErrorMessage: msg}
	if status == http.StatusOK {
		ans.ErrorMessage = ""
	}
	b, _ := json.Marshal(ans)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// keyFile is the access key, read again when its file changes.
type keyFile struct {
	path     string
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	digest  [32]byte
	mod     time.Time
	checked time.Time
}

func (k *keyFile) load() error {
	st, err := os.Stat(k.path)
	if err != nil {
		return fmt.Errorf("firehose access key: %w", err)
	}
	b, err := os.ReadFile(k.path)
	if err != nil {
		return fmt.Errorf("firehose access key: %w", err)
	}
	key := strings.TrimRight(string(b), "\r\n")
	if key == "" {
		return fmt.Errorf("firehose access key file %s is empty", k.path)
	}
	k.digest = sha256.Sum256([]byte(key))
	k.mod = st.ModTime()
	return nil
}

// get returns the digest of the key in force, reading the file again if
// it changed and the interval has passed; a file that does not read keeps
// the key in force.
func (k *keyFile) get() [32]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := time.Now(); now.Sub(k.checked) >= k.interval {
		k.checked = now
		if st, err := os.Stat(k.path); err == nil && !st.ModTime().Equal(k.mod) {
			if err := k.load(); err != nil {
				k.log.Warn("keeping the Firehose access key in force", "err", err)
			}
		}
	}
	return k.digest
}
