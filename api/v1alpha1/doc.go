// Package v1alpha1 holds the OptionsRecordController API (group
// optionsrecord.io, version v1alpha1): the Go types, their kubebuilder
// markers, and the scheme registration.
//
// The CRD YAML under deploy/crd and zz_generated.deepcopy.go are generated
// from this package by controller-gen (`make generate`); never edit them by
// hand. The package holds types and constants only: the sink's own validation
// and matching of these objects live in package filter.
//
// +kubebuilder:object:generate=true
// +groupName=optionsrecord.io
package v1alpha1
