package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// Reloader serves a certificate and key from files, re-reading them when
// their modification time changes (checked at most every Interval).
type Reloader struct {
	certFile, keyFile string
	interval          time.Duration

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

// NewReloader loads the pair once, so a bad pair fails at start-up.
func NewReloader(certFile, keyFile string) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, interval: 10 * time.Second}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
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
			_ = r.load()
		}
	}
	return r.cert, nil
}

// ServerConfig is a TLS 1.2+ server configuration serving the reloaded
// certificate. With a client CA it asks for client certificates and lets
// the TLS layer verify any that is presented; the handler then decides
// whether a verified certificate or a bearer token authenticates the caller.
func ServerConfig(r *Reloader, clientCAFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	if clientCAFile != "" {
		pool, err := LoadPool(clientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
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
