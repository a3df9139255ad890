package restores

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateMeta checks a created object's metadata as the kube-apiserver
// checks its own objects': a name (a DNS subdomain of at most 253
// characters), labels and annotations (keys, values, 256 KiB in all), so
// that a malformed one is refused as invalid (422) instead of failing
// later. A restore's name is stored with it and names it to its creator.
func validateMeta(m *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	if m.Name == "" {
		return field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}
	}
	return apivalidation.ValidateObjectMeta(m, namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}
