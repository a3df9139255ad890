package certs

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Reloader serves a certificate and key from files, re-reading them when
// their modification time changes (checked at most every Interval).
type Reloader struct {
	certFile, keyFile string
	interval          time.Duration
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// NewReloader loads the pair once, so a bad pair fails at start-up.
func NewReloader(certFile, keyFile string) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, interval: 10 * time.Second, log: slog.New(slog.DiscardHandler)}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// WithLogger sets where reloads, and files that failed to reload, are logged.
func (r *Reloader) WithLogger(log *slog.Logger) *Reloader {
	r.log = log
	return r
}

func (r *Reloader) load() error {
	st, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("certs: load %s: %w", r.certFile, err)
	}
	r.cert, r.modTime = &c, st.ModTime()
	return nil
}

// GetCertificate implements tls.Config.GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= r.interval {
		r.checked = now
		if st, err := os.Stat(r.certFile); err == nil && !st.ModTime().Equal(r.modTime) {
			// Keep serving the old pair if the new one is half-written.
			if err := r.load(); err != nil {
				r.log.Error("serving certificate not reloaded; the one in force stays", "err", err)
			} else {
				r.log.Info("serving certificate reloaded", "cert", r.certFile)
			}
		}
	}
	return r.cert, nil
}

// ServerConfig is a TLS 1.2+ server configuration serving the reloaded
// certificate. With a client CA it asks for client certificates and lets
// the TLS layer verify any that is presented; the handler then decides
// whether a verified certificate or a bearer token authenticates the caller.
// The client CA file is re-read when its content changes (checked at most
// every interval of r, on a handshake), so a rotated CA takes effect without
// a restart; a file that holds no certificate keeps the CA in force.
func ServerConfig(r *Reloader, clientCAFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	if clientCAFile != "" {
		ca := &clientCA{file: clientCAFile, interval: r.interval, log: r.log, base: cfg.Clone()}
		if err := ca.load(); err != nil {
			return nil, err
		}
		ca.checked = time.Now()
		cfg.ClientCAs = ca.cfg.Load().ClientCAs
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		cfg.GetConfigForClient = ca.configForClient
	}
	return cfg, nil
}

// clientCA follows a client CA file: each handshake gets the configuration
// of the CA in force.
type clientCA struct {
	file     string
	interval time.Duration
	log      *slog.Logger
	base     *tls.Config // without client CAs

	cfg     atomic.Pointer[tls.Config]
	mu      sync.Mutex // held by the one handshake that re-reads; others go on
	checked time.Time
	digest  [32]byte // of the file in force
	failed  [32]byte // of the last file that failed, reported once
}

func (c *clientCA) load() error {
	data, err := os.ReadFile(c.file)
	if err != nil {
		return fmt.Errorf("certs: read CA: %w", err)
	}
	d := sha256.Sum256(data)
	if c.cfg.Load() != nil && (d == c.digest || d == c.failed) {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		c.failed = d
		return fmt.Errorf("certs: %s holds no PEM certificate", c.file)
	}
	cfg := c.base.Clone()
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	if c.cfg.Load() != nil {
		c.log.Info("client CA reloaded", "file", c.file)
	}
	c.cfg.Store(cfg)
	c.digest = d
	return nil
}

// configForClient implements tls.Config.GetConfigForClient.
func (c *clientCA) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	if c.mu.TryLock() {
		if now := time.Now(); now.Sub(c.checked) >= c.interval {
			c.checked = now
			if err := c.load(); err != nil {
				c.log.Error("client CA not reloaded; the one in force stays", "err", err)
			}
		}
		c.mu.Unlock()
	}
	return c.cfg.Load(), nil
}

// LoadPool reads PEM certificates into a pool.
func LoadPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("certs: read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("certs: %s holds no PEM certificate", file)
	}
	return pool, nil
}
