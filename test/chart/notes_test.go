package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// heredoc returns the body of the shell here-document `<<TAG` (or
// `<<'TAG'`) in s.
func heredoc(t *testing.T, s, tag string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<<'?` + tag + `'?\n(.*?)\n` + tag + `\n`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("NOTES.txt: no here-document %s in:\n%s", tag, s)
	}
	return m[1]
}

// TestNotes checks what NOTES.txt gives the operator for the kube-apiserver:
// the two flags, the audit policy of deploy/audit/policy.yaml byte for byte,
// and a webhook kubeconfig that, its command substitutions run, is the one
// deploy/audit/webhook-kubeconfig.template.yaml renders for the same URL, CA
// and token.
func TestNotes(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		url    string
	}{
		{"defaults", nil, "https://options-record-webhook.options-record.svc/audit"},
		{"fixed clusterIP", map[string]any{"webhook": map[string]any{"service": map[string]any{"clusterIP": "10.96.0.30"}}}, "https://10.96.0.30/audit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes := renderChart(t, c, tc.values).notes
			if m := hasAll(notes,
				"--audit-policy-file=/etc/kubernetes/options-record/policy.yaml",
				"--audit-webhook-config-file=/etc/kubernetes/options-record/webhook.kubeconfig",
				"kubectl label namespace options-record pod-security.kubernetes.io/enforce=restricted",
			); len(m) > 0 {
				t.Errorf("NOTES.txt lacks %q:\n%s", m, notes)
			}

			policy, err := os.ReadFile(controlplane.RepoFile(t, "deploy/audit/policy.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if got := heredoc(t, notes, "POLICY") + "\n"; got != string(policy) {
				t.Errorf("NOTES.txt's audit policy is not deploy/audit/policy.yaml:\n%s", got)
			}

			// The command substitutions, as the shell would run them.
			const caData, token = "Q0EgREFUQQ==", "the-token"
			kc := heredoc(t, notes, "KUBECONFIG")
			kc = strings.Replace(kc, `$(kubectl -n options-record get secret options-record-tls -o jsonpath='{.data.ca\.crt}')`, caData, 1)
			kc = strings.Replace(kc, `$(kubectl -n options-record get secret options-record-webhook -o jsonpath='{.data.token}' | base64 -d)`, token, 1)
			if strings.Contains(kc, "$") {
				t.Fatalf("NOTES.txt's kubeconfig has an unexpected substitution:\n%s", kc)
			}
			got, err := clientcmd.Load([]byte(kc))
			if err != nil {
				t.Fatalf("NOTES.txt's kubeconfig: %v\n%s", err, kc)
			}
			tmpl, err := os.ReadFile(filepath.Join(repoRoot(t), controlplane.WebhookKubeconfigTemplatePath))
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{"OPTIONS_RECORD_WEBHOOK_URL": tc.url, "OPTIONS_RECORD_CA_DATA": caData, "OPTIONS_RECORD_TOKEN": token}
			want, err := clientcmd.Load([]byte(os.Expand(string(tmpl), func(k string) string { return vars[k] })))
			if err != nil {
				t.Fatal(err)
			}
			if d := kubeconfigDiff(want, got); d != "" {
				t.Errorf("NOTES.txt's kubeconfig differs from the template's: %s\n%s", d, kc)
			}
		})
	}
}

// kubeconfigDiff compares what the apiserver reads of a webhook kubeconfig.
func kubeconfigDiff(want, got *clientcmdapi.Config) string {
	var diffs []string
	eq := func(what, a, b string) {
		if a != b {
			diffs = append(diffs, what+": "+a+" != "+b)
		}
	}
	eq("current-context", want.CurrentContext, got.CurrentContext)
	wctx, gctx := want.Contexts[want.CurrentContext], got.Contexts[got.CurrentContext]
	if wctx == nil || gctx == nil {
		return "no current context"
	}
	eq("cluster", wctx.Cluster, gctx.Cluster)
	eq("user", wctx.AuthInfo, gctx.AuthInfo)
	wc, gc := want.Clusters[wctx.Cluster], got.Clusters[gctx.Cluster]
	wu, gu := want.AuthInfos[wctx.AuthInfo], got.AuthInfos[gctx.AuthInfo]
	if wc == nil || gc == nil || wu == nil || gu == nil {
		return "a cluster or user is missing"
	}
	eq("server", wc.Server, gc.Server)
	eq("certificate-authority-data", string(wc.CertificateAuthorityData), string(gc.CertificateAuthorityData))
	eq("token", wu.Token, gu.Token)
	if !bytes.Equal(wu.ClientCertificateData, gu.ClientCertificateData) || !bytes.Equal(wu.ClientKeyData, gu.ClientKeyData) {
		diffs = append(diffs, "client certificate")
	}
	return strings.Join(diffs, "; ")
}
