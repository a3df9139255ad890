package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons used in OptionsRecordControllerStatus.Conditions.
const (
	// ConditionReady is True when the sink applies the object's rule.
	ConditionReady = "Ready"

	// ReasonSynced: the sink compiled the rule and applies it.
	ReasonSynced = "Synced"
	// ReasonInvalidSpec: the spec failed the sink's validation; the rule is
	// not applied. The condition's message names the offending fields.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNamespaceOutOfScope: the object lives outside the sink's own
	// namespace but sets spec.namespaces; such an object may only record its
	// own namespace, so the rule is not applied.
	ReasonNamespaceOutOfScope = "NamespaceOutOfScope"

	// ConditionCapped is True when the sink applies the object's rule with
	// less than it asks for, because the operator's ceilings say so (a
	// retention longer than the sink allows, Secret data a tenant rule may
	// not record); the message says what was changed. Absent otherwise.
	ConditionCapped = "Capped"
	// ReasonOperatorCeiling: an operator ceiling (a flag of the sink)
	// narrowed the rule.
	ReasonOperatorCeiling = "OperatorCeiling"
)

// Defaults and bounds of the spec, shared by the CRD schema (see the markers
// below) and the sink's own validation.
const (
	// DefaultRetention is how long versions and events are kept when
	// spec.retention is unset.
	DefaultRetention = 720 * time.Hour
	// MinRetention is the shortest accepted spec.retention.
	MinRetention = time.Hour
)

// Verb is a mutating Kubernetes API verb, as written in audit events.
// +kubebuilder:validation:Enum=create;update;patch;delete;deletecollection
type Verb string

// The verbs an OptionsRecordController can select.
const (
	VerbCreate           Verb = "create"
	VerbUpdate           Verb = "update"
	VerbPatch            Verb = "patch"
	VerbDelete           Verb = "delete"
	VerbDeleteCollection Verb = "deletecollection"
)

// MutatingVerbs lists every Verb, the default of spec.verbs.
var MutatingVerbs = []Verb{VerbCreate, VerbUpdate, VerbPatch, VerbDelete, VerbDeleteCollection}

// OptionsRecordControllerSpec selects the changes to record.
//
// Selectors combine with AND: an audit event matches when its namespace, its
// resource, its verb and its user all match. Within one list, any entry may
// match. Glob patterns match the whole string; `*` matches any run of
// characters (including none, and including `/` and `:`), `?` matches one
// character, and `[`, `]` and `\` are reserved.
//
// +kubebuilder:validation:XValidation:rule="(has(self.ignoreStatusOnlyChanges) && !self.ignoreStatusOnlyChanges) || !has(self.resources) || !self.resources.exists(s, s.resources.exists(r, r.endsWith('/status')))",message="a resources entry naming a status subresource needs ignoreStatusOnlyChanges: false, which would otherwise drop every change it selects"
type OptionsRecordControllerSpec struct {
	// Namespaces are glob patterns of the namespaces to record. Empty means
	// all namespaces and also cluster-scoped objects. Honoured only for
	// objects in the sink's own namespace: an OptionsRecordController in any
	// other namespace records only its own namespace and must leave this
	// empty (otherwise it is Ready=False, reason NamespaceOutOfScope).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9*?-]+$`
	Namespaces []string `json:"namespaces,omitempty"`

	// ExcludeNamespaces are glob patterns of namespaces never to record.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9*?-]+$`
	ExcludeNamespaces []string `json:"excludeNamespaces,omitempty"`

	// Resources selects API groups and resources. Empty means all resources.
	//
	// A wildcard (an empty list or a `*` entry) leaves out writes that never
	// change stored state (access and token reviews, serviceaccounts/token,
	// pods/exec, attach, portforward and proxy) and high-churn kinds (leases,
	// events); name them explicitly to record them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Resources []ResourceSelector `json:"resources,omitempty"`

	// Verbs are the mutating verbs to record. Empty means all of them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	Verbs []Verb `json:"verbs,omitempty"`

	// Users are glob patterns of user names. Empty means every user. An
	// event matches when the authenticated user or the impersonated user
	// matches.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\[\]\\]+$`
	Users []string `json:"users,omitempty"`

	// ExcludeUsers are glob patterns of user names whose changes are not
	// recorded. They apply to the authenticated user only, so impersonating
	// an excluded identity does not hide a change.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\[\]\\]+$`
	ExcludeUsers []string `json:"excludeUsers,omitempty"`

	// UserGroups are glob patterns of group names. Empty means every group.
	// An event matches when a group of the authenticated user or of the
	// impersonated user matches.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\[\]\\]+$`
	UserGroups []string `json:"userGroups,omitempty"`

	// ExcludeUserGroups are glob patterns of group names whose members'
	// changes are not recorded. They apply to the authenticated user's
	// groups only.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\[\]\\]+$`
	ExcludeUserGroups []string `json:"excludeUserGroups,omitempty"`

	// IgnoreStatusOnlyChanges drops changes that touch only the status, the
	// managed fields or the resource version of an object: writes to the
	// status subresource, and patches whose body changes nothing else.
	// +optional
	// +kubebuilder:default=true
	IgnoreStatusOnlyChanges *bool `json:"ignoreStatusOnlyChanges,omitempty"`

	// RecordSecretData stores the values of Secrets' data and stringData
	// (and of the last-applied-configuration annotation) as they are. When
	// false, each value is replaced by its SHA-256 digest before it is
	// written, and restoring such a version is refused.
	// +optional
	// +kubebuilder:default=false
	RecordSecretData bool `json:"recordSecretData,omitempty"`

	// Retention is how long recorded versions and events are kept; at
	// least 1h.
	// +optional
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="retention must be at least 1h"
	Retention *metav1.Duration `json:"retention,omitempty"`

	// Notify routes the changes this rule records to destinations the
	// operator configured (the sink's --notify-config file), which name the
	// URL, the format and the secret; a rule names a destination only. Each
	// route selects, among the changes the rule records, those of its
	// verbs (default: delete and deletecollection). A rule outside the
	// sink's trusted namespaces records only its own namespace, so its
	// routes carry only that namespace's changes, and it may name only the
	// destinations the operator opened to its namespace.
	// +optional
	// +listType=map
	// +listMapKey=destination
	// +kubebuilder:validation:MaxItems=8
	Notify []NotifyRoute `json:"notify,omitempty"`
}

// NotifyRoute sends the changes a rule records to one destination.
type NotifyRoute struct {
	// Destination is the name of a destination in the sink's notification
	// configuration.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Destination string `json:"destination"`

	// Verbs are the verbs whose changes are sent. Empty means delete and
	// deletecollection. A verb the rule does not record is never sent.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	Verbs []Verb `json:"verbs,omitempty"`

	// Refused also sends the attempts of these verbs that the cluster
	// refused (a delete answered 403): who tried, as whom and from where.
	// A refused attempt changed nothing, so its message has no undo.
	// +optional
	Refused bool `json:"refused,omitempty"`
}

// DefaultNotifyVerbs are the verbs of a NotifyRoute without verbs.
var DefaultNotifyVerbs = []Verb{VerbDelete, VerbDeleteCollection}

// ResourceSelector selects resources of one API group.
type ResourceSelector struct {
	// Group is the API group: "" for the core group, "*" for every group.
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`
	Group string `json:"group"`

	// Resources are plural resource names of the group. "*" selects every
	// resource; "deployments" selects the resource and all its
	// subresources; "deployments/scale" selects only that subresource.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=127
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(/[a-z0-9]([-a-z0-9]*[a-z0-9])?)?)$`
	Resources []string `json:"resources"`
}

// OptionsRecordControllerStatus is written by the sink.
type OptionsRecordControllerStatus struct {
	// ObservedGeneration is the metadata.generation the sink last compiled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions hold the Ready condition.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// RecordedEvents counts the events this rule kept.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RecordedEvents int64 `json:"recordedEvents,omitempty"`

	// LastRecordedTime is when this rule last kept an event.
	// +optional
	LastRecordedTime *metav1.Time `json:"lastRecordedTime,omitempty"`
}

// OptionsRecordController selects the Kubernetes object changes that the
// Options Record sink records from the kube-apiserver's audit events.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=optionsrecordcontrollers,scope=Namespaced,shortName=orc
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Recorded",type=integer,JSONPath=`.status.recordedEvents`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OptionsRecordController struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec OptionsRecordControllerSpec `json:"spec,omitempty"`
	// +optional
	Status OptionsRecordControllerStatus `json:"status,omitempty"`
}

// OptionsRecordControllerList is a list of OptionsRecordController objects.
//
// +kubebuilder:object:root=true
type OptionsRecordControllerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OptionsRecordController `json:"items"`
}
