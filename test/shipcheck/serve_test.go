package shipcheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/gen"
)

// testServeAsDeployed runs the product binary with the command lines and
// environments of the shipped workloads (deploy/): the ingest StatefulSet as
// its ServiceAccount and the restore API's Deployment as its own, against
// one real PostgreSQL. Only what a pod cannot have here is replaced
// (in-cluster config by a kubeconfig with the ServiceAccount's token, mount
// paths by directories, listen addresses by free loopback ports). Ingest
// must start (SelfSubjectReview, LIST, migrations), take the status Lease
// under its pod name and accept a batch from "the apiserver" with the
// webhook token; the API must answer a caller it authenticates and
// authorizes through the cluster, and find that batch.
func testServeAsDeployed(t *testing.T, c *cluster, vs []variant) {
	ctx := context.Background()
	// Each workload logs in as its own database role, made by the demo
	// database's init script (deploy/components/postgres/roles.sql).
	db := pgtest.NewRoles(t)
	dir := t.TempDir()
	bin := buildProduct(t, dir)

	// The Secrets' files.
	ca, err := certs.NewCA("shipcheck sink CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue("options-record-webhook.options-record.svc", []string{"127.0.0.1"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	const webhookToken = "shipcheck-webhook-token"
	secretFiles := map[string]map[string][]byte{
		"options-record-tls":           {"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM, "ca.crt": ca.CertPEM},
		"options-record-webhook":       {"token": []byte(webhookToken)},
		"options-record-secret-digest": {"key": []byte("shipcheck-secret-digest-key")},
	}
	objs := variantNamed(t, vs, "deploy").objects
	const podName = "options-record-7d9c5-shipcheck"
	ingest := startWorkload(t, c, bin, filepath.Join(dir, "ingest"), objs, "StatefulSet", sinkName, podName,
		map[string]string{"OPTIONS_RECORD_DATABASE_URL": db.Ingest}, secretFiles)
	// The API's two logins: the record's reader, and its own schema's owner.
	api := startWorkload(t, c, bin, filepath.Join(dir, "api"), objs, "Deployment", apiName, "options-record-api-5f6b7-shipcheck",
		map[string]string{"OPTIONS_RECORD_DATABASE_URL": db.Reader, "OPTIONS_RECORD_API_DATABASE_URL": db.API}, secretFiles)
	if _, ok := ingest.ports["api-bind-address"]; ok {
		t.Error("the ingest StatefulSet serves the restore API")
	}
	if _, ok := api.ports["webhook-bind-address"]; ok {
		t.Error("the restore API's Deployment serves the webhook")
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	ingest.waitReady(t)
	api.waitReady(t)
	eventually(t, time.Minute, "status Lease held by the pod", func() error {
		l, err := c.admin.CoordinationV1().Leases(sinkNamespace).Get(ctx, statusLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != podName {
			return fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		return nil
	})

	// The apiserver's delivery: a ConfigMap created and deleted in prod,
	// which the sample rule "prod" records.
	cm := gen.ConfigMap("prod", "shipcheck-cm", "6b0a5e10-0000-4000-8000-000000000001", 900001, map[string]string{"k": "v"})
	// Stamped now: the webhook skips events older than the rules keep.
	at := time.Now()
	batch := gen.EventList(
		gen.Event(gen.At(at.Add(-time.Second)), gen.Verb("create"), gen.Namespace("prod"), gen.Name("shipcheck-cm"), gen.Request(cm), gen.Response(cm)),
		gen.Event(gen.At(at), gen.Verb("delete"), gen.User("bob"), gen.Namespace("prod"), gen.Name("shipcheck-cm"),
			gen.Response(gen.Status("", "configmaps", "shipcheck-cm", "6b0a5e10-0000-4000-8000-000000000001"))),
	)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+ingest.ports["webhook-bind-address"]+"/audit", bytes.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+webhookToken)
	resp, err := tlsClient.Do(req)
	if err != nil {
		t.Fatalf("webhook: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook answered %d: %s", resp.StatusCode, body)
	}
	// The journal is open where the StatefulSet's volume is mounted.
	for _, a := range ingest.args {
		if dir, ok := strings.CutPrefix(a, "--journal-dir="); ok {
			if _, err := os.Stat(filepath.Join(dir, "quarantine")); err != nil {
				t.Errorf("the sink did not open its journal at %s: %v", dir, err)
			}
		}
	}

	// The restore API: a caller authenticated by TokenReview and authorized
	// by SubjectAccessReview, both made with the API ServiceAccount's rights.
	apiURL := "https://" + api.ports["api-bind-address"] + "/api/v1/clusters/default/deletions"
	code, body2, err := httpGet(ctx, tlsClient, apiURL, c.cp.AdminConfig().BearerToken)
	if err != nil || code != http.StatusOK || !strings.Contains(body2, "shipcheck-cm") {
		t.Errorf("restore API as the admin: %d %v: %s", code, err, body2)
	}
	if code, _, err := httpGet(ctx, tlsClient, apiURL, "not-a-token"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("restore API with a bad token: %d %v, want 401", code, err)
	}
	// The API made its own schema's tables as its own role: the ingest
	// role owns the record and nothing of the API's.
	conn, err := pgx.Connect(ctx, db.Admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var restoresOwner, eventsOwner string
	if err := conn.QueryRow(ctx, `SELECT (SELECT tableowner FROM pg_tables WHERE schemaname = 'options_record_api' AND tablename = 'restores'),
		(SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'events')`).Scan(&restoresOwner, &eventsOwner); err != nil {
		t.Fatal(err)
	}
	if restoresOwner != db.APIRole || eventsOwner != db.IngestRole {
		t.Errorf("owners: restores %q, events %q; want %s and %s", restoresOwner, eventsOwner, db.APIRole, db.IngestRole)
	}
}

// runningWorkload is the product binary started with a workload's command
// line.
type runningWorkload struct {
	name string
	ctr  corev1.Container
	args []string
	// ports maps each --*-bind-address flag to the address the workload
	// bound for it (port 0 given), known once it is ready.
	ports  map[string]string
	logs   *logBuffer
	exited chan error
}

// logBuffer is the workload's output, written by the process' copier and
// read by the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// announced returns the addresses the workload's "serving ..." log lines
// name, by --*-bind-address flag.
func (rw *runningWorkload) announced() map[string]string {
	got := map[string]string{}
	for line := range strings.Lines(rw.logs.String()) {
		var l struct{ Msg, Webhook, Metrics, Addr string }
		if json.Unmarshal([]byte(line), &l) != nil || !strings.HasPrefix(l.Msg, "serving ") {
			continue
		}
		for flag, addr := range map[string]string{"webhook-bind-address": l.Webhook, "metrics-bind-address": l.Metrics} {
			if addr != "" {
				got[flag] = addr
			}
		}
		switch l.Msg {
		case "serving the restore API":
			got["api-bind-address"] = l.Addr
		case "serving the aggregated API":
			got["aggregated-bind-address"] = l.Addr
		case "serving the record directly to bearer tokens":
			got["record-bind-address"] = l.Addr
		}
	}
	return got
}

// startWorkload starts the binary with the command line and environment of
// the sink container of a rendered workload, as its ServiceAccount, in dir.
func startWorkload(t *testing.T, c *cluster, bin, dir string, objs []*unstructured.Unstructured, kind, name, podName string,
	dsns map[string]string, secretFiles map[string]map[string][]byte) *runningWorkload {
	t.Helper()
	d := find(objs, kind, name)
	if len(d) != 1 {
		t.Fatalf("no %s %s in deploy/", kind, name)
	}
	w := workloads(t, d)[0]
	i := slices.IndexFunc(w.template.Spec.Containers, func(c corev1.Container) bool { return c.Name == sinkContainer })
	if i < 0 {
		t.Fatalf("%s %s has no container %s", kind, name, sinkContainer)
	}
	ctr := w.template.Spec.Containers[i]

	// The pod's environment, as the kubelet would fill it.
	env := map[string]string{}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = podName
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = sinkNamespace
		case e.ValueFrom.SecretKeyRef != nil && dsns[e.Name] != "":
			env[e.Name] = dsns[e.Name]
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = fmt.Sprint(ctr.Resources.Limits.Name(corev1.ResourceName(e.ValueFrom.ResourceFieldRef.Resource[len("limits."):]), "").Value())
		default:
			t.Fatalf("%s %s env %s: no stand-in for %+v", kind, name, e.Name, e.ValueFrom)
		}
	}

	// The mounted volumes: a directory each, with the Secrets' files.
	mounts := map[string]string{} // mountPath -> local directory
	for _, m := range ctr.VolumeMounts {
		local := filepath.Join(dir, "mnt", m.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts[m.MountPath] = local
		if slices.Contains(w.claims, m.Name) {
			continue // a volumeClaimTemplate: an empty persistent volume
		}
		vi := slices.IndexFunc(w.template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if vi < 0 {
			t.Fatalf("%s %s: volume mount %s has no volume", kind, name, m.Name)
		}
		if vol := w.template.Spec.Volumes[vi]; vol.Secret != nil {
			files, ok := secretFiles[vol.Secret.SecretName]
			if !ok {
				t.Fatalf("no stand-in for Secret %s", vol.Secret.SecretName)
			}
			for name, data := range files {
				if err := os.WriteFile(filepath.Join(local, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	// The command line: $(VAR) expanded like the kubelet does, the
	// in-cluster config replaced by the ServiceAccount's kubeconfig, paths
	// and ports mapped.
	kubeconfig := writeKubeconfig(t, dir, c.saConfigFor(t, w.template.Spec.ServiceAccountName))
	rw := &runningWorkload{name: kind + " " + name, ctr: ctr, ports: map[string]string{}, logs: &logBuffer{}, exited: make(chan error, 1)}
	varRef := regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
	for _, a := range ctr.Args {
		a = varRef.ReplaceAllStringFunc(a, func(ref string) string { return env[ref[2:len(ref)-1]] })
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case a == "--in-cluster":
			a = "--kubeconfig=" + kubeconfig
		case hasVal && strings.HasSuffix(name, "-bind-address"):
			// Port 0: the workload announces the addresses it bound (a
			// port chosen free here could be taken before it binds).
			rw.ports[name] = ""
			a = "--" + name + "=127.0.0.1:0"
		case hasVal && strings.HasPrefix(val, "/"):
			for mp, local := range mounts {
				if val == mp || strings.HasPrefix(val, mp+"/") {
					a = "--" + name + "=" + local + strings.TrimPrefix(val, mp)
				}
			}
		}
		rw.args = append(rw.args, a)
	}
	t.Logf("%s: options-record %s", rw.name, strings.Join(rw.args, " "))

	cmd := exec.Command(bin, rw.args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "POD_NAME="+podName)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = rw.logs, rw.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { rw.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-rw.exited:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-rw.exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", rw.name, rw.logs.String())
		}
	})
	return rw
}

// waitReady waits until the workload's probes answer on its metrics address.
func (rw *runningWorkload) waitReady(t *testing.T) {
	t.Helper()
	plain := &http.Client{Timeout: 5 * time.Second}
	eventually(t, 2*time.Minute, rw.name+": readiness probe", func() error {
		select {
		case err := <-rw.exited:
			rw.exited <- err // for the cleanup, which waits for the exit
			t.Fatalf("%s exited: %v\n%s", rw.name, err, rw.logs.String())
		default:
		}
		addr := rw.announced()["metrics-bind-address"]
		if addr == "" {
			return errors.New("not serving yet")
		}
		metrics := "http://" + addr
		for _, p := range []*corev1.Probe{rw.ctr.StartupProbe, rw.ctr.LivenessProbe, rw.ctr.ReadinessProbe} {
			code, body, err := httpGet(context.Background(), plain, metrics+p.HTTPGet.Path, "")
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", p.HTTPGet.Path, code, body)
			}
		}
		return nil
	})
	// Ready: every server has started and announced its address.
	got := rw.announced()
	for flag := range rw.ports {
		if got[flag] == "" {
			t.Fatalf("%s is ready but announced no address for --%s\n%s", rw.name, flag, rw.logs.String())
		}
		rw.ports[flag] = got[flag]
	}
}

func httpGet(ctx context.Context, client *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), nil
}

// writeKubeconfig writes a kubeconfig for a bearer-token client config.
func writeKubeconfig(t *testing.T, dir string, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	p := filepath.Join(dir, "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}
