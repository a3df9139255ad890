// Command audit-replay posts audit log files to an audit webhook the way the
// kube-apiserver's batching webhook backend does: EventList batches over
// HTTPS with a bearer token, retrying a batch that is not acknowledged. The
// demo uses it to feed a sample log to `options-record serve`.
//
//	audit-replay --url https://127.0.0.1:8443/audit --ca ca.crt --token-file token FILE...
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func main() { os.Exit(run()) }

func run() int {
	url := flag.String("url", "https://127.0.0.1:8443/audit", "webhook URL")
	caFile := flag.String("ca", "", "CA of the webhook's serving certificate")
	tokenFile := flag.String("token-file", "", "bearer token file")
	batch := flag.Int("batch-size", 400, "events per EventList")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := newClient(*url, *caFile, *tokenFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit-replay:", err)
		return 1
	}
	sent := 0
	for _, f := range flag.Args() {
		n, err := c.replay(ctx, f, *batch)
		sent += n
		if err != nil {
			fmt.Fprintf(os.Stderr, "audit-replay: %s: %v\n", f, err)
			return 1
		}
	}
	fmt.Printf("posted %d events to %s\n", sent, *url)
	return 0
}

type client struct {
	url, token string
	http       *http.Client
	backoff    wait.Backoff // postBackoff; a test's is shorter
}

// postBackoff spaces post's attempts: 5 in all, 1 s apart growing by half
// each time (as before), each up to a tenth longer at random.
var postBackoff = wait.Backoff{Duration: time.Second, Factor: 1.5, Jitter: 0.1, Steps: 5, Cap: 10 * time.Second}

func newClient(url, caFile, tokenFile string) (*client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no certificate", caFile)
		}
	}
	c := &client{url: url, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}, backoff: postBackoff}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, err
		}
		c.token = strings.TrimSpace(string(b))
	}
	return c, nil
}

// replay reads one Event per line (log backend format) and posts batches.
func (c *client) replay(ctx context.Context, path string, size int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var items []json.RawMessage
	sent := 0
	flush := func() error {
		if len(items) == 0 {
			return nil
		}
		body, err := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": items})
		if err != nil {
			return err
		}
		if err := c.post(ctx, body); err != nil {
			return err
		}
		sent += len(items)
		items = items[:0]
		return nil
	}
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		items = append(items, append(json.RawMessage(nil), line...))
		if len(items) >= size {
			if err := flush(); err != nil {
				return sent, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return sent, err
	}
	return sent, flush()
}

// post sends a batch, retrying like the apiserver on any non-2xx answer
// but a 4xx other than 429. It gives up after the backoff's steps (the
// last answer is its error) and when ctx ends.
func (c *client) post(ctx context.Context, body []byte) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, c.backoff, func(ctx context.Context) (bool, error) {
		var retry bool
		retry, last = c.postOnce(ctx, body)
		switch {
		case last == nil:
			return true, nil
		case !retry || errors.Is(last, context.Canceled):
			return false, last
		}
		return false, nil
	})
	if wait.Interrupted(err) && last != nil && ctx.Err() == nil {
		return last // out of attempts
	}
	return err
}

// postOnce sends a batch once; retry says whether sending it again may
// succeed.
func (c *client) postOnce(ctx context.Context, body []byte) (retry bool, _ error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return true, err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	return resp.StatusCode/100 != 4 || resp.StatusCode == http.StatusTooManyRequests, err
}
