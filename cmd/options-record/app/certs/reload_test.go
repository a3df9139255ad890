package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClientCAReloads: a client CA file that changes (a rotated CA) is
// taken without a restart, and one that holds no certificate keeps the CA
// in force.
func TestClientCAReloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	oldCA, err := NewCA("old clients CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := NewCA("new clients CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := oldCA.Issue("sink", []string{"127.0.0.1"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := srv.Write(dir, "tls")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "clients-ca.crt")
	write := func(b []byte) {
		t.Helper()
		// A new file renamed into place, as a mounted Secret changes.
		tmp := caFile + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, caFile); err != nil {
			t.Fatal(err)
		}
	}
	write(oldCA.CertPEM)
	r, err := NewReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	r.interval = 10 * time.Millisecond
	// What the reloader logs: a file it refused is an event to wait for.
	var logged lockedBuffer
	r.WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	cfg, err := ServerConfig(r, caFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil || len(tc.ConnectionState().VerifiedChains) == 0 {
					return
				}
				_, _ = c.Write([]byte("v")) // a verified client certificate
			}()
		}
	}()
	roots := x509.NewCertPool()
	roots.AddCert(oldCA.Cert)
	// accepted tells whether a client certificate of ca gets through the handshake.
	accepted := func(ca *Pair) bool {
		client, err := ca.Issue("kube-apiserver", nil, false, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{RootCAs: roots, ServerName: "127.0.0.1",
				// Presented even when the server names another CA.
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
		if err != nil {
			return false
		}
		defer c.Close()
		// TLS 1.3: the server's verdict on the client certificate comes with the first read.
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		n, _ := c.Read(b[:])
		return n == 1 && b[0] == 'v'
	}
	// The minute only ends a test where it never happens.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !accepted(oldCA) || accepted(newCA) {
		t.Fatalf("before rotation: old CA accepted %v, new CA accepted %v; want true, false", accepted(oldCA), accepted(newCA))
	}
	write(newCA.CertPEM)
	eventually("the rotated client CA is taken", func() bool { return accepted(newCA) && !accepted(oldCA) })
	reloads := strings.Count(logged.String(), "client CA reloaded")
	write([]byte("not a certificate"))
	// Handshakes until the reloader has read the file (it logs a refusal
	// or a reload), instead of a sleep that passes when it never read it.
	eventually("the CA file without a certificate read", func() bool {
		accepted(newCA)
		l := logged.String()
		return strings.Contains(l, "client CA not reloaded") || strings.Count(l, "client CA reloaded") > reloads
	})
	if !accepted(newCA) {
		t.Error("a client CA file without a certificate replaced the CA in force")
	}
}

// lockedBuffer is a log destination written by handshakes and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
