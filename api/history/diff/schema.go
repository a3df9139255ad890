package diff

import (
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// builtin knows the Go types of the built-in kinds, whose struct tags
// carry the strategic-merge keys of their lists.
var builtin = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		admissionregistrationv1.AddToScheme, appsv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme,
		batchv1.AddToScheme, certificatesv1.AddToScheme, coordinationv1.AddToScheme, corev1.AddToScheme,
		discoveryv1.AddToScheme, networkingv1.AddToScheme, nodev1.AddToScheme, policyv1.AddToScheme,
		rbacv1.AddToScheme, schedulingv1.AddToScheme, storagev1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // static registrations
		}
	}
	return s
})

// schemaFor describes obj's type for the list keys, from its apiVersion
// and kind; nil for a kind the built-in types do not have (a custom
// resource), or an object without them.
func schemaFor(obj map[string]any) strategicpatch.LookupPatchMeta {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	typed, err := builtin().New(gv.WithKind(kind))
	if err != nil {
		return nil
	}
	meta, err := strategicpatch.NewPatchMetaFromStruct(typed)
	if err != nil {
		return nil
	}
	return meta
}
