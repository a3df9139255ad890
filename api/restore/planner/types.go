package planner

import (
	"time"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/impersonate"
)

// Plan kinds.
const (
	KindAsOf = "as-of"
	KindUndo = "undo"
)

// Step actions.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
	ActionNone   = "none"
	ActionSkip   = "skip"
	ActionRefuse = "refuse"
)

// PlanRequest asks for a restore plan.
type PlanRequest struct {
	Kind string `json:"kind" doc:"as-of: put objects back as they were at a time; undo: revert a user's changes in a time range"`
	// as-of
	Namespaces []string   `json:"namespaces,omitempty" doc:"as-of: the namespaces to restore (\"\" selects cluster-scoped objects and needs resources); undo: only changes in these; at most 100"`
	At         *time.Time `json:"at,omitempty" doc:"as-of: the time to go back to"`
	// undo
	User  string     `json:"user,omitempty" doc:"undo: the user whose changes to revert (the authenticated caller of the changes)"`
	Since *time.Time `json:"since,omitempty" doc:"undo: start of the range"`
	Until *time.Time `json:"until,omitempty" doc:"undo: end of the range (default: now)"`
	// selection, both kinds
	Resources []GroupResource `json:"resources,omitempty" doc:"only these resources, at most 50; the caller must be allowed to list and get them in each namespace given (default: the recorded resources the caller may list and get; others are left out)"`
	Names     []string        `json:"names,omitempty" doc:"only objects with these names (at most the plan step cap)"`
	// Record names the plan when it is created as an object of the
	// aggregated API; Preview plans without recording anything (a
	// server-side dry run of the create).
	Record  *RecordName `json:"-"`
	Preview bool        `json:"-"`
}

// GroupResource selects a resource.
type GroupResource struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
}

// RecordName names a restore created as an object of the aggregated API.
type RecordName struct {
	Namespace, Name string
}

// Step is one action of a plan.
type Step struct {
	Index    int                  `json:"index"`
	Action   string               `json:"action" doc:"create, update, delete; none (already as planned), skip (left to a controller or the cluster), refuse (cannot be restored: see reason)"`
	Object   ObjectRef            `json:"object"`
	Source   *history.Version     `json:"source,omitempty" doc:"the version whose state is restored (create, update)"`
	Live     *LiveRef             `json:"live,omitempty" doc:"the live object when planned; execution refuses the step if it changed since, unless force"`
	Reason   string               `json:"reason,omitempty"`
	Warnings []string             `json:"warnings,omitempty"`
	Changes  []history.DiffChange `json:"changes,omitempty" doc:"what an update changes in the live object (at most 50 shown)"`
	// Owners are the uids of the step's owners (ordering, owner rewrites).
	Owners []string `json:"owners,omitempty" doc:"uids of the object's owners, as recorded"`
	// StateDigest pins the state a create or update restores.
	StateDigest string `json:"stateDigest,omitempty" doc:"sha256: of the recorded state the step restores (create, update): a run refuses a state the record no longer holds as planned"`
}

// ObjectRef names an object of the cluster.
type ObjectRef = impersonate.ObjectRef

// LiveRef is the live object a restore saw.
type LiveRef struct {
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
}
