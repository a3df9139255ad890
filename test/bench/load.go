package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/options-record/options-record/test/bench/workload"
)

// maxAttempts is how often the apiserver's webhook backend sends a batch
// before it drops it.
const maxAttempts = 5

// sample is one POST.
type sample struct {
	done    time.Time
	latency time.Duration
	code    int // 0: network error
	events  int
	kept    int // as the sink reports it
	retry   bool
}

// counts summarize the POSTs that completed within the measured window.
type counts struct {
	batchesOK   int
	eventsOK    int
	keptOK      int // events the sink said it kept
	latencies   []time.Duration
	non2xx      map[int]int // by status code; 0 is a network error
	retries     int
	dropped     int // batches given up after maxAttempts
	proto       string
	workerError error
}

// pacer spaces batches evenly to offer a fixed event rate across workers.
// When the workers fall behind, it does not let them catch up in a burst.
type pacer struct {
	mu       sync.Mutex
	next     time.Time
	interval time.Duration
}

func newPacer(eventsPerSecond float64, batchSize int) *pacer {
	if eventsPerSecond <= 0 {
		return nil
	}
	return &pacer{interval: time.Duration(float64(time.Second) * float64(batchSize) / eventsPerSecond)}
}

// wait blocks until the worker may send; false when stop came first.
func (p *pacer) wait(stop <-chan struct{}) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(p.interval)
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop:
			return false
		}
	}
	return true
}

// worker is one apiserver: one connection sending its batches in
// turn, retrying refused ones.
type worker struct {
	client  *http.Client
	url     string
	auth    string
	pool    []*workload.Template
	samples []sample
	dropped []time.Time
	proto   string
	err     error
}

// newClient is a client that prefers HTTP/2 (as the apiserver's does), that trusts only the sink's CA and dials
// only loopback.
func newClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("sink CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("sink CA %s: no certificate", caFile)
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || host != "127.0.0.1" {
				return nil, fmt.Errorf("bench: refusing to dial %s: only 127.0.0.1", addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}, nil
}

// releasingBody lets the worker know when the transport is done with a
// template's bytes (it may close the body after RoundTrip returns).
type releasingBody struct {
	*bytes.Reader
	once sync.Once
	done chan struct{}
}

func (b *releasingBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}

// run sends batches until stop is closed, then finishes the batch in hand.
// ctx (Ctrl-C) aborts everything.
func (w *worker) run(ctx context.Context, stop <-chan struct{}, p *pacer) {
	for round := 1; ; round++ {
		for _, t := range w.pool {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			if !p.wait(stop) {
				return
			}
			select {
			case <-t.Released:
			case <-time.After(30 * time.Second):
				w.err = fmt.Errorf("the HTTP transport did not release a request body in 30 s")
				return
			case <-ctx.Done():
				return
			}
			t.Stamp(round, time.Now())
			if !w.send(ctx, stop, t) {
				return
			}
		}
	}
}

// send posts one batch like the apiserver's webhook backend: on any non-2xx
// answer or error it waits (Retry-After when given, else 1 s: the bench
// cannot wait the apiserver's 10 s backoff) and sends it again, up to
// maxAttempts. It returns false when the worker must stop.
func (w *worker) send(ctx context.Context, stop <-chan struct{}, t *workload.Template) bool {
	for attempt := 1; ; attempt++ {
		s, wait, err := w.post(ctx, t)
		s.retry = attempt > 1
		w.samples = append(w.samples, s)
		if ctx.Err() != nil {
			return false
		}
		if s.code >= 200 && s.code < 300 {
			return true
		}
		if s.code == http.StatusUnauthorized || s.code == http.StatusBadRequest || s.code == http.StatusRequestEntityTooLarge {
			w.err = fmt.Errorf("the sink refused a batch: %v", err)
			return false
		}
		if attempt == maxAttempts {
			w.dropped = append(w.dropped, time.Now())
			return true
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-stop:
			timer.Stop()
			return false
		case <-ctx.Done():
			timer.Stop()
			return false
		}
	}
}

// post sends t once and says how long to wait before a retry.
func (w *worker) post(ctx context.Context, t *workload.Template) (sample, time.Duration, error) {
	body := &releasingBody{Reader: bytes.NewReader(t.Body), done: make(chan struct{})}
	t.Released = body.done
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, body)
	if err != nil {
		_ = body.Close()
		return sample{done: time.Now()}, time.Second, fmt.Errorf("request: %w", err)
	}
	req.ContentLength = int64(len(t.Body))
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, */*")
	req.Header.Set("Authorization", w.auth)
	req.Header.Set("User-Agent", "options-record-bench (kube-apiserver audit webhook emulation)")
	start := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		return sample{done: time.Now(), latency: time.Since(start), events: t.Events}, time.Second, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	s := sample{done: time.Now(), code: resp.StatusCode, events: t.Events}
	s.latency = s.done.Sub(start)
	if w.proto == "" {
		w.proto = resp.Proto
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		var out struct {
			Kept int `json:"kept"`
		}
		if json.Unmarshal(b, &out) == nil {
			s.kept = out.Kept
		}
		return s, 0, nil
	}
	wait := time.Second
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra >= 0 {
		wait = min(time.Duration(ra)*time.Second, 10*time.Second)
	}
	return s, wait, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
}

// summarize counts the samples of every worker that completed in [from, to).
func summarize(ws []*worker, from, to time.Time) counts {
	c := counts{non2xx: map[int]int{}}
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	for _, w := range ws {
		if c.proto == "" {
			c.proto = w.proto
		}
		if w.err != nil && c.workerError == nil {
			c.workerError = w.err
		}
		for _, s := range w.samples {
			if !in(s.done) {
				continue
			}
			if s.retry {
				c.retries++
			}
			if s.code >= 200 && s.code < 300 {
				c.batchesOK++
				c.eventsOK += s.events
				c.keptOK += s.kept
				c.latencies = append(c.latencies, s.latency)
			} else {
				c.non2xx[s.code]++
			}
		}
		for _, d := range w.dropped {
			if in(d) {
				c.dropped++
			}
		}
	}
	slices.Sort(c.latencies)
	return c
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
