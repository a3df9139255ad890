package controlplane

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/store/pgtest"
)

// EnvDir names the environment variable holding the directory with the etcd,
// kube-apiserver, kube-controller-manager and kubectl binaries (set by `make
// controlplane` / hack/make/controlplane.mk). When it is unset, the binaries
// test/cpbuild/build.sh cached are used; when there are none, the test fails
// under make (pgtest.EnvRequire) and skips otherwise.
const EnvDir = "OPTIONS_RECORD_CONTROLPLANE_DIR"

// EnvLogs names the environment variable of a directory where the processes'
// logs are kept after the test (see Options.LogDir).
const EnvLogs = "OPTIONS_RECORD_CONTROLPLANE_LOGS"

// AdminUser is the name of the user in system:masters that AdminConfig uses.
const AdminUser = "options-record-e2e-admin"

// ControllerManagerUser is the identity kube-controller-manager logs in as;
// the default RBAC bootstrap policy binds it to system:kube-controller-manager.
const ControllerManagerUser = "system:kube-controller-manager"

// DefaultControllers are the kube-controller-manager controllers started when
// Options.Controllers is nil: namespace deletion and garbage collection give
// real cascades; ClusterRole aggregation fills the admin/edit/view roles;
// the serviceaccount controller creates each namespace's "default"
// ServiceAccount, which pod admission needs.
var DefaultControllers = []string{
	"namespace-controller",
	"garbage-collector-controller",
	"clusterrole-aggregation-controller",
	"serviceaccount-controller",
}

// User is a user of the apiserver's static token file.
type User struct {
	Name   string
	Groups []string
}

// Options configure Start. The zero value starts etcd, kube-apiserver and
// kube-controller-manager with no auditing and only the admin user.
type Options struct {
	// Users are added to the static token file (besides the admin); get a
	// client for one with UserConfig(name). Names must not contain commas
	// or quotes.
	Users []User

	// AuditPolicyFile is passed as --audit-policy-file; PolicyFile(t) is the
	// shipped policy. When only AuditWebhookConfigFile is set, the shipped
	// policy is used.
	AuditPolicyFile string
	// AuditWebhookConfigFile is passed as --audit-webhook-config-file (see
	// WriteWebhookKubeconfig), with a 1s batch max wait (AuditWebhookBatchMaxWait)
	// and a 1s initial backoff so tests see events quickly. Events are never
	// truncated, as in the shipped settings.
	AuditWebhookConfigFile string
	// AuditWebhookBatchMaxWait is --audit-webhook-batch-max-wait (default
	// 1s; the shipped kind config uses 5s, which makes larger batches).
	AuditWebhookBatchMaxWait time.Duration

	// Controllers run by kube-controller-manager (--controllers); nil means
	// DefaultControllers. To run none, set DisableControllerManager.
	Controllers []string
	// DisableControllerManager starts only etcd and kube-apiserver.
	DisableControllerManager bool
	// SharedControllerCredentials runs every controller as
	// system:kube-controller-manager (--use-service-account-credentials=false,
	// with that user bound to the controllers' roles), so audit events of
	// controller actions name system:kube-controller-manager. By default each
	// controller uses its own service account, as kubeadm clusters do, and
	// events name e.g. system:serviceaccount:kube-system:namespace-controller.
	SharedControllerCredentials bool

	// Extra command-line arguments, appended last (so they win).
	ExtraEtcdArgs              []string
	ExtraAPIServerArgs         []string
	ExtraControllerManagerArgs []string

	// Aggregation configures API aggregation: a front-proxy CA, the
	// --requestheader-* flags and a proxy client certificate (see
	// aggregation.go for how an APIService reaches a server on loopback).
	Aggregation bool

	// StartTimeout bounds the whole start-up; default 3 minutes.
	StartTimeout time.Duration
	// LogDir receives etcd.log, kube-apiserver.log and
	// kube-controller-manager.log. Default: $OPTIONS_RECORD_CONTROLPLANE_LOGS/<test
	// name> when that variable is set (logs are kept, e.g. as CI artifacts),
	// else a t.TempDir().
	LogDir string
}

// ControlPlane is a running etcd + kube-apiserver (+ kube-controller-manager).
// Everything is stopped by the test's cleanup.
type ControlPlane struct {
	kubectl    string // the kubectl binary of the same release
	host       string
	ca         *certs.Pair
	dir        string
	tokens     map[string]string // user name -> bearer token
	procs      []*process
	etcdURL    string
	kcmHealthz string

	// What AddAPIServer starts another apiserver with.
	bins    binaries
	apiArgs []string
	logDir  string
	nAPI    int

	frontProxyCAFile string // with Options.Aggregation
	frontProxyCert   string
	frontProxyKey    string
}

// Start starts a control plane for the test and waits until it is ready.
// It fails the test (never skips, except in -short mode) when the binaries are
// not available.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping control-plane test in -short mode")
	}
	bins := findBinaries(t)

	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.Controllers == nil {
		opts.Controllers = DefaultControllers
	}
	if opts.AuditWebhookConfigFile != "" && opts.AuditPolicyFile == "" {
		opts.AuditPolicyFile = PolicyFile(t)
	}
	for _, f := range []string{opts.AuditPolicyFile, opts.AuditWebhookConfigFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("controlplane: audit file: %v", err)
		}
	}
	// t.TempDir registers its removal now, so it runs after our cleanup below
	// (cleanups are LIFO): logs are still there when we print their tails.
	dir := t.TempDir()
	logDir := opts.LogDir
	if logDir == "" && os.Getenv(EnvLogs) != "" {
		logDir = filepath.Join(os.Getenv(EnvLogs), strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	}
	if logDir == "" {
		logDir = dir
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatalf("controlplane: create log dir: %v", err)
	}

	cp := &ControlPlane{dir: dir, tokens: map[string]string{}, kubectl: bins.kubectl}
	t.Cleanup(func() { cp.stop(t) })

	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	begin := time.Now()
	if err := cp.start(ctx, bins, opts, logDir); err != nil {
		t.Fatalf("controlplane: %v", err) // the cleanup prints the log tails
	}
	t.Logf("controlplane: ready at %s in %s (logs in %s)", cp.host, time.Since(begin).Round(time.Millisecond), logDir)
	return cp
}

type binaries struct{ etcd, apiserver, kcm, kubectl string }

func findBinaries(t testing.TB) binaries {
	t.Helper()
	dir, err := binariesDir()
	if err != nil {
		pgtest.Unavailable(t, "the control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kubectl)", "make test-e2e", err)
	}
	b := binaries{
		etcd:      filepath.Join(dir, "etcd"),
		apiserver: filepath.Join(dir, "kube-apiserver"),
		kcm:       filepath.Join(dir, "kube-controller-manager"),
		kubectl:   filepath.Join(dir, "kubectl"),
	}
	for _, p := range []string{b.etcd, b.apiserver, b.kcm, b.kubectl} {
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			t.Fatalf("controlplane: %s=%s lacks the executable %s; run `export %s=$(make -s controlplane)` "+
				"to build the binaries and point at them", EnvDir, dir, filepath.Base(p), EnvDir)
		}
	}
	return b
}

// binariesDir is EnvDir, or else the directory test/cpbuild/build.sh
// caches the binaries of the pinned versions in, when a build left them
// there (a plain go test never starts a build of several minutes).
func binariesDir() (string, error) {
	if dir := os.Getenv(EnvDir); dir != "" {
		return dir, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("%s is not set", EnvDir)
	}
	script := filepath.Join(filepath.Dir(file), "..", "..", "cpbuild", "build.sh")
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "CPBUILD_FIND_ONLY=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s is not set and %s has not built them yet", EnvDir, script)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

func (cp *ControlPlane) start(ctx context.Context, bins binaries, opts Options, logDir string) error {
	dir := cp.dir
	var err error
	if cp.ca, err = certs.NewCA("options-record-e2e-ca", 24*time.Hour); err != nil {
		return err
	}
	serving, err := cp.ca.Issue("kubernetes", []string{"127.0.0.1", "localhost", "::1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}, true, 24*time.Hour)
	if err != nil {
		return fmt.Errorf("apiserver serving certificate: %w", err)
	}
	servingCert, servingKey := serving.CertPEM, serving.KeyPEM
	saKey, err := newSigningKeyPEM()
	if err != nil {
		return err
	}

	users := append([]User{
		{Name: AdminUser, Groups: []string{"system:masters"}},
		{Name: ControllerManagerUser},
	}, opts.Users...)
	var tokenFile strings.Builder
	for i, u := range users {
		if strings.ContainsAny(u.Name+strings.Join(u.Groups, ""), ",\"\n") || u.Name == "" {
			return fmt.Errorf("user %q: names and groups must be non-empty and free of commas and quotes", u.Name)
		}
		if _, dup := cp.tokens[u.Name]; dup {
			return fmt.Errorf("user %q given twice", u.Name)
		}
		tok := randomToken()
		cp.tokens[u.Name] = tok
		fmt.Fprintf(&tokenFile, "%s,%s,uid-%d", tok, u.Name, i)
		if len(u.Groups) > 0 {
			fmt.Fprintf(&tokenFile, ",%q", strings.Join(u.Groups, ","))
		}
		tokenFile.WriteString("\n")
	}

	files := map[string][]byte{
		"ca.crt":        cp.ca.CertPEM,
		"apiserver.crt": servingCert,
		"apiserver.key": servingKey,
		"sa.key":        saKey,
		"tokens.csv":    []byte(tokenFile.String()),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}

	// etcd. Each process is given free ports (which another process may
	// take before it binds them); startBound starts it again on new ones
	// when it exits for that reason.
	peerURL := ""
	etcd, err := startBound(ctx, "etcd", bins.etcd, 2, logDir, func(ports []int) []string {
		cp.etcdURL = "http://" + hostPort(ports[0])
		peerURL = "http://" + hostPort(ports[1])
		// A member bootstrapped on ports it then failed to bind must not
		// be taken for this one.
		_ = os.RemoveAll(filepath.Join(dir, "etcd"))
		return append([]string{
			"--name=default",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + cp.etcdURL,
			"--advertise-client-urls=" + cp.etcdURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--initial-cluster-state=new",
			"--unsafe-no-fsync=true", // throwaway data; fsync only slows tests
			"--log-level=warn",
		}, opts.ExtraEtcdArgs...)
	}, func(p *process) error {
		return waitFor(ctx, p, "etcd /health", func() error { return cp.etcdHealthy(ctx) })
	})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, etcd)

	// kube-apiserver
	apiArgs := []string{
		"--etcd-servers=" + cp.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file=" + filepath.Join(dir, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(dir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(dir, "ca.crt"),
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=2",
	}
	if opts.AuditPolicyFile != "" {
		apiArgs = append(apiArgs, "--audit-policy-file="+opts.AuditPolicyFile)
	}
	if opts.AuditWebhookConfigFile != "" {
		apiArgs = append(apiArgs,
			"--audit-webhook-config-file="+opts.AuditWebhookConfigFile,
			"--audit-webhook-batch-max-wait="+cmp.Or(opts.AuditWebhookBatchMaxWait, time.Second).String(),
			"--audit-webhook-initial-backoff=1s",
		)
	}
	if opts.Aggregation {
		aggArgs, err := cp.aggregationArgs()
		if err != nil {
			return err
		}
		apiArgs = append(apiArgs, aggArgs...)
	}
	cp.bins, cp.logDir, cp.nAPI = bins, logDir, 1
	cp.apiArgs = append(slices.Clone(apiArgs), opts.ExtraAPIServerArgs...)
	api, err := startBound(ctx, "kube-apiserver", bins.apiserver, 1, logDir, func(ports []int) []string {
		cp.host = "https://" + hostPort(ports[0])
		return append(append(slices.Clone(apiArgs), fmt.Sprintf("--secure-port=%d", ports[0])), opts.ExtraAPIServerArgs...)
	}, func(p *process) error {
		adminHTTP, err := rest.HTTPClientFor(cp.AdminConfig())
		if err != nil {
			return fmt.Errorf("admin HTTP client: %w", err)
		}
		return waitFor(ctx, p, "kube-apiserver /readyz", func() error {
			return getOK(ctx, adminHTTP, cp.host+"/readyz")
		})
	})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, api)
	if opts.DisableControllerManager {
		return nil
	}

	// kube-controller-manager
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return fmt.Errorf("admin clientset: %w", err)
	}
	if opts.SharedControllerCredentials {
		if err := bindControllerManager(ctx, admin, opts.Controllers); err != nil {
			return err
		}
	}
	kcmKubeconfig := filepath.Join(dir, "kubeconfig-kcm")
	if err := cp.writeKubeconfig(kcmKubeconfig, ControllerManagerUser); err != nil {
		return err
	}
	// kube-controller-manager serves a self-signed certificate from --cert-dir;
	// this client only probes its health on loopback.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe
	kcm, err := startBound(ctx, "kube-controller-manager", bins.kcm, 1, logDir, func(ports []int) []string {
		cp.kcmHealthz = "https://" + hostPort(ports[0]) + "/healthz"
		return append([]string{
			"--kubeconfig=" + kcmKubeconfig,
			"--authentication-kubeconfig=" + kcmKubeconfig,
			"--authorization-kubeconfig=" + kcmKubeconfig,
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", ports[0]),
			"--cert-dir=" + filepath.Join(dir, "kcm-certs"),
			"--controllers=" + strings.Join(opts.Controllers, ","),
			fmt.Sprintf("--use-service-account-credentials=%t", !opts.SharedControllerCredentials),
			"--leader-elect=false",
			"--v=2",
		}, opts.ExtraControllerManagerArgs...)
	}, func(p *process) error {
		return waitFor(ctx, p, "kube-controller-manager /healthz", func() error {
			return getOK(ctx, insecure, cp.kcmHealthz)
		})
	})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, kcm)
	if slices.Contains(opts.Controllers, "clusterrole-aggregation-controller") {
		// Tests bind users to edit/view/admin; make sure those are filled.
		if err := waitFor(ctx, kcm, "aggregated ClusterRole edit", func() error {
			r, err := admin.RbacV1().ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(r.Rules) == 0 {
				return errNotReady
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// controllerRoles maps controller names to the bootstrap ClusterRoles their
// service accounts are bound to.
var controllerRoles = map[string]string{
	"namespace-controller":               "system:controller:namespace-controller",
	"garbage-collector-controller":       "system:controller:generic-garbage-collector",
	"clusterrole-aggregation-controller": "system:controller:clusterrole-aggregation-controller",
	"serviceaccount-controller":          "system:controller:service-account-controller",
}

// bindControllerManager gives system:kube-controller-manager the roles of the
// controllers it runs with its own credentials.
func bindControllerManager(ctx context.Context, admin kubernetes.Interface, controllers []string) error {
	for _, c := range controllers {
		role, ok := controllerRoles[c]
		if !ok {
			return fmt.Errorf("SharedControllerCredentials: no known role for controller %q", c)
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "options-record-e2e:kcm:" + c},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ControllerManagerUser}},
		}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bind %s to %s: %w", ControllerManagerUser, role, err)
		}
	}
	return nil
}

// waitFor polls check every 200ms until it succeeds, the context ends, or the
// process exits.
func waitFor(ctx context.Context, p *process, what string, check func() error) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if dead, err := p.exited(); dead {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func getOK(ctx context.Context, c *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func (cp *ControlPlane) etcdHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.etcdURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return fmt.Errorf("decode etcd /health: %w", err)
	}
	if h.Health != "true" {
		return fmt.Errorf("etcd health %q", h.Health)
	}
	return nil
}

// AddAPIServer starts another kube-apiserver on the control plane's etcd,
// as a cluster with several apiservers runs them: the first one's flags
// (its audit policy, audit backends and Options.ExtraAPIServerArgs), then
// args, which win (e.g. its own --audit-log-path). It returns its URL; the
// users, the CA and the serving certificate are the first one's, so a
// copy of UserConfig with this Host reaches it. It is stopped with the
// rest, and its log is kube-apiserver-<n>.log.
func (cp *ControlPlane) AddAPIServer(t testing.TB, args ...string) string {
	t.Helper()
	cp.nAPI++
	name := fmt.Sprintf("kube-apiserver-%d", cp.nAPI)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	host := ""
	p, err := startBound(ctx, name, cp.bins.apiserver, 1, cp.logDir, func(ports []int) []string {
		host = "https://" + hostPort(ports[0])
		return append(append(slices.Clone(cp.apiArgs), args...), fmt.Sprintf("--secure-port=%d", ports[0]))
	}, func(p *process) error {
		c := cp.AdminConfig()
		c.Host = host
		adminHTTP, err := rest.HTTPClientFor(c)
		if err != nil {
			return fmt.Errorf("admin HTTP client: %w", err)
		}
		return waitFor(ctx, p, name+" /readyz", func() error { return getOK(ctx, adminHTTP, host+"/readyz") })
	})
	if err != nil {
		t.Fatalf("controlplane: %v", err)
	}
	cp.procs = append(cp.procs, p)
	return host
}

// stop kills every process (newest first) and prints the log tails when the
// test failed.
func (cp *ControlPlane) stop(t testing.TB) {
	if t.Failed() {
		cp.dumpLogs(t)
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].stop(10 * time.Second)
	}
	cp.procs = nil
}

func (cp *ControlPlane) dumpLogs(t testing.TB) {
	for _, p := range cp.procs {
		t.Logf("controlplane: last lines of %s (%s):\n%s", p.name, p.logPath, p.tail(60))
	}
}

// Host returns the apiserver URL, https://127.0.0.1:<port>.
func (cp *ControlPlane) Host() string { return cp.host }

// CAData returns the PEM of the CA that signed the apiserver's serving
// certificate (and that --client-ca-file trusts).
func (cp *ControlPlane) CAData() []byte { return cp.ca.CertPEM }

// CA returns the control plane's CA, e.g. to issue client certificates the
// apiserver accepts (CN = user, O = groups).
func (cp *ControlPlane) CA() *certs.Pair { return cp.ca }

// AdminConfig returns a client config for a user in system:masters.
func (cp *ControlPlane) AdminConfig() *rest.Config {
	return cp.configFor(cp.tokens[AdminUser])
}

// UserConfig returns a client config for a user given in Options.Users. It
// panics for an unknown user (a bug in the test).
func (cp *ControlPlane) UserConfig(name string) *rest.Config {
	tok, ok := cp.tokens[name]
	if !ok {
		panic(fmt.Sprintf("controlplane: unknown user %q (add it to Options.Users)", name))
	}
	return cp.configFor(tok)
}

func (cp *ControlPlane) configFor(token string) *rest.Config {
	return &rest.Config{
		Host:            cp.host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.ca.CertPEM},
		QPS:             200,
		Burst:           400,
		Timeout:         30 * time.Second,
	}
}

// WriteKubeconfig writes a kubeconfig for the named user (AdminUser or one of
// Options.Users) into the test's temporary directory and returns its path,
// e.g. for kubectl while debugging.
func (cp *ControlPlane) WriteKubeconfig(t testing.TB, user string) string {
	t.Helper()
	path := filepath.Join(cp.dir, "kubeconfig-"+strings.NewReplacer(":", "_", "/", "_").Replace(user))
	if err := cp.writeKubeconfig(path, user); err != nil {
		t.Fatalf("controlplane: %v", err)
	}
	return path
}

func (cp *ControlPlane) writeKubeconfig(path, user string) error {
	tok, ok := cp.tokens[user]
	if !ok {
		return fmt.Errorf("kubeconfig for unknown user %q", user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.host, CertificateAuthorityData: cp.ca.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tok}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig for %s: %w", user, err)
	}
	return nil
}

// KubectlPath is the real kubectl binary, of the control plane's release.
func (cp *ControlPlane) KubectlPath() string { return cp.kubectl }

// Kubectl runs the real kubectl binary (built with the control plane, of the
// same release) as the named user, with stdin as its input, and returns what
// it printed. err is set when kubectl exits non-zero.
func (cp *ControlPlane) Kubectl(t testing.TB, user string, stdin []byte, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	kubeconfig := cp.WriteKubeconfig(t, user)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cp.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(cp.dir, "kubectl-cache"))
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
