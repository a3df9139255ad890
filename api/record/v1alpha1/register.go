package v1alpha1

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group served by the aggregated server.
const GroupName = "record.optionsrecord.io"

// SchemeGroupVersion is the one served version.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// internalGroupVersion is the hub the REST handlers convert to; it holds
// the very same Go types, so no conversion is ever needed.
var internalGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// DeletionSelectableFields are the fields a field selector may name on
// deletions and cluster deletions, besides metadata.name and
// metadata.namespace: the deleted object's API group, resource and name,
// who deleted it, and a time window (since, until: an RFC 3339 time, or a
// negative duration before now such as -24h).
var DeletionSelectableFields = []string{"object.apiGroup", "object.resource", "object.name", "actor.username", "since", "until"}

// ChangeSelectableFields are the fields a field selector may name on
// changes and cluster changes, besides metadata.name and
// metadata.namespace. asOf (a time, as since) lists instead, for one
// namespace, the version of each object that held its state at that time
// (with object.apiGroup, object.resource and object.name only).
var ChangeSelectableFields = []string{"object.apiGroup", "object.resource", "object.name", "object.uid", "actor.username", "verb", "since", "until", "asOf"}

// AttemptSelectableFields are the fields a field selector may name on
// attempts and cluster attempts, besides metadata.name and
// metadata.namespace: those of deletions.
var AttemptSelectableFields = []string{"object.apiGroup", "object.resource", "object.name", "actor.username", "since", "until"}

func knownTypes() []runtime.Object {
	return []runtime.Object{&Deletion{}, &DeletionList{}, &ClusterDeletion{}, &ClusterDeletionList{}, &Restore{}, &RestoreList{},
		&Change{}, &ChangeList{}, &ClusterChange{}, &ClusterChangeList{}, &RestorePlan{}, &RestorePlanList{},
		&Attempt{}, &AttemptList{}, &ClusterAttempt{}, &ClusterAttemptList{}, &ClusterRestore{}, &ClusterRestoreList{},
		&ClusterRestorePlan{}, &ClusterRestorePlanList{}}
}

// AddServedToScheme registers the types in the served version only. The
// OpenAPI definition namer needs such a scheme: it tags each definition with
// every group-version-kind the scheme knows for the Go type, and kubectl
// (explain, and create's choice of server-side field validation) cannot
// find a kind whose x-kubernetes-group-version-kind also lists __internal.
func AddServedToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, knownTypes()...)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// AddToScheme registers the group's types, in the served and the internal
// version, its field-label conversions and metav1's list options.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, knownTypes()...)
	s.AddKnownTypes(internalGroupVersion, knownTypes()...)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	for _, kind := range []string{"Deletion", "ClusterDeletion"} {
		if err := s.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind), deletionFieldLabel); err != nil {
			return err
		}
	}
	for _, kind := range []string{"Change", "ClusterChange"} {
		if err := s.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind), changeFieldLabel); err != nil {
			return err
		}
	}
	for _, kind := range []string{"Attempt", "ClusterAttempt"} {
		if err := s.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind), attemptFieldLabel); err != nil {
			return err
		}
	}
	return nil
}

func changeFieldLabel(label, value string) (string, string, error) {
	return fieldLabel("changes", ChangeSelectableFields, label, value)
}

func deletionFieldLabel(label, value string) (string, string, error) {
	return fieldLabel("deletions", DeletionSelectableFields, label, value)
}

func attemptFieldLabel(label, value string) (string, string, error) {
	return fieldLabel("attempts", AttemptSelectableFields, label, value)
}

// fieldLabel accepts metadata.name, metadata.namespace and the selectable
// fields of a resource, unchanged.
func fieldLabel(resource string, selectable []string, label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace":
		return label, value, nil
	}
	for _, f := range selectable {
		if label == f {
			return label, value, nil
		}
	}
	return "", "", fmt.Errorf("field label %q not supported for %s (supported: metadata.name, metadata.namespace, %s)", label, resource, strings.Join(selectable, ", "))
}
