package controlplane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
)

// API aggregation on the e2e control plane (Options.Aggregation).
//
// The kube-apiserver proxies requests for an APIService's group to the
// backend named by spec.service. With no nodes, pods or kube-proxy, the only
// backend reachable on loopback is a Service of type ExternalName whose
// externalName is "localhost" (or 127.0.0.1): the aggregator's default
// resolver (--enable-aggregator-routing=false) turns it into
// https://<externalName>:<APIService spec.service.port> and verifies the
// backend's certificate against spec.caBundle with the server name
// <service>.<namespace>.svc. --enable-aggregator-routing=true resolves
// through EndpointSlices instead, which refuses ExternalName Services, and an
// EndpointSlice or Endpoints cannot hold a loopback address (validation
// rejects 127.0.0.0/8), so aggregator routing is left off.
//
// The proxied request carries the front-proxy client certificate
// (FrontProxyClientName, signed by the front-proxy CA) and the caller in
// X-Remote-User, X-Remote-Uid, X-Remote-Group and X-Remote-Extra-* headers.

// FrontProxyClientName is the common name of the kube-apiserver's proxy
// client certificate, the only name --requestheader-allowed-names allows.
const FrontProxyClientName = "front-proxy-client"

// aggregationArgs writes the front-proxy CA and the proxy client pair into
// dir and returns the kube-apiserver flags that enable aggregation.
func (cp *ControlPlane) aggregationArgs() ([]string, error) {
	ca, err := certs.NewCA("options-record-e2e-front-proxy-ca", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue(FrontProxyClientName, nil, false, 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("front-proxy client certificate: %w", err)
	}
	caFile, _, err := ca.Write(cp.dir, "front-proxy-ca")
	if err != nil {
		return nil, err
	}
	certFile, keyFile, err := client.Write(cp.dir, "front-proxy-client")
	if err != nil {
		return nil, err
	}
	cp.frontProxyCAFile = caFile
	cp.frontProxyCert, cp.frontProxyKey = certFile, keyFile
	return []string{
		"--requestheader-client-ca-file=" + caFile,
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + certFile,
		"--proxy-client-key-file=" + keyFile,
		"--enable-aggregator-routing=false",
	}, nil
}

// FrontProxyCAFile is the CA that signs the kube-apiserver's proxy client
// certificate (its --requestheader-client-ca-file); empty unless
// Options.Aggregation was set.
func (cp *ControlPlane) FrontProxyCAFile() string { return cp.frontProxyCAFile }

// FrontProxyClientFiles are the kube-apiserver's proxy client certificate
// and key, to call an aggregated server as the kube-apiserver does.
func (cp *ControlPlane) FrontProxyClientFiles() (certFile, keyFile string) {
	return cp.frontProxyCert, cp.frontProxyKey
}

// Token returns the bearer token of a user of the static token file.
func (cp *ControlPlane) Token(user string) string { return cp.tokens[user] }

// WriteKubeconfigAuth writes a kubeconfig for the control plane with the
// given credentials (a client certificate, a token with impersonation, ...)
// and returns its path; name only names the file.
func (cp *ControlPlane) WriteKubeconfigAuth(t testing.TB, name string, auth *clientcmdapi.AuthInfo) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.host, CertificateAuthorityData: cp.ca.CertPEM}
	cfg.AuthInfos[name] = auth
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(cp.dir, "kubeconfig-auth-"+strings.NewReplacer(":", "_", "/", "_").Replace(name))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("controlplane: write kubeconfig %s: %v", name, err)
	}
	return path
}

// ClientCertAuth returns credentials with a client certificate the
// kube-apiserver accepts (--client-ca-file): CN = user, O = groups.
func (cp *ControlPlane) ClientCertAuth(t testing.TB, user string, groups []string) *clientcmdapi.AuthInfo {
	t.Helper()
	certPEM, keyPEM, err := issueClientCert(cp.ca, user, groups)
	if err != nil {
		t.Fatalf("controlplane: client certificate for %s: %v", user, err)
	}
	return &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
}

// issueClientCert signs a client certificate with organisations (groups),
// which cmd/options-record/app/certs does not set.
func issueClientCert(ca *certs.Pair, user string, groups []string) (certPEM, keyPEM []byte, err error) {
	block, _ := pem.Decode(ca.KeyPEM)
	if block == nil {
		return nil, nil, errors.New("CA key is not PEM")
	}
	caKey, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse CA key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// KubectlConfig runs the real kubectl with the given kubeconfig (see
// WriteKubeconfigAuth), like Kubectl does for a token user.
func (cp *ControlPlane) KubectlConfig(t testing.TB, kubeconfig string, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	// A cache per kubeconfig: discovery is cached per user's server and
	// a stale group list would hide a newly registered APIService.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(cp.dir, "kubectl-cache-"+filepath.Base(kubeconfig)))
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
