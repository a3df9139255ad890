package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
)

// frontProxy is a front-proxy CA and the kube-apiserver's proxy client
// certificate it signed.
type frontProxy struct {
	ca     *certs.Pair
	client tls.Certificate
}

func newFrontProxy(t *testing.T) frontProxy {
	t.Helper()
	ca, err := certs.NewCA("front-proxy-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue("front-proxy-client", nil, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return frontProxy{ca: ca, client: pair}
}

// TestAggregatedFollowsTheFrontProxyCA: the aggregated door takes a
// rotated front-proxy CA without a restart, whether it reads it from a
// mounted file (--aggregated-requestheader-ca-file) or from the cluster
// with a GET on a timer: the proxy's new certificate is accepted, the old
// one refused.
func TestAggregatedFollowsTheFrontProxyCA(t *testing.T) {
	t.Parallel()
	for _, fromCluster := range []bool{false, true} {
		name := "mounted file"
		if fromCluster {
			name = "from the cluster"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kube := newFakeKube(t, false)
			dir := t.TempDir()
			oldProxy, newProxy := newFrontProxy(t), newFrontProxy(t)
			a := &AggregatedOptions{Addr: "127.0.0.1:0", caRefresh: 20 * time.Millisecond}
			rotate := func(p frontProxy) { kube.frontProxyCA.Store(&p.ca.CertPEM) }
			if !fromCluster {
				a.RequestHeaderCAFile = filepath.Join(dir, "front-proxy-ca.crt")
				a.RequestHeaderAllowedNames = []string{"front-proxy-client"}
				rotate = func(p frontProxy) {
					// As a kubelet updates a mounted ConfigMap: a new file renamed over.
					tmp := a.RequestHeaderCAFile + ".new"
					if err := os.WriteFile(tmp, p.ca.CertPEM, 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, a.RequestHeaderCAFile); err != nil {
						t.Fatal(err)
					}
				}
			}
			rotate(oldProxy)
			addr, pool := startAggregated(t, kube, a, dir)
			get := func(p frontProxy) int {
				c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost",
					Certificates: []tls.Certificate{p.client}}}}
				req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/apis/record.optionsrecord.io/v1alpha1", nil)
				req.Header.Set("X-Remote-User", "alice")
				req.Header.Set("X-Remote-Group", "system:authenticated")
				resp, err := c.Do(req)
				if err != nil {
					return 0 // refused in the handshake
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for i := 0; get(oldProxy) != http.StatusOK; i++ {
				if i == 200 {
					t.Fatalf("the proxy's certificate is refused: %d", get(oldProxy))
				}
				time.Sleep(50 * time.Millisecond) // the server starting
			}
			rotate(newProxy)
			for i := 0; get(newProxy) != http.StatusOK; i++ {
				if i == 600 {
					t.Fatal("the rotated front-proxy CA was not taken")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if code := get(oldProxy); code == http.StatusOK {
				t.Errorf("the proxy's certificate of the old CA: %d, want it refused", code)
			}
		})
	}
}

// startAggregated runs serve's aggregated door (runAggregated) against
// kube with a, its data directory dir; it returns its address and a pool
// trusting its serving certificate.
func startAggregated(t *testing.T, kube *fakeKube, a *AggregatedOptions, dir string) (string, *x509.CertPool) {
	t.Helper()
	ca, err := certs.NewCA("serving CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue("options-record", []string{"localhost"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := pair.Write(dir, "tls")
	if err != nil {
		t.Fatal(err)
	}
	so := &ServeOptions{Cluster: "default", TLSCertFile: certFile, TLSKeyFile: keyFile, Database: DatabaseOptions{DataDir: dir},
		Kube: &KubeOptions{Kubeconfig: kube.kubeconfig}}
	hist, err := history.New(history.Options{Reader: nopHistory{}, Authorizer: allowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := restore.New(restore.Options{History: hist, Reader: nopRestore{}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &addrLogger{msg: "serving the aggregated API", addr: make(chan string, 1)}
	stop, err := runAggregated(context.Background(), &APIOptions{Aggregated: a}, so, hist, svc, history.NewCallerLimiter(0), nil, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	return <-logs.addr, pool
}
