package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of the OptionsRecordController resource.
	GroupName = "optionsrecord.io"
	// Version is the API version of this package.
	Version = "v1alpha1"
	// Kind is the kind of an OptionsRecordController object.
	Kind = "OptionsRecordController"
	// ListKind is the kind of a list of OptionsRecordController objects.
	ListKind = "OptionsRecordControllerList"
	// Resource is the plural resource name, as it appears in audit events'
	// objectRef.resource and in URLs.
	Resource = "optionsrecordcontrollers"
	// ShortName is the kubectl short name of the resource.
	ShortName = "orc"
)

var (
	// GroupVersion is the group and version of this package's types.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// GroupVersionKind identifies the OptionsRecordController kind.
	GroupVersionKind = GroupVersion.WithKind(Kind)

	// GroupVersionResource identifies the resource for dynamic clients and
	// for recognising audit events about OptionsRecordController objects.
	GroupVersionResource = GroupVersion.WithResource(Resource)

	// SchemeBuilder collects the functions that add this package's types to
	// a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// GroupResource returns the group-qualified resource for resource.
func GroupResource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&OptionsRecordController{},
		&OptionsRecordControllerList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
