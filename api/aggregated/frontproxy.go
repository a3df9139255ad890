package aggregated

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The ConfigMap in which the kube-apiserver publishes how it authenticates
// to aggregated servers (its front proxy): the CA of the proxy's client
// certificate and the names that certificate may have.
const (
	authConfigMapNamespace = "kube-system"
	authConfigMapName      = "extension-apiserver-authentication"
)

// FrontProxyCA keeps a file holding the front-proxy CA current from
// kube-system/extension-apiserver-authentication with a plain GET at
// start-up and every Interval — no watch, no informer. The aggregated
// server reads the file (and re-reads it when it changes), so a rotated CA
// is taken without a restart. It needs only "get" on that one ConfigMap
// (the Role extension-apiserver-authentication-reader grants it).
type FrontProxyCA struct {
	Client   kubernetes.Interface
	File     string
	Interval time.Duration // default 10 minutes
	Logger   *slog.Logger
	names    []string
}

// Sync GETs the ConfigMap and writes the CA to File (only when it
// changed); it returns the allowed names the kube-apiserver published.
func (f *FrontProxyCA) Sync(ctx context.Context) ([]string, error) {
	cm, err := f.Client.CoreV1().ConfigMaps(authConfigMapNamespace).Get(ctx, authConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("aggregated: front-proxy CA: %w", err)
	}
	ca := cm.Data["requestheader-client-ca-file"]
	if ca == "" {
		return nil, errors.New("aggregated: front-proxy CA: kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: is the kube-apiserver run with --requestheader-client-ca-file?")
	}
	var names []string
	if v := cm.Data["requestheader-allowed-names"]; v != "" {
		if err := json.Unmarshal([]byte(v), &names); err != nil {
			return nil, fmt.Errorf("aggregated: front-proxy allowed names: %w", err)
		}
	}
	if old, err := os.ReadFile(f.File); err == nil && string(old) == ca {
		return names, nil
	}
	tmp := f.File + ".tmp"
	if err := os.WriteFile(tmp, []byte(ca), 0o644); err != nil {
		return nil, fmt.Errorf("aggregated: front-proxy CA: %w", err)
	}
	if err := os.Rename(tmp, f.File); err != nil {
		return nil, fmt.Errorf("aggregated: front-proxy CA: %w", err)
	}
	return names, nil
}

// Start syncs once (an error ends the start-up) and returns the allowed
// names; Run then keeps the file current.
func (f *FrontProxyCA) Start(ctx context.Context) ([]string, error) {
	if err := os.MkdirAll(filepath.Dir(f.File), 0o755); err != nil {
		return nil, fmt.Errorf("aggregated: front-proxy CA: %w", err)
	}
	names, err := f.Sync(ctx)
	f.names = names
	return names, err
}

// Run re-syncs every Interval until ctx ends; a failure is logged and the
// last CA stays in force.
func (f *FrontProxyCA) Run(ctx context.Context) {
	every := f.Interval
	if every <= 0 {
		every = 10 * time.Minute
	}
	log := f.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		names, err := f.Sync(ctx)
		if err != nil {
			log.Warn("front-proxy CA not refreshed; the last one stays in force", "err", err)
			continue
		}
		if !slices.Equal(names, f.names) {
			log.Warn("the kube-apiserver's front-proxy allowed names changed; restart the API pods to take them", "was", f.names, "now", names)
		}
	}
}
