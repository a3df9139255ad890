package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Pair is a certificate and its key, PEM-encoded.
type Pair struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
	key             *ecdsa.PrivateKey
}

// NewCA creates a self-signed CA.
func NewCA(name string, validity time.Duration) (*Pair, error) {
	return newPair(name, validity, nil, nil, nil, true, nil)
}

// Issue signs a certificate for hosts (DNS names or IPs) with usages: server
// if server, client otherwise.
func (ca *Pair) Issue(cn string, hosts []string, server bool, validity time.Duration) (*Pair, error) {
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if server {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	return newPair(cn, validity, hosts, ca.Cert, ca.key, false, usage)
}

func newPair(cn string, validity time.Duration, hosts []string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool, usage []x509.ExtKeyUsage) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("certs: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           usage,
		BasicConstraintsValid: true,
		IsCA:                  isCA,
	}
	if isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, fmt.Errorf("certs: sign %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parse %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: marshal key: %w", err)
	}
	return &Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		Cert:    cert,
		key:     key,
	}, nil
}

// Write stores the pair as <base>.crt and <base>.key (0600) in dir.
func (p *Pair) Write(dir, base string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key")
	if err := os.WriteFile(certFile, p.CertPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("certs: %w", err)
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("certs: %w", err)
	}
	return certFile, keyFile, nil
}

// EnsureSelfSigned returns a serving certificate for hosts under dir,
// creating a CA (ca.crt) and a serving pair (tls.crt, tls.key) on first use.
// It is the standalone default: operators of a real cluster bring their own.
func EnsureSelfSigned(dir string, hosts []string) (caFile, certFile, keyFile string, err error) {
	caFile = filepath.Join(dir, "ca.crt")
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := os.Stat(certFile); err == nil {
		return caFile, certFile, keyFile, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", fmt.Errorf("certs: %w", err)
	}
	ca, err := NewCA("options-record standalone CA", 10*365*24*time.Hour)
	if err != nil {
		return "", "", "", err
	}
	srv, err := ca.Issue("options-record", hosts, true, 2*365*24*time.Hour)
	if err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		return "", "", "", fmt.Errorf("certs: %w", err)
	}
	if _, _, err := srv.Write(dir, "tls"); err != nil {
		return "", "", "", err
	}
	return caFile, certFile, keyFile, nil
}
