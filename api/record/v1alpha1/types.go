package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Deletion is one recorded deletion of a namespaced object: who deleted
// what, when, as whom, and what the object looked like just before. It is
// read-only. Its name is <object uid>.<version key>, and its namespace the
// deleted object's.
//
// +kubebuilder:object:root=true
type Deletion struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; creationTimestamp is when the object was
	// deleted.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	DeletionRecord `json:",inline"`
}

// DeletionList is a page of deletions, newest first.
//
// +kubebuilder:object:root=true
type DeletionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Deletion `json:"items"`
}

// ClusterDeletion is one recorded deletion of a cluster-scoped object (a
// Namespace, a ClusterRole, a CustomResourceDefinition...). It is
// read-only; its name is <object uid>.<version key>.
//
// +kubebuilder:object:root=true
type ClusterDeletion struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; creationTimestamp is when the object was
	// deleted.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	DeletionRecord `json:",inline"`
}

// ClusterDeletionList is a page of cluster-scoped deletions, newest first.
//
// +kubebuilder:object:root=true
type ClusterDeletionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterDeletion `json:"items"`
}

// DeletionRecord is what the record knows of a deletion.
type DeletionRecord struct {
	// Object is the deleted object.
	Object ObjectReference `json:"object"`
	// DeletedAt is when the apiserver completed the delete (the audit
	// event's stageTimestamp).
	DeletedAt metav1.MicroTime `json:"deletedAt"`
	// Verb is delete, or deletecollection (a namespace's cascade, or
	// kubectl delete --all).
	Verb string `json:"verb"`
	// Actor is who deleted it, as the apiserver's audit event says.
	Actor Actor `json:"actor"`
	// InitiatedBy is the user whose action started this deletion when it
	// was a cascade (the namespace controller or the garbage collector
	// deleted it after a user deleted its namespace or owner).
	// +optional
	InitiatedBy string `json:"initiatedBy,omitempty"`
	// InitiatedVia is namespace-deletion or owner-deletion.
	// +optional
	InitiatedVia string `json:"initiatedVia,omitempty"`
	// StateVersion names the version that holds the object's last state,
	// <uid>.<version key>: create a restore from it to bring the object
	// back. Empty when the record holds no state from before the deletion.
	// +optional
	StateVersion string `json:"stateVersion,omitempty"`
	// LastState is the object as it was just before the deletion, when the
	// record holds it. Only a get of one deletion carries it, not a list.
	// Secret values are digests unless the rules record them in clear.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	LastState *runtime.RawExtension `json:"lastState,omitempty"`
}

// ObjectReference names a recorded object.
type ObjectReference struct {
	// APIGroup of the object ("" for the core group).
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// APIVersion the change was made in.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Resource, plural (configmaps).
	Resource string `json:"resource"`
	// Kind, when the record knows it.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Namespace of the object ("" for a cluster-scoped object).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the object.
	Name string `json:"name"`
	// UID of the object (one incarnation).
	// +optional
	UID string `json:"uid,omitempty"`
}

// Actor is who made a change, as the apiserver's audit event says. Every
// value was written by a cluster user's client: sourceIPs and userAgent
// are evidence, not proof.
type Actor struct {
	// Username is the authenticated caller.
	Username string `json:"username"`
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
	// ImpersonatedUser is the identity the caller acted as.
	// +optional
	ImpersonatedUser string `json:"impersonatedUser,omitempty"`
	// +optional
	// +listType=atomic
	ImpersonatedGroups []string `json:"impersonatedGroups,omitempty"`
	// +optional
	// +listType=atomic
	SourceIPs []string `json:"sourceIPs,omitempty"`
	// +optional
	UserAgent string `json:"userAgent,omitempty"`
	// AuditID of the request (client-settable: not unique).
	// +optional
	AuditID string `json:"auditID,omitempty"`
}
