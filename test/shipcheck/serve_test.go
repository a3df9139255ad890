package shipcheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/internal/certs"
	"github.com/options-record/options-record/internal/pgtest"
	"github.com/options-record/options-record/test/gen"
)

// testServeAsDeployed runs the product binary with the command line and
// environment of the shipped StatefulSet (deploy/), as the sink's
// ServiceAccount, against a real PostgreSQL: only what a pod cannot have
// here is replaced (in-cluster config by a kubeconfig with the
// ServiceAccount's token, mount paths by directories, listen addresses by
// free loopback ports). It must start (SelfSubjectReview, LIST, migrations),
// take the status Lease under its pod name, accept a batch from "the
// apiserver" with the webhook token, and answer the restore API for a
// caller it authenticates and authorizes through the cluster.
func testServeAsDeployed(t *testing.T, c *cluster, vs []variant) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	bin := buildProduct(t, dir)

	d := find(variantNamed(t, vs, "deploy").objects, "StatefulSet", sinkName)
	if len(d) != 1 {
		t.Fatal("no sink StatefulSet in deploy/")
	}
	w := workloads(t, d)[0]
	ctr := w.template.Spec.Containers[slices.IndexFunc(w.template.Spec.Containers, func(c corev1.Container) bool { return c.Name == sinkContainer })]

	// The pod's environment, as the kubelet would fill it.
	const podName = "options-record-7d9c5-shipcheck"
	env := map[string]string{}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = podName
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = sinkNamespace
		case e.ValueFrom.SecretKeyRef != nil && e.Name == "OPTIONS_RECORD_DATABASE_URL":
			env[e.Name] = dsn
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = fmt.Sprint(ctr.Resources.Limits.Name(corev1.ResourceName(e.ValueFrom.ResourceFieldRef.Resource[len("limits."):]), "").Value())
		default:
			t.Fatalf("env %s: no stand-in for %+v", e.Name, e.ValueFrom)
		}
	}

	// The mounted volumes: a directory each, with the Secrets' files.
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
			t.Fatalf("volume mount %s has no volume", m.Name)
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
	kubeconfig := writeKubeconfig(t, dir, c.saConfig(t))
	ports := map[string]string{} // flag -> loopback address
	var args []string
	varRef := regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
	for _, a := range ctr.Args {
		a = varRef.ReplaceAllStringFunc(a, func(ref string) string { return env[ref[2:len(ref)-1]] })
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case a == "--in-cluster":
			a = "--kubeconfig=" + kubeconfig
		case hasVal && strings.HasSuffix(name, "-bind-address"):
			addr := freeAddr(t)
			ports[name] = addr
			a = "--" + name + "=" + addr
		case hasVal && strings.HasPrefix(val, "/"):
			for mp, local := range mounts {
				if val == mp || strings.HasPrefix(val, mp+"/") {
					a = "--" + name + "=" + local + strings.TrimPrefix(val, mp)
				}
			}
		}
		args = append(args, a)
	}
	t.Logf("options-record %s", strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "POD_NAME="+podName)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sink log:\n%s", logs.String())
		}
	})

	plain := &http.Client{Timeout: 5 * time.Second}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	get := func(client *http.Client, url, token string) (int, string, error) {
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

	// The probes of the Deployment answer on the metrics address.
	metrics := "http://" + ports["metrics-bind-address"]
	eventually(t, 2*time.Minute, "the sink's readiness probe", func() error {
		select {
		case err := <-exited:
			t.Fatalf("the sink exited: %v\n%s", err, logs.String())
		default:
		}
		for _, p := range []*corev1.Probe{ctr.StartupProbe, ctr.LivenessProbe, ctr.ReadinessProbe} {
			code, body, err := get(plain, metrics+p.HTTPGet.Path, "")
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("%s: %d %s", p.HTTPGet.Path, code, body)
			}
		}
		return nil
	})
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+ports["webhook-bind-address"]+"/audit", bytes.NewReader(batch))
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
	for _, a := range args {
		if dir, ok := strings.CutPrefix(a, "--journal-dir="); ok {
			if _, err := os.Stat(filepath.Join(dir, "quarantine")); err != nil {
				t.Errorf("the sink did not open its journal at %s: %v", dir, err)
			}
		}
	}

	// The restore API: a caller authenticated by TokenReview and authorized
	// by SubjectAccessReview, both made with the ServiceAccount's rights.
	apiURL := "https://" + ports["api-bind-address"] + "/api/v1/clusters/default/deletions"
	code, body2, err := get(tlsClient, apiURL, c.cp.AdminConfig().BearerToken)
	if err != nil || code != http.StatusOK || !strings.Contains(body2, "shipcheck-cm") {
		t.Errorf("restore API as the admin: %d %v: %s", code, err, body2)
	}
	if code, _, err := get(tlsClient, apiURL, "not-a-token"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("restore API with a bad token: %d %v, want 401", code, err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
