// Package v1alpha1 holds the types of the aggregated API group
// record.optionsrecord.io/v1alpha1: the record, served through the
// kube-apiserver (API aggregation) by package aggregated.
//
// The same Go types are registered as the group's internal version too, so
// the generic API server needs no conversion functions: the REST handlers
// decode into these types and encode them unchanged.
//
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.optionsrecord.record.v1alpha1
// +kubebuilder:object:generate=true
// +groupName=record.optionsrecord.io
package v1alpha1
