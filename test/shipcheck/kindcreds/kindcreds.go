// Package kindcreds makes the credentials that tie the kind cluster's
// kube-apiserver to the sink deployed in it: a CA, a serving certificate for
// the webhook Service's fixed clusterIP, a bearer token, and the apiserver's
// webhook kubeconfig rendered from the shipped template. The files go to
// kind-config/credentials/, from where kind-config/cluster.yaml mounts the
// kubeconfig into the node and kind-config/kustomization.yaml turns the rest
// into the sink's Secrets.
package kindcreds

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// WebhookClusterIP is the clusterIP kind-config/kustomization.yaml gives the
// webhook Service; the apiserver's webhook kubeconfig names it.
const WebhookClusterIP = "10.96.0.30"

// WebhookURL is the sink's webhook as the kind apiserver reaches it.
const WebhookURL = "https://" + WebhookClusterIP + "/audit"

// The files written, relative to the credentials directory.
const (
	CAFile         = "ca.crt"
	CertFile       = "tls.crt"
	KeyFile        = "tls.key"
	TokenFile      = "webhook-token"
	KubeconfigFile = "audit-webhook.kubeconfig"
	DigestKeyFile  = "secret-digest-key"
)

// Files lists every file Generate makes.
var Files = []string{CAFile, CertFile, KeyFile, TokenFile, KubeconfigFile, DigestKeyFile}

// ServingNames are the names and address in the serving certificate: the
// clusterIP for the apiserver, the Service names for clients in the cluster.
var ServingNames = []string{
	WebhookClusterIP,
	"options-record-webhook.options-record.svc",
	"options-record-webhook.options-record.svc.cluster.local",
	"options-record-api.options-record.svc",
	"options-record-api.options-record.svc.cluster.local",
}

// Generate makes the credentials. template is the text of
// deploy/audit/webhook-kubeconfig.template.yaml.
func Generate(template []byte) (map[string][]byte, error) {
	const validity = 365 * 24 * time.Hour
	ca, err := certs.NewCA("options-record kind CA", validity)
	if err != nil {
		return nil, err
	}
	serving, err := ca.Issue("options-record-webhook.options-record.svc", ServingNames, true, validity)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("kindcreds: token: %w", err)
	}
	token := hex.EncodeToString(b)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("kindcreds: secret digest key: %w", err)
	}
	digestKey := hex.EncodeToString(b)
	kubeconfig, err := controlplane.RenderWebhookKubeconfig(template, controlplane.WebhookKubeconfig{
		Server: WebhookURL, CAData: ca.CertPEM, Token: token,
	})
	if err != nil {
		return nil, fmt.Errorf("kindcreds: %w", err)
	}
	return map[string][]byte{
		CAFile:         ca.CertPEM,
		CertFile:       serving.CertPEM,
		KeyFile:        serving.KeyPEM,
		TokenFile:      []byte(token),
		KubeconfigFile: kubeconfig,
		DigestKeyFile:  []byte(digestKey),
	}, nil
}

// Ensure writes the credentials into dir unless all of them are there
// already: a running kind cluster keeps the kubeconfig it was created with,
// so they are only replaced when force is set (then recreate the cluster).
// It reports whether it wrote them.
func Ensure(dir string, template []byte, force bool) (bool, error) {
	if !force {
		missing := false
		for _, f := range Files {
			if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
				missing = true
			} else if err != nil {
				return false, fmt.Errorf("kindcreds: %w", err)
			}
		}
		if !missing {
			return false, nil
		}
	}
	files, err := Generate(template)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("kindcreds: %w", err)
	}
	for name, data := range files {
		// The node's kube-apiserver runs as root and reads the mounted
		// kubeconfig; 0600 is enough for kind's bind mount.
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return false, fmt.Errorf("kindcreds: %w", err)
		}
	}
	return true, nil
}
