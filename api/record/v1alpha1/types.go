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
// +genclient
// +genclient:onlyVerbs=get,list
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
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=get,list
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
	// InitiatedObject is the object whose deletion started the cascade
	// (the namespace, or the owner), shown with InitiatedBy.
	// +optional
	InitiatedObject *ObjectReference `json:"initiatedObject,omitempty"`
	// InitiatedAt is when that deletion happened.
	// +optional
	InitiatedAt *metav1.MicroTime `json:"initiatedAt,omitempty"`
	// StateVersion names the version that holds the object's last state,
	// <uid>.<version key>: create a restore from it to bring the object
	// back. Empty when the record holds no state from before the deletion.
	// +optional
	StateVersion string `json:"stateVersion,omitempty"`
	// StateUnknown says that the record holds no state from before the
	// deletion (the audit policy logged the delete at Metadata, with no
	// earlier version of the object recorded): it cannot be restored.
	// +optional
	StateUnknown bool `json:"stateUnknown,omitempty"`
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

// Restore puts a recorded version of an object back into the cluster, as
// the user who creates it (impersonation: the cluster's RBAC and admission
// decide, and its audit log names that user): created when the object is
// gone, updated when it holds another state. It runs when it is created;
// its status carries the outcome, and a create with --dry-run=server runs
// it as a server-side dry run and keeps nothing. Only its creator may read
// it back.
//
// +genclient
// +genclient:onlyVerbs=create,get,list,update
// +kubebuilder:object:root=true
type Restore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RestoreSpec `json:"spec"`
	// +optional
	Status RestoreStatus `json:"status,omitempty"`
}

// RestoreSpec says what to put back: exactly one of version, deletion and
// plan.
type RestoreSpec struct {
	// Version to restore, <uid>.<version key>: a deletion's stateVersion.
	// +optional
	Version string `json:"version,omitempty"`
	// Deletion to undo: the name of a Deletion in this namespace; the
	// version holding the object's last state is restored.
	// +optional
	Deletion string `json:"deletion,omitempty"`
	// Plan to execute: the name of a RestorePlan of the creator's in this
	// namespace, reviewed and still planned. A plan executes once (a dry
	// run as often as wanted).
	// +optional
	Plan string `json:"plan,omitempty"`
	// ExpectedResourceVersion is the live object's resourceVersion the
	// restore is based on: it is refused if the live object differs.
	// Without it, the live object must match the newest recorded version.
	// +optional
	ExpectedResourceVersion string `json:"expectedResourceVersion,omitempty"`
	// Force restores even if the live object changed.
	// +optional
	Force bool `json:"force,omitempty"`
	// PlanDigest is the digest of the plan you reviewed: status.planDigest
	// of the RestorePlan, or of a dry run of this Restore. Required to
	// execute a plan for real (not for a dry run): a plan whose steps, or
	// a recorded state they restore, differ from it is refused (409)
	// before anything is written.
	// +optional
	PlanDigest string `json:"planDigest,omitempty"`
	// StateDigest is the digest of the recorded state you reviewed, for a
	// version or a deletion: status.stateDigest of a dry run of this
	// Restore. Given, a restore whose version the record no longer holds
	// in that state (it was rewritten since) is refused (409) before
	// anything is written. Without it, the state the record holds when
	// the restore runs is restored.
	// +optional
	StateDigest string `json:"stateDigest,omitempty"`
}

// RestoreStatus is the outcome of a restore.
type RestoreStatus struct {
	// Phase is Succeeded, Refused (the live object changed, or the state
	// cannot be applied: nothing was written), Failed (the cluster refused
	// the write) or, for a plan, Partial (some steps failed).
	// +optional
	Phase string `json:"phase,omitempty"`
	// DryRun: the restore ran as a server-side dry run; nothing changed.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Action is create, update, or none (the live object already held the
	// state).
	// +optional
	Action string `json:"action,omitempty"`
	// Code is the status code of the cluster's answer, or of the refusal.
	// +optional
	Code int32 `json:"code,omitempty"`
	// Message explains a refusal or a failure.
	// +optional
	Message string `json:"message,omitempty"`
	// Object is the restored object; its uid and resourceVersion are the
	// live object's after the restore.
	// +optional
	Object *ObjectReference `json:"object,omitempty"`
	// ResourceVersion of the live object after the restore.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Changes are what the restore changed in the live object (an update),
	// as JSON pointers; only the answer to the create carries them.
	// +optional
	// +listType=atomic
	Changes []FieldChange `json:"changes,omitempty"`
	// DroppedOwnerReferences were left out because their owner no longer
	// exists.
	// +optional
	// +listType=atomic
	DroppedOwnerReferences []DroppedOwner `json:"droppedOwnerReferences,omitempty"`
	// Steps are the outcome of each step of an executed plan.
	// +optional
	// +listType=atomic
	Steps []StepResult `json:"steps,omitempty"`
	// RestoreID is the restore's row in the restores table.
	// +optional
	RestoreID string `json:"restoreID,omitempty"`
	// PlanDigest is, for the run of a plan, the digest of the steps it
	// ran (or, in a dry run, would run): pass it as spec.planDigest to
	// execute the plan for real.
	// +optional
	PlanDigest string `json:"planDigest,omitempty"`
	// StateDigest is, for the restore of a version or a deletion, the
	// digest (sha256:) of the recorded state it restored (or, in a dry
	// run, would restore): pass it as spec.stateDigest to restore for
	// real what the dry run showed.
	// +optional
	StateDigest string `json:"stateDigest,omitempty"`
	// CreatedBy is the user the restore ran as.
	// +optional
	CreatedBy string `json:"createdBy,omitempty"`
}

// FieldChange is one difference a restore made, at a JSON pointer.
type FieldChange struct {
	// Op is add, remove or replace.
	Op string `json:"op"`
	// Path is a JSON pointer (RFC 6901) into the object.
	Path string `json:"path"`
	// From is the value before (remove, replace).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	From *runtime.RawExtension `json:"from,omitempty"`
	// To is the value after (add, replace).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	To *runtime.RawExtension `json:"to,omitempty"`
}

// DroppedOwner is an ownerReference left out of a restored object.
type DroppedOwner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Reason     string `json:"reason"`
}

// RestoreList is the caller's restores, newest first.
//
// +kubebuilder:object:root=true
type RestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Restore `json:"items"`
}

// ClusterRestore puts a cluster-scoped object (a ClusterRole, a
// CustomResourceDefinition, a Namespace) back to a recorded version, as a
// Restore does for a namespaced one: spec.deletion names a ClusterDeletion,
// spec.version a version of a cluster-scoped object (spec.plan is not
// supported: plans run through Restores in their namespace).
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=create,get,list,update
// +kubebuilder:object:root=true
type ClusterRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RestoreSpec `json:"spec"`
	// +optional
	Status RestoreStatus `json:"status,omitempty"`
}

// ClusterRestoreList is the caller's cluster restores, newest first.
//
// +kubebuilder:object:root=true
type ClusterRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterRestore `json:"items"`
}

// Change is one recorded change of a namespaced object — a create, update,
// patch or delete the apiserver answered with success — or a baseline
// observation of it: who changed what, when, as whom, and the object's
// state after the change. It is read-only. Its name is
// <object uid>.<version key>, and its namespace the object's.
//
// +genclient
// +genclient:onlyVerbs=get,list
// +kubebuilder:object:root=true
type Change struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; creationTimestamp is when the change was
	// made.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	ChangeRecord `json:",inline"`
}

// ChangeList is a page of changes, newest first.
//
// +kubebuilder:object:root=true
type ChangeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Change `json:"items"`
}

// ClusterChange is one recorded change of a cluster-scoped object.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=get,list
// +kubebuilder:object:root=true
type ClusterChange struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; creationTimestamp is when the change was
	// made.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	ChangeRecord `json:",inline"`
}

// ClusterChangeList is a page of cluster-scoped changes, newest first.
//
// +kubebuilder:object:root=true
type ClusterChangeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterChange `json:"items"`
}

// ChangeRecord is what the record knows of a change.
type ChangeRecord struct {
	// Object is the changed object.
	Object ObjectReference `json:"object"`
	// ChangedAt is when the apiserver completed the change (the audit
	// event's stageTimestamp), or when a baseline LIST saw the object.
	ChangedAt metav1.MicroTime `json:"changedAt"`
	// Verb is create, update, patch, delete, deletecollection, or baseline.
	Verb string `json:"verb"`
	// Subresource written, if any (status, scale).
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// ResourceVersion of the object after the change, when known.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Actor is who made the change; absent for a baseline.
	// +optional
	Actor *Actor `json:"actor,omitempty"`
	// InitiatedBy is, for a delete by the namespace controller or the
	// garbage collector, the user whose namespace or owner deletion
	// started the cascade, when the record shows it.
	// +optional
	InitiatedBy string `json:"initiatedBy,omitempty"`
	// InitiatedVia is namespace-deletion or owner-deletion.
	// +optional
	InitiatedVia string `json:"initiatedVia,omitempty"`
	// InitiatedObject is the object whose deletion started the cascade.
	// +optional
	InitiatedObject *ObjectReference `json:"initiatedObject,omitempty"`
	// Restorable: the record holds the full state of this version.
	Restorable bool `json:"restorable"`
	// State is the object after the change (for a delete, its last state),
	// when the record holds it. Only a get of one change carries it.
	// Secret values are digests unless the rules record them in clear.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	State *runtime.RawExtension `json:"state,omitempty"`
	// PriorState is the object before the change: the newest full state
	// the record holds from before it (for a delete, its last state). Only
	// a get of one change carries it; absent for a create, and when the
	// record holds no earlier state. Secret values are digests unless the
	// rules record them in clear.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	PriorState *runtime.RawExtension `json:"priorState,omitempty"`
	// Diff is what the change changed, from priorState to state, as JSON
	// pointers; status and server-set metadata (managedFields,
	// resourceVersion, generation, uid, timestamps) are left out. A create
	// is one add of the whole object (path ""), a delete one remove. Only a
	// get of one change carries it; absent when it cannot be computed (the
	// state before is unknown, or the change gave no full state), and when
	// the change changed none of the fields compared.
	// +optional
	// +listType=atomic
	Diff []FieldChange `json:"diff,omitempty"`
	// Manifest is the clean manifest of this version: its state without
	// what the server sets, and without ownerReferences to owners that no
	// longer exist, ready for kubectl apply -f -. Only a get of one change
	// carries it; absent when the version cannot be restored (no full
	// state, or Secret values recorded as digests).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Manifest *runtime.RawExtension `json:"manifest,omitempty"`
}

// Attempt is one recorded failed or denied write of a namespaced object: a
// create, update, patch or delete the apiserver answered with a code of
// 300 or more (403 from RBAC or admission, 409, 422...). It is read-only.
// Its name is <stage time in unix microseconds>.<event key>, and its
// namespace the object's.
//
// +genclient
// +genclient:onlyVerbs=get,list
// +kubebuilder:object:root=true
type Attempt struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; creationTimestamp is when the attempt was
	// answered.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	AttemptRecord `json:",inline"`
}

// AttemptList is a page of attempts, newest first.
//
// +kubebuilder:object:root=true
type AttemptList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Attempt `json:"items"`
}

// ClusterAttempt is one recorded failed or denied write of a
// cluster-scoped object.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=get,list
// +kubebuilder:object:root=true
type ClusterAttempt struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; creationTimestamp is when the attempt was
	// answered.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	AttemptRecord `json:",inline"`
}

// ClusterAttemptList is a page of cluster-scoped attempts, newest first.
//
// +kubebuilder:object:root=true
type ClusterAttemptList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterAttempt `json:"items"`
}

// AttemptRecord is what the record knows of a failed or denied write.
type AttemptRecord struct {
	// Object is the object the write aimed at (its name is empty for a
	// create with generateName; its uid is set when the apiserver knew it).
	Object ObjectReference `json:"object"`
	// AttemptedAt is when the apiserver answered (the audit event's
	// stageTimestamp).
	AttemptedAt metav1.MicroTime `json:"attemptedAt"`
	// Verb is create, update, patch, delete or deletecollection.
	Verb string `json:"verb"`
	// Subresource written, if any (status, scale).
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// Actor is who tried, as the apiserver's audit event says.
	Actor Actor `json:"actor"`
	// Result is the apiserver's answer.
	Result AttemptResult `json:"result"`
	// RequestObject is the body of the attempted request, when the record
	// kept it (a patch, the object of a create or an update). Only a get of
	// one attempt carries it. Secret values are digests unless the rules
	// record them in clear.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	RequestObject *runtime.RawExtension `json:"requestObject,omitempty"`
}

// AttemptResult is the apiserver's answer to a failed or denied write.
type AttemptResult struct {
	// Code is the HTTP status code (403, 409, 422...).
	Code int32 `json:"code"`
	// Reason is the status' reason (Forbidden, Conflict, Invalid...).
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is the status' message, as the apiserver wrote it.
	// +optional
	Message string `json:"message,omitempty"`
}

// StepResult is the outcome of one step of a plan.
type StepResult struct {
	Index int32 `json:"index"`
	// Action is create, update, delete, none, skip or refuse.
	Action string `json:"action"`
	// Object the step wrote.
	Object ObjectReference `json:"object"`
	// Result is done, failed or skipped.
	// +optional
	Result string `json:"result,omitempty"`
	// +optional
	Code int32 `json:"code,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// RestorePlan is a restore to review before it runs: put the namespace back
// as it was at a time (as-of), or revert what one user changed in it
// (undo). Creating it plans, as its creator, and writes nothing to the
// cluster; a Restore naming it executes it. Only its creator may read it.
//
// +genclient
// +genclient:onlyVerbs=create,get,list,update
// +kubebuilder:object:root=true
type RestorePlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RestorePlanSpec `json:"spec"`
	// +optional
	Status RestorePlanStatus `json:"status,omitempty"`
}

// RestorePlanSpec says what to plan, in the plan's namespace.
type RestorePlanSpec struct {
	// Kind is as-of (put objects back as they were at a time) or undo
	// (revert a user's changes in a time range).
	Kind string `json:"kind"`
	// At is the time an as-of plan goes back to.
	// +optional
	At *metav1.Time `json:"at,omitempty"`
	// User whose changes an undo plan reverts (the authenticated caller of
	// the changes).
	// +optional
	User string `json:"user,omitempty"`
	// Since and Until bound an undo plan's changes (until: default now).
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
	// Resources narrow the plan (at most 50); default: the recorded
	// resources the creator may list and get.
	// +optional
	// +listType=atomic
	Resources []GroupResource `json:"resources,omitempty"`
	// Names narrow the plan to objects of these names.
	// +optional
	// +listType=atomic
	Names []string `json:"names,omitempty"`
}

// GroupResource names a resource.
type GroupResource struct {
	// +optional
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"`
}

// RestorePlanStatus is the plan, and its outcome once executed.
type RestorePlanStatus struct {
	// State is Planned, Running, Succeeded, Partial or Failed.
	// +optional
	State string `json:"state,omitempty"`
	// Summary counts the steps per action.
	// +optional
	Summary map[string]int32 `json:"summary,omitempty"`
	// Steps are the planned steps, in the order they run, with their
	// outcome once executed.
	// +optional
	// +listType=atomic
	Steps []PlanStep `json:"steps,omitempty"`
	// RestoreID is the plan's row in the restores table.
	// +optional
	RestoreID string `json:"restoreID,omitempty"`
	// PlanDigest is the digest of the steps (sha256:, each create and
	// update pinning the recorded state it restores): a Restore executes
	// the plan for real only with it in spec.planDigest.
	// +optional
	PlanDigest string `json:"planDigest,omitempty"`
}

// PlanStep is one planned step.
type PlanStep struct {
	Index int32 `json:"index"`
	// Action is create, update, delete, none, skip or refuse.
	Action string `json:"action"`
	// Object the step writes.
	Object ObjectReference `json:"object"`
	// Version whose state the step restores, <uid>.<version key>.
	// +optional
	Version string `json:"version,omitempty"`
	// Reason for a skip, a refusal or a delete.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Result of the step once executed: done, failed or skipped.
	// +optional
	Result string `json:"result,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// RestorePlanList is the caller's plans, newest first.
//
// +kubebuilder:object:root=true
type RestorePlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []RestorePlan `json:"items"`
}

// ClusterRestorePlan is a RestorePlan of cluster-scoped objects (spec.resources
// is required: ClusterRoles, CustomResourceDefinitions...): put them back as
// they were at a time, or revert what one user changed of them. A
// ClusterRestore naming it executes it.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=create,get,list,update
// +kubebuilder:object:root=true
type ClusterRestorePlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RestorePlanSpec `json:"spec"`
	// +optional
	Status RestorePlanStatus `json:"status,omitempty"`
}

// ClusterRestorePlanList is the caller's cluster restore plans, newest first.
//
// +kubebuilder:object:root=true
type ClusterRestorePlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterRestorePlan `json:"items"`
}
