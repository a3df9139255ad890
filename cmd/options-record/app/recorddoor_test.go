package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/api/aggregated"
	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
)

// fakeKube is the kube-apiserver as the API's delegated checks see it: it
// answers TokenReviews (a token "good-..." is alice, any other is refused)
// and SubjectAccessReviews (allowed), counts them, and holds every
// TokenReview until release is closed.
type fakeKube struct {
	srv          *httptest.Server
	tokenReviews atomic.Int64
	accessChecks atomic.Int64
	entered      chan struct{} // one value per TokenReview received
	release      chan struct{}
	kubeconfig   string
	// frontProxyCA is the CA published in
	// kube-system/extension-apiserver-authentication.
	frontProxyCA atomic.Pointer[[]byte]
}

func newFakeKube(t *testing.T, hold bool) *fakeKube {
	t.Helper()
	k := &fakeKube{entered: make(chan struct{}, 10000), release: make(chan struct{})}
	if !hold {
		close(k.release)
	}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			k.tokenReviews.Add(1)
			k.entered <- struct{}{}
			var tr authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			select {
			case <-k.release:
			case <-r.Context().Done():
				return
			}
			if strings.HasPrefix(tr.Spec.Token, "good-") {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", UID: "uid-alice"}}
			}
			_ = json.NewEncoder(w).Encode(tr)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
			k.accessChecks.Add(1)
			var sar authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sar.Status.Allowed = true
			_ = json.NewEncoder(w).Encode(sar)
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication":
			ca := k.frontProxyCA.Load()
			if ca == nil {
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "extension-apiserver-authentication"},
				Data:       map[string]string{"requestheader-client-ca-file": string(*ca), "requestheader-allowed-names": `["front-proxy-client"]`}})
		case r.Method == http.MethodGet && r.URL.Path == "/version":
			_ = json.NewEncoder(w).Encode(map[string]string{"major": "1", "minor": "36", "gitVersion": "v1.36.3"})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		select {
		case <-k.release:
		default:
			close(k.release)
		}
		k.srv.Close()
	})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fake"] = &clientcmdapi.Cluster{Server: k.srv.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["sink"] = &clientcmdapi.AuthInfo{Token: "sink-token"}
	cfg.Contexts["fake"] = &clientcmdapi.Context{Cluster: "fake", AuthInfo: "sink"}
	cfg.CurrentContext = "fake"
	k.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, k.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *fakeKube) unhold() { close(k.release) }

// addrLogger hands over the "addr" of the first record whose message is msg.
type addrLogger struct {
	msg  string
	addr chan string
}

func (h *addrLogger) Enabled(context.Context, slog.Level) bool { return true }
func (h *addrLogger) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return nil
}
func (h *addrLogger) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *addrLogger) WithGroup(string) slog.Handler      { return h }

// allowAll authorizes everything.
type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// nopRecord is a record nothing is read from: the requests of these tests
// end at authentication or discovery.
type nopHistory struct{ history.Reader }
type nopRestore struct{ restore.Reader }

// startRecordDoor runs serve's record door (--record-bind-address) as
// runAPI wires it, with the API options api, against kube; it returns its
// address and a client trusting its certificate.
func startRecordDoor(t *testing.T, kube *fakeKube, api restoreapi.Options) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("test CA", time.Hour)
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
	so := &ServeOptions{Cluster: "default", TLSCertFile: certFile, TLSKeyFile: keyFile, Kube: &KubeOptions{Kubeconfig: kube.kubeconfig}}
	cfg, err := so.Kube.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	if api.Authenticator, _, err = delegatingAuth(cfg, nil); err != nil {
		t.Fatal(err)
	}
	hist, err := history.New(history.Options{Reader: nopHistory{}, Authorizer: allowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := restore.New(restore.Options{History: hist, Reader: nopRestore{}})
	if err != nil {
		t.Fatal(err)
	}
	api.History, api.Restore = hist, svc
	if api.Callers == nil {
		api.Callers = history.NewCallerLimiter(0)
	}
	logs := &addrLogger{msg: "serving the record directly to bearer tokens", addr: make(chan string, 1)}
	stop, err := runRecordDirect(context.Background(), &APIOptions{RecordAddr: "127.0.0.1:0", MaxInFlight: 1000}, so, api, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
	addr := <-logs.addr
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	// The server answers once its post-start hooks ran; wait for it to
	// answer at all (any status).
	c := clientFrom(pool, "127.0.0.1")
	for i := 0; ; i++ {
		resp, err := c.Get("https://" + addr + "/version")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i == 200 {
			t.Fatalf("the record door does not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr, pool
}

// clientFrom is an HTTPS client (HTTP/2 preferred) connecting from the
// loopback address ip.
func clientFrom(pool *x509.CertPool, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, ForceAttemptHTTP2: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, MaxConnsPerHost: 4}}
}

// get sends a GET with token and returns the status, or 0 on an error.
func get(c *http.Client, url, token string) int {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestRecordDoorBadTokensReachAtMostTheBurst: 500 bad tokens sent at once
// from one address to the record door cost at most the failure burst (10)
// of TokenReviews, counted where the kube-apiserver receives them; the
// others are answered 429 at once.
func TestRecordDoorBadTokensReachAtMostTheBurst(t *testing.T) {
	t.Parallel()
	kube := newFakeKube(t, true)
	addr, pool := startRecordDoor(t, kube, restoreapi.Options{})
	const n, burst = 500, 10
	c := clientFrom(pool, "127.0.0.1")
	answered := make(chan int, n)
	for i := range n {
		go func() { answered <- get(c, "https://"+addr+"/version", fmt.Sprintf("forged-%d", i)) }()
	}
	reached, refused, codes := 0, 0, map[int]int{}
	for reached+refused < n {
		select {
		case <-kube.entered:
			reached++
		case code := <-answered:
			refused++
			codes[code]++
		}
	}
	kube.unhold()
	if reached > burst {
		t.Errorf("%d of %d concurrent bad tokens reached TokenReview; want at most the burst, %d", reached, n, burst)
	}
	if codes[http.StatusTooManyRequests] != refused {
		t.Errorf("answers before any TokenReview ended: %v; want all 429", codes)
	}
}

// TestRecordDoorCapsRequestsBeingAuthenticated: at most 8 requests of one
// address, and 64 in all, wait for their TokenReview at once; the next is
// answered 429 at once, good token or not.
func TestRecordDoorCapsRequestsBeingAuthenticated(t *testing.T) {
	t.Parallel()
	kube := newFakeKube(t, true)
	addr, pool := startRecordDoor(t, kube, restoreapi.Options{})
	url := "https://" + addr + "/version"
	answered := make(chan int, 100)
	var tokens atomic.Int64 // each request its own token: TokenReviews of one token are shared
	send := func(ip string, n int) {
		c := clientFrom(pool, ip)
		for range n {
			tok := fmt.Sprintf("good-%d", tokens.Add(1))
			go func() { answered <- get(c, url, tok) }()
		}
	}
	// wait waits until n more requests reached TokenReview, failing on any
	// answer meanwhile.
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-kube.entered:
			case code := <-answered:
				t.Fatalf("a request was answered %d while its address had places", code)
			}
		}
	}
	send("127.0.0.1", 8)
	wait(8)
	refused := func(what string) {
		t.Helper()
		select {
		case code := <-answered:
			if code != http.StatusTooManyRequests {
				t.Fatalf("%s: %d, want 429", what, code)
			}
		case <-kube.entered:
			t.Fatalf("%s reached TokenReview; want 429", what)
		}
	}
	send("127.0.0.1", 1)
	refused("the 9th request of an address being authenticated")
	for i := 2; i <= 8; i++ {
		send(fmt.Sprintf("127.0.0.%d", i), 8)
	}
	wait(7 * 8)
	send("127.0.0.9", 1)
	refused("the 65th request being authenticated")
	kube.unhold()
	for range 64 {
		if code := <-answered; code != http.StatusOK {
			t.Errorf("a request let through: %d, want 200 once authenticated", code)
		}
	}
	if n := kube.tokenReviews.Load(); n != 64 {
		t.Errorf("%d TokenReviews; want the 64 let through", n)
	}
}

// TestRecordDoorStreamsPerConnection: the record door, served to anyone
// with a token, offers far fewer HTTP/2 streams per connection than the
// aggregated door (1,000, for the kube-apiserver's multiplexed proxy).
func TestRecordDoorStreamsPerConnection(t *testing.T) {
	t.Parallel()
	kube := newFakeKube(t, false)
	addr, pool := startRecordDoor(t, kube, restoreapi.Options{})
	if v, ok := maxStreams(t, addr, pool); !ok || v != aggregated.DirectMaxStreamsPerConnection || v > 100 {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS = %d (sent %v); want %d", v, ok, aggregated.DirectMaxStreamsPerConnection)
	}
}

// maxStreams opens an HTTP/2 connection to addr (a server whose
// certificate pool verifies, for localhost) and returns the
// SETTINGS_MAX_CONCURRENT_STREAMS it announces, if it announces one.
func maxStreams(t *testing.T, addr string, pool *x509.CertPool) (uint32, bool) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			return sf.Value(http2.SettingMaxConcurrentStreams)
		}
	}
}

// TestTokenReviewsDoNotWaitForAccessChecks: the per-object
// SubjectAccessReviews go through a client of their own, so a caller
// whose reads exhaust that client's rate does not delay anyone's
// authentication: with the access checks' client throttled, a TokenReview
// is still asked and answered.
func TestTokenReviewsDoNotWaitForAccessChecks(t *testing.T) {
	t.Parallel()
	kube := newFakeKube(t, false)
	cfg, err := (&KubeOptions{Kubeconfig: kube.kubeconfig}).RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	rates := defaultReviewRates
	rates.accessQPS, rates.accessBurst = 0.001, 1 // one check, then one every 1,000 s
	authn, authz, err := delegatingAuthWith(cfg, nil, rates)
	if err != nil {
		t.Fatal(err)
	}
	check := func(ctx context.Context, name string) error {
		_, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"},
			Verb: "get", Resource: "configmaps", Namespace: "prod", Name: name, ResourceRequest: true})
		return err
	}
	if err := check(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	throttled := make(chan error, 1)
	go func() { throttled <- check(ctx, "b") }()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer good-1")
	resp, ok, err := authn.AuthenticateRequest(req)
	if !ok || err != nil || resp.User.GetName() != "alice" {
		t.Errorf("TokenReview while the access checks are throttled: ok %v, err %v; want alice", ok, err)
	}
	cancel()
	<-throttled
	if n := kube.accessChecks.Load(); n != 1 {
		t.Errorf("%d access checks reached the kube-apiserver; want 1 (the second throttled)", n)
	}
	if n := kube.tokenReviews.Load(); n != 1 {
		t.Errorf("%d TokenReviews; want 1", n)
	}
}
