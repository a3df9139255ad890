package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deletion is one recorded deletion of an object in its namespace: who
// deleted what, when, and as whom. Read-only.
//
// +kubebuilder:object:root=true
type Deletion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DeletionSpec `json:"spec"`
}

// DeletionSpec is what the record knows about the deletion.
type DeletionSpec struct {
	// Time the apiserver completed the delete.
	Time metav1.Time `json:"time"`
	// User who deleted (the authenticated user).
	User string `json:"user"`
	// ImpersonatedUser, when the deleter impersonated someone.
	// +optional
	ImpersonatedUser string `json:"impersonatedUser,omitempty"`
	// Resource of the deleted object, e.g. "configmaps" or "deployments.apps".
	Resource string `json:"resource"`
	// Name of the deleted object.
	Name string `json:"name"`
	// AuditID of the event that recorded the deletion.
	// +optional
	AuditID string `json:"auditID,omitempty"`
}

// DeletionList is a page of deletions.
//
// +kubebuilder:object:root=true
type DeletionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Deletion `json:"items"`
}

// Restore asks for a recorded deletion to be undone. One creates it; the
// status carries the result.
//
// +kubebuilder:object:root=true
type Restore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RestoreSpec `json:"spec"`
	// +optional
	Status RestoreStatus `json:"status,omitempty"`
}

// RestoreSpec names what to restore.
type RestoreSpec struct {
	// Deletion is the name of a Deletion in the same namespace.
	Deletion string `json:"deletion"`
}

// RestoreStatus is the outcome of a restore.
type RestoreStatus struct {
	// Phase is "Succeeded", "Failed" or "DryRun".
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// RequestedBy is the caller as the aggregated server saw it.
	// +optional
	RequestedBy Requester `json:"requestedBy,omitempty"`
}

// Requester is the identity the kube-apiserver forwarded for the caller.
type Requester struct {
	Username string `json:"username,omitempty"`
	UID      string `json:"uid,omitempty"`
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
	// +optional
	Extra map[string][]string `json:"extra,omitempty"`
}

// RestoreList is a list of restores.
//
// +kubebuilder:object:root=true
type RestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Restore `json:"items"`
}
