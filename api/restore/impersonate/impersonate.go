package impersonate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/restore/manifest"
)

// ObjectRef names an object of the cluster.
type ObjectRef struct {
	Group      string `json:"group"`
	APIVersion string `json:"apiVersion"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// Access reaches the cluster: as the caller (impersonation) for
// everything a restore reads or writes, as the sink only for discovery.
type Access struct {
	base   *rest.Config
	mapper *restmapper.DeferredDiscoveryRESTMapper

	// A kind discovery does not know is remembered for missTTL, and
	// discovery is refreshed for unknown kinds at most once a
	// refreshInterval: a recorded ownerReference to a made-up kind (any
	// user can write one) costs no discovery round each.
	mu          sync.Mutex
	misses      map[schema.GroupVersionKind]time.Time
	lastRefresh time.Time
	now         func() time.Time
}

const (
	missTTL         = 30 * time.Second
	refreshInterval = 10 * time.Second
)

// New makes the access from the sink's client configuration.
func New(cfg *rest.Config) (*Access, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonate: discovery client: %w", err)
	}
	return newAccess(cfg, restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))), nil
}

func newAccess(cfg *rest.Config, mapper *restmapper.DeferredDiscoveryRESTMapper) *Access {
	return &Access{base: rest.CopyConfig(cfg), mapper: mapper, misses: map[schema.GroupVersionKind]time.Time{}, now: time.Now}
}

// As returns a client that acts as u: user, uid, groups and extra are
// impersonated, so the cluster's RBAC and admission decide and its audit
// log names u.
func (k *Access) As(u user.Info) (dynamic.Interface, error) {
	if u == nil {
		return nil, fmt.Errorf("%w: no caller to act as", errs.ErrUnauthenticated)
	}
	cfg := rest.CopyConfig(k.base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	// A plan of a thousand steps reads and writes a few thousand times:
	// at client-go's default 5 requests/s it would outlast its deadline.
	// The cluster's API priority and fairness rates the caller.
	cfg.QPS, cfg.Burst = 100, 200
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonate: client as %q: %w", u.GetName(), err)
	}
	return c, nil
}

// Resource is the client of one recorded object's resource.
func Resource(c dynamic.Interface, o ObjectRef) dynamic.ResourceInterface {
	gvr := schema.GroupVersionResource{Group: o.Group, Version: o.APIVersion, Resource: o.Resource}
	if o.Namespace == "" {
		return c.Resource(gvr)
	}
	return c.Resource(gvr).Namespace(o.Namespace)
}

// GetLive returns the live object, or nil when it does not exist.
func GetLive(ctx context.Context, c dynamic.Interface, o ObjectRef) (*unstructured.Unstructured, error) {
	live, err := Resource(c, o).Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get the live %s %s: %w", o.Resource, ObjName(o.Namespace, o.Name), err)
	}
	return live, nil
}

// ObjName is namespace/name, or name.
func ObjName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// Mapping finds the resource of a kind, refreshing discovery when the kind
// is new (a CRD created meanwhile), at most once a refreshInterval; a kind
// still unknown after a refresh is answered as unknown for missTTL.
func (k *Access) Mapping(apiVersion, kind string) (*meta.RESTMapping, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	gvk := gv.WithKind(kind)
	k.mu.Lock()
	if at, ok := k.misses[gvk]; ok && k.now().Sub(at) < missTTL {
		k.mu.Unlock()
		return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gv.Version}}
	}
	k.mu.Unlock()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gv.Version)
	if !meta.IsNoMatchError(err) {
		return m, err
	}
	k.mu.Lock()
	refresh := k.now().Sub(k.lastRefresh) >= refreshInterval
	if refresh {
		k.lastRefresh = k.now()
	}
	k.mu.Unlock()
	if refresh {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gv.Version)
	}
	if meta.IsNoMatchError(err) {
		k.mu.Lock()
		if len(k.misses) > 10000 {
			clear(k.misses)
		}
		k.misses[gvk] = k.now()
		k.mu.Unlock()
	}
	return m, err
}

// OwnerCheck checks owners in the live cluster as the caller; renamed maps
// the old uids of owners re-created by the same plan to their new ones.
func (k *Access) OwnerCheck(ctx context.Context, c dynamic.Interface, namespace string, renamed map[string]string) manifest.OwnerCheck {
	return func(ref manifest.OwnerReference) (string, bool, string) {
		if uid, ok := renamed[ref.UID]; ok {
			return uid, true, ""
		}
		m, err := k.Mapping(ref.APIVersion, ref.Kind)
		if err != nil {
			return "", false, fmt.Sprintf("owner kind %s %s unknown to the cluster", ref.APIVersion, ref.Kind)
		}
		var ri dynamic.ResourceInterface = c.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = c.Resource(m.Resource).Namespace(namespace)
		}
		live, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", false, "owner no longer exists"
		case apierrors.IsForbidden(err):
			return "", false, "owner could not be checked: the caller may not get it"
		case err != nil:
			return "", false, "owner could not be checked: " + err.Error()
		case string(live.GetUID()) != ref.UID:
			return "", false, fmt.Sprintf("owner was re-created since (uid now %s)", live.GetUID())
		}
		return ref.UID, true, ""
	}
}

// WaitEstablished waits until a CRD created by a plan serves its objects.
func WaitEstablished(ctx context.Context, c dynamic.Interface, name string) error {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		crd, err := c.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Established" && strings.EqualFold(fmt.Sprint(m["status"]), "true") {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CustomResourceDefinition %s not established: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ResetDiscovery forgets the cached discovery and the kinds it did not
// know, after a plan created a CRD.
func (k *Access) ResetDiscovery() {
	k.mu.Lock()
	clear(k.misses)
	k.lastRefresh = time.Time{}
	k.mu.Unlock()
	k.mapper.Reset()
}
