package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// limits bound an HTTP server's connections, so that no client can hold
// the others up; a zero is http.Server's default (no bound).
type limits struct {
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
	// maxStreams caps the HTTP/2 streams one connection may have open at
	// once (each a request to authenticate); zero is Go's default, 250.
	maxStreams int
}

// httpServer is every HTTP listener of serve (webhook, metrics, restore
// API): an http.Server with bounded connections, its errors logged through
// slog, TLS when given a configuration, and a graceful stop.
type httpServer struct {
	*http.Server
	name string
	addr net.Addr // where it listens, once started
	done chan error
}

func newHTTPServer(name string, h http.Handler, tlsCfg *tls.Config, l limits, log *slog.Logger) *httpServer {
	var h2 *http.HTTP2Config
	if l.maxStreams > 0 {
		h2 = &http.HTTP2Config{MaxConcurrentStreams: l.maxStreams}
	}
	return &httpServer{name: name, Server: &http.Server{
		HTTP2:             h2,
		Handler:           h,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
}

// serve serves ln in the background, over TLS when the server has a TLS
// configuration. If it stops serving before stop, the error goes to failed
// if set, else stop returns it.
func (s *httpServer) serve(ln net.Listener, failed func(error)) {
	s.addr, s.done = ln.Addr(), make(chan error, 1)
	go func() {
		var err error
		if s.TLSConfig != nil {
			err = s.ServeTLS(ln, "", "")
		} else {
			err = s.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil && failed != nil {
			failed(fmt.Errorf("serve: %s: %w", s.name, err))
			err = nil
		}
		s.done <- err
	}()
}

// stop stops accepting, lets the requests in flight finish until ctx ends,
// and returns once serving has ended.
func (s *httpServer) stop(ctx context.Context) error {
	err := s.Shutdown(ctx)
	return errors.Join(err, <-s.done)
}

// component listens on addr (with listen) and serves until stopped; a server that stops
// serving on its own ends l's run.
func (s *httpServer) component(addr string, listen func(string) (net.Listener, error), l *lifecycle) component {
	return component{s.name, func(context.Context) (func(context.Context) error, error) {
		ln, err := listen(addr)
		if err != nil {
			return nil, fmt.Errorf("%s listener: %w", s.name, err)
		}
		s.serve(ln, l.fail)
		return s.stop, nil
	}}
}
