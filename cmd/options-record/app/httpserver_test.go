package app

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestWebhookHeadersHaveADeadline: the webhook's headers must arrive
// within a bound of their own (ReadHeaderTimeout), shorter than the whole
// request's, so that idle connections cannot pile up before a request
// starts; and the server built from limits enforces it: a caller that
// sends half a request line is cut off, while a complete request is
// answered.
func TestWebhookHeadersHaveADeadline(t *testing.T) {
	if l := webhookLimits; l.readHeader <= 0 || l.readHeader >= l.read || l.maxHeaderBytes <= 0 {
		t.Fatalf("webhook limits %+v: want a header deadline shorter than the request's, and a header size bound", l)
	}
	l := webhookLimits
	l.readHeader, l.read, l.write, l.idle = 200*time.Millisecond, 0, 0, 0 // the header deadline alone
	srv := newHTTPServer("webhook", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		nil, l, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.serve(ln, nil)
	t.Cleanup(func() { _ = srv.Close() })

	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "POST /audit HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	// The server must hang up on its own; the deadline here only keeps a
	// server without one from hanging the test.
	_ = slow.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err == nil {
		resp.Body.Close()
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a request whose headers never end was not cut off by the server")
	}

	ok, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if _, err := io.WriteString(ok, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(ok), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a complete request: %v %v", resp, err)
	}
	resp.Body.Close()
}
