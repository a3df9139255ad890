package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/options-record/options-record/api/authlimit"
	"github.com/options-record/options-record/store"
)

// Queue is the outbox as the sender needs it (*store.Store).
type Queue interface {
	GroupNotifications(ctx context.Context, window time.Duration) (int, error)
	ClaimNotification(ctx context.Context, destination string, lease time.Duration) (*store.NotificationMessage, error)
	// The outcomes are fenced to the claim (attempt): one whose lease
	// was lost to a newer claim changes nothing and is store.ErrLeaseLost.
	NotificationSent(ctx context.Context, id string, attempt int) error
	NotificationRetry(ctx context.Context, id string, attempt int, wait time.Duration, failure string) error
	NotificationDropped(ctx context.Context, id string, attempt int, reason, failure string) error
	PurgeNotifications(ctx context.Context, cutoff time.Time) (int64, error)
}

// Defaults of Options.
const (
	DefaultWindow = 10 * time.Second
	DefaultPoll   = time.Second
	DefaultLease  = time.Minute
	DefaultMaxAge = 24 * time.Hour
	DefaultKeep   = 7 * 24 * time.Hour
)

// MinLease is the shortest lease --notify-lease takes: a lease must
// outlast a send and the writes around it, on a slow database too, or a
// second replica sends the message alongside the first.
const MinLease = 5 * time.Second

// DefaultLeaseMargin is Options.LeaseMargin's default.
const DefaultLeaseMargin = 2 * time.Second

// DefaultBackoff is the wait before each retry of a message: 1s, doubling,
// at most 5 minutes, each with up to half again as jitter.
var DefaultBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: 5 * time.Minute}

// Options configure a Sender; a zero is its default.
type Options struct {
	Config *Config
	// Window is how long the first change of an incident waits for the
	// rest before its message is made (a burst within it is one message).
	Window time.Duration
	// Poll is how often the outbox is looked at.
	Poll time.Duration
	// Lease is how long a claimed message is this replica's to send; if
	// it dies, another sends the message after it. Longer than any
	// destination's timeout by LeaseMargin (Config.CheckLease).
	Lease time.Duration
	// LeaseMargin is the end of a lease kept for recording the outcome: a
	// send is cut off LeaseMargin before its lease runs out (counted from
	// before the claim, so the claim's own reads are inside the lease),
	// whatever the destination's timeout. Default (and when not shorter
	// than Lease): DefaultLeaseMargin, at most a quarter of Lease.
	LeaseMargin time.Duration
	// Backoff spaces the retries of a message.
	Backoff wait.Backoff
	// MaxAge drops a message not sent this long after it was made.
	MaxAge time.Duration
	// Keep is how long sent and dropped messages stay in the outbox.
	Keep       time.Duration
	Client     *http.Client
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Sender sends the outbox. Run it in every ingest replica.
type Sender struct {
	q       Queue
	o       Options
	limits  map[string]*authlimit.Limiter
	metrics *metrics
}

type metrics struct {
	sent, retried, made *prometheus.CounterVec
	leaseLost           *prometheus.CounterVec
	dropped             *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "options_record_notifications_sent_total",
			Help: "Notification messages delivered, by destination."}, []string{"destination"}),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "options_record_notifications_retried_total",
			Help: "Failed deliveries of notification messages that will be retried, by destination."}, []string{"destination"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "options_record_notifications_dropped_total",
			Help: "Notification messages not sent, by destination and reason (rate_limited, rejected, expired, unknown_destination)."},
			[]string{"destination", "reason"}),
		leaseLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "options_record_notifications_lease_lost_total",
			Help: "Outcomes of sends not recorded because the message's lease ran out and another replica claimed it, by destination."}, []string{"destination"}),
		made: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "options_record_notifications_messages_total",
			Help: "Notification messages made of the outbox's changes (one per incident and destination)."}, nil),
	}
	if reg != nil {
		reg.MustRegister(m.sent, m.retried, m.dropped, m.made, m.leaseLost)
	}
	return m
}

// New builds a Sender of q's outbox.
func New(q Queue, o Options) *Sender {
	if o.Config == nil {
		o.Config = &Config{}
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.LeaseMargin <= 0 || o.LeaseMargin >= o.Lease {
		o.LeaseMargin = min(DefaultLeaseMargin, o.Lease/4)
	}
	if o.Backoff.Duration <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sender{q: q, o: o, limits: map[string]*authlimit.Limiter{}, metrics: newMetrics(o.Registerer)}
	for _, d := range o.Config.Destinations {
		s.limits[d.Name] = authlimit.New(authlimit.Options{FailureRate: d.Rate, FailureBurst: d.Burst})
		for _, r := range []string{"rate_limited", "rejected", "expired"} {
			s.metrics.dropped.WithLabelValues(d.Name, r)
		}
		s.metrics.sent.WithLabelValues(d.Name)
		s.metrics.retried.WithLabelValues(d.Name)
		s.metrics.leaseLost.WithLabelValues(d.Name)
	}
	return s
}

// Run groups and sends until ctx ends: one loop groups the outbox, one per
// destination sends, so a slow destination holds up only its own messages.
func (s *Sender) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wakes := make([]chan struct{}, len(s.o.Config.Destinations))
	for i := range s.o.Config.Destinations {
		d := &s.o.Config.Destinations[i]
		wakes[i] = make(chan struct{}, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sendLoop(ctx, d, wakes[i])
		}()
	}
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	lastPurge := time.Time{}
	for {
		n, err := s.q.GroupNotifications(ctx, s.o.Window)
		if err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("grouping notifications", "err", err)
		}
		if n > 0 {
			s.metrics.made.WithLabelValues().Add(float64(n))
			for _, w := range wakes {
				select {
				case w <- struct{}{}:
				default:
				}
			}
		}
		if time.Since(lastPurge) > time.Hour {
			if _, err := s.q.PurgeNotifications(ctx, time.Now().Add(-s.o.Keep)); err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("purging notifications", "err", err)
			}
			lastPurge = time.Now()
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
	}
}

func (s *Sender) sendLoop(ctx context.Context, d *Destination, wake <-chan struct{}) {
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			// The lease starts at the database's now() during the claim,
			// so it ends no sooner than Lease after this instant (on this
			// clock, whatever the database's says).
			end := time.Now().Add(s.o.Lease - s.o.LeaseMargin)
			m, err := s.q.ClaimNotification(ctx, d.Name, s.o.Lease)
			if err != nil {
				if ctx.Err() == nil {
					s.o.Logger.Warn("claiming a notification", "destination", d.Name, "err", err)
				}
				break
			}
			if m == nil {
				break
			}
			s.deliver(ctx, d, m, end)
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
	}
}

// deliver sends m once, by end (its lease's end less the margin), and
// records the outcome.
func (s *Sender) deliver(ctx context.Context, d *Destination, m *store.NotificationMessage, end time.Time) {
	log := s.o.Logger.With("destination", d.Name, "notification", m.ID)
	record := func(err error) {
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			s.metrics.leaseLost.WithLabelValues(d.Name).Inc()
			log.Warn("notification's lease ran out before its outcome was recorded; another replica holds it", "attempt", m.Attempts)
		case err != nil && ctx.Err() == nil:
			log.Warn("recording a notification's outcome", "err", err)
		}
	}
	if time.Since(m.CreatedAt) > s.o.MaxAge {
		s.metrics.dropped.WithLabelValues(d.Name, "expired").Inc()
		record(s.q.NotificationDropped(ctx, m.ID, m.Attempts, "expired", ""))
		return
	}
	if ok, _ := s.limits[d.Name].Take("notify:" + d.Name); !ok {
		s.metrics.dropped.WithLabelValues(d.Name, "rate_limited").Inc()
		log.Warn("notification dropped: over the destination's rate")
		record(s.q.NotificationDropped(ctx, m.ID, m.Attempts, "rate_limited", ""))
		return
	}
	err := s.send(ctx, d, NewIncident(m), end)
	var perm *permanentError
	switch {
	case err == nil:
		s.metrics.sent.WithLabelValues(d.Name).Inc()
		record(s.q.NotificationSent(ctx, m.ID, m.Attempts))
	case errors.As(err, &perm):
		s.metrics.dropped.WithLabelValues(d.Name, "rejected").Inc()
		log.Warn("notification rejected by its destination", "err", err)
		record(s.q.NotificationDropped(ctx, m.ID, m.Attempts, "rejected", err.Error()))
	case ctx.Err() != nil:
		// Shutting down: the lease runs out and a replica sends it.
	default:
		s.metrics.retried.WithLabelValues(d.Name).Inc()
		bo := s.o.Backoff
		var w time.Duration
		for i := 0; i < min(m.Attempts, 64); i++ {
			w = bo.Step()
		}
		log.Info("notification not delivered; will retry", "attempt", m.Attempts, "retry_in", w, "err", err)
		record(s.q.NotificationRetry(ctx, m.ID, m.Attempts, w, err.Error()))
	}
}

// permanentError is a refusal no retry changes (a 4xx other than 408 and
// 429).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// send posts the incident in d's format, giving up at d's timeout or at
// end (the lease's end less the margin), whichever comes first: a send
// still under way when its lease runs out could be made alongside by
// another replica.
func (s *Sender) send(ctx context.Context, d *Destination, in *Incident, end time.Time) error {
	u, err := d.url()
	if err != nil {
		return err
	}
	var body []byte
	header := http.Header{"Content-Type": {"application/json"}, HeaderKey: {in.Key}}
	now := time.Now()
	switch d.Type {
	case TypeAlertmanager:
		body, err = alertmanagerBody(in, now, d.ResolveAfter.Duration)
		u = strings.TrimSuffix(u, "/") + "/api/v2/alerts"
	case TypeSlack:
		body, err = slackBody(in)
	case TypeWebhook:
		body, err = webhookBody(in)
		if err == nil {
			var secret []byte
			if secret, err = os.ReadFile(d.SecretFile); err != nil {
				return fmt.Errorf("webhook secret: %w", err)
			}
			header.Set(HeaderSignature, Sign(bytes.TrimSpace(secret), body, now))
		}
	}
	if err != nil {
		return &permanentError{fmt.Errorf("format: %w", err)}
	}
	if time.Until(end) <= 0 {
		return errors.New("the lease ran out before the send")
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout.Duration)
	defer cancel()
	ctx, cancelLease := context.WithDeadline(ctx, end)
	defer cancelLease()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return &permanentError{err}
	}
	req.Header = header
	resp, err := s.o.Client.Do(req)
	if err != nil {
		// The URL may be a credential (a Slack webhook's): say only that
		// the post failed, and why.
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			err = ue.Unwrap()
		}
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return fmt.Errorf("destination answered %s", resp.Status)
	default:
		return &permanentError{fmt.Errorf("destination answered %s", resp.Status)}
	}
}
