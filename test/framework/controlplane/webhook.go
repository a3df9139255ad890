package controlplane

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// modulePath identifies the repository root by its go.mod.
const modulePath = "github.com/options-record/options-record"

// Paths of the shipped apiserver-side files, relative to the repository root.
const (
	PolicyPath                    = "deploy/audit/policy.yaml"
	WebhookKubeconfigTemplatePath = "deploy/audit/webhook-kubeconfig.template.yaml"
)

// WebhookKubeconfig describes how kube-apiserver reaches and authenticates to
// the audit sink. Use a client certificate, a token, or both.
type WebhookKubeconfig struct {
	// Server is the sink's webhook URL, e.g. https://127.0.0.1:8443/audit.
	Server string
	// CAData is the PEM bundle the apiserver trusts for the sink's serving
	// certificate.
	CAData []byte
	// ClientCertData and ClientKeyData are the PEM client certificate and key
	// the apiserver presents (mTLS). Both or neither.
	ClientCertData, ClientKeyData []byte
	// Token is the bearer token the apiserver sends.
	Token string
}

// RepoFile returns the absolute path of a file given relative to the
// repository root, found by walking up from the working directory to the
// go.mod of this module.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("controlplane: %v", err)
	}
	p := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("controlplane: shipped file: %v", err)
	}
	return p
}

// PolicyFile returns the path of the shipped audit policy.
func PolicyFile(t testing.TB) string {
	t.Helper()
	return RepoFile(t, PolicyPath)
}

// WriteWebhookKubeconfig renders the shipped webhook kubeconfig template for
// cfg into the test's temporary directory and returns the file's path, ready
// for Options.AuditWebhookConfigFile.
func WriteWebhookKubeconfig(t testing.TB, cfg WebhookKubeconfig) string {
	t.Helper()
	tmpl, err := os.ReadFile(RepoFile(t, WebhookKubeconfigTemplatePath))
	if err != nil {
		t.Fatalf("controlplane: read webhook kubeconfig template: %v", err)
	}
	out, err := RenderWebhookKubeconfig(tmpl, cfg)
	if err != nil {
		t.Fatalf("controlplane: %v", err)
	}
	p := filepath.Join(t.TempDir(), "audit-webhook.kubeconfig")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatalf("controlplane: write webhook kubeconfig: %v", err)
	}
	return p
}

// RenderWebhookKubeconfig fills the ${OPTIONS_RECORD_*} placeholders of the
// webhook kubeconfig template (see the template's header) and checks that the
// result loads as a kubeconfig with the expected server and credentials.
func RenderWebhookKubeconfig(tmpl []byte, cfg WebhookKubeconfig) ([]byte, error) {
	if cfg.Server == "" {
		return nil, errors.New("webhook kubeconfig: Server is required")
	}
	if (len(cfg.ClientCertData) == 0) != (len(cfg.ClientKeyData) == 0) {
		return nil, errors.New("webhook kubeconfig: give both ClientCertData and ClientKeyData, or neither")
	}
	b64 := base64.StdEncoding.EncodeToString
	values := map[string]string{
		"OPTIONS_RECORD_WEBHOOK_URL":      cfg.Server,
		"OPTIONS_RECORD_CA_DATA":          b64(cfg.CAData),
		"OPTIONS_RECORD_CLIENT_CERT_DATA": b64(cfg.ClientCertData),
		"OPTIONS_RECORD_CLIENT_KEY_DATA":  b64(cfg.ClientKeyData),
		"OPTIONS_RECORD_TOKEN":            cfg.Token,
	}
	for k, v := range values {
		if strings.ContainsAny(v, "\"\\\n") {
			return nil, fmt.Errorf("webhook kubeconfig: %s contains a quote, backslash or newline", k)
		}
	}
	used := map[string]bool{}
	// Like envsubst: known names are replaced, anything else is kept as is.
	out := os.Expand(string(tmpl), func(name string) string {
		if v, ok := values[name]; ok {
			used[name] = true
			return v
		}
		return "${" + name + "}"
	})
	for k := range values {
		if !used[k] {
			return nil, fmt.Errorf("webhook kubeconfig template lacks the placeholder ${%s}", k)
		}
	}
	// No placeholder may survive outside comments.
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "#") && strings.Contains(line, "${") {
			return nil, fmt.Errorf("webhook kubeconfig template: unknown placeholder left in %q", line)
		}
	}

	kc, err := clientcmd.Load([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("rendered webhook kubeconfig does not load: %w", err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		return nil, errors.New("rendered webhook kubeconfig: current-context does not name a cluster and a user")
	}
	cl, ai := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl.Server != cfg.Server || !bytes.Equal(cl.CertificateAuthorityData, cfg.CAData) ||
		!bytes.Equal(ai.ClientCertificateData, cfg.ClientCertData) || ai.Token != cfg.Token {
		return nil, errors.New("rendered webhook kubeconfig does not hold the given server and credentials")
	}
	return []byte(out), nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modFileModule(data) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repository root: no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

func modFileModule(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}
