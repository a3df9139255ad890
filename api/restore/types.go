package restore

import (
	"encoding/json"
	"time"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore/manifest"
	"github.com/options-record/options-record/api/restore/planner"
)

// The documents of a plan are the planner's.
type (
	// PlanRequest asks for a restore plan.
	PlanRequest = planner.PlanRequest
	// GroupResource selects a resource.
	GroupResource = planner.GroupResource
	// RecordName names a restore created as an object of the aggregated API.
	RecordName = planner.RecordName
	// Step is one action of a plan.
	Step = planner.Step
	// ObjectRef names an object of the cluster.
	ObjectRef = planner.ObjectRef
	// LiveRef is the live object a restore saw.
	LiveRef = planner.LiveRef
)

// DroppedOwner is an ownerReference left out of a manifest.
type DroppedOwner = manifest.DroppedOwner

// ManifestResult is the clean manifest of a version, for kubectl apply.
type ManifestResult struct {
	Version       history.Version `json:"version"`
	Manifest      map[string]any  `json:"manifest"`
	Removed       []string        `json:"removedFields" doc:"server-set fields removed from the state"`
	DroppedOwners []DroppedOwner  `json:"droppedOwnerReferences,omitempty" doc:"ownerReferences removed because the owner no longer exists (or could not be checked)"`
	OwnersChecked string          `json:"ownersCheckedAgainst" doc:"cluster (as the caller) or record (standalone mode)"`
}

// RestoreRequest is the body of a restore of one version (optional).
type RestoreRequest struct {
	ExpectedResourceVersion string `json:"expectedResourceVersion,omitempty" doc:"the live object's resourceVersion the caller based the request on; the restore is refused (409) if the live object differs. Without it, the live object must match the newest recorded version"`
	Force                   bool   `json:"force,omitempty" doc:"restore even if the live object changed"`
	DryRun                  bool   `json:"dryRun,omitempty" doc:"ask the apiserver for a server-side dry run: nothing is changed (also ?dryRun=true)"`
	StateDigest             string `json:"stateDigest,omitempty" doc:"the stateDigest your dry run answered: the restore is refused (409) before anything is written if the record no longer holds that state for the version (it was rewritten since). Without it, the state the record holds at run time is restored"`
	// Record names the restore when it is created as an object of the
	// aggregated API (kubectl create): its author reads it back by name.
	Record *RecordName `json:"-"`
}

// RestoreResult says what a restore of one version did.
type RestoreResult struct {
	RestoreID     string               `json:"restoreId" doc:"the row of the restores table recording it"`
	Action        string               `json:"action" doc:"create (the object was gone), update (it exists) or none (it already holds this state)"`
	DryRun        bool                 `json:"dryRun"`
	Source        history.Version      `json:"source"`
	StateDigest   string               `json:"stateDigest,omitempty" doc:"sha256: of the recorded state restored (or, in a dry run, that would be): pass it as stateDigest to the real run so it restores what you reviewed"`
	Live          *LiveRef             `json:"live,omitempty" doc:"the live object before the restore; absent when it was gone"`
	Object        json.RawMessage      `json:"object,omitempty" doc:"the apiserver's answer: the object as restored (or as it would be, in a dry run)"`
	DroppedOwners []DroppedOwner       `json:"droppedOwnerReferences,omitempty"`
	Changes       []history.DiffChange `json:"changes,omitempty" doc:"what the restore changes in the live object (update)"`
}

// StepOutcome is what executing a step did.
type StepOutcome struct {
	Index           int            `json:"index"`
	Action          string         `json:"action"`
	Result          string         `json:"result" doc:"done, failed, skipped"`
	Code            int            `json:"code,omitempty" doc:"HTTP status of the apiserver's answer, or of this API's refusal"`
	Message         string         `json:"message,omitempty"`
	UID             string         `json:"uid,omitempty" doc:"uid of the object after the step"`
	ResourceVersion string         `json:"resourceVersion,omitempty"`
	DroppedOwners   []DroppedOwner `json:"droppedOwnerReferences,omitempty"`
}

// Plan is a restore plan: reviewed by the caller, then executed.
type Plan struct {
	ID        string         `json:"id"`
	Cluster   string         `json:"cluster"`
	Kind      string         `json:"kind"`
	CreatedBy string         `json:"createdBy"`
	CreatedAt time.Time      `json:"createdAt"`
	State     string         `json:"state" doc:"planned, running, succeeded, partial, failed"`
	DryRun    bool           `json:"dryRun,omitempty" doc:"this is the record of a dry run of plan planId"`
	PlanID    string         `json:"planId,omitempty"`
	Request   PlanRequest    `json:"request"`
	Summary   map[string]int `json:"summary" doc:"number of steps per action"`
	Steps     []Step         `json:"steps"`
	Outcome   []StepOutcome  `json:"outcome,omitempty" doc:"one entry per step once executed"`
	Execute   string         `json:"execute" doc:"POST here to execute the plan"`
	Digest    string         `json:"digest" doc:"sha256: digest of the steps (each create or update pinning its state): pass it as digest to execute the plan for real; a plan whose steps differ is refused (409)"`
	// Record is the object name of a restore created through the
	// aggregated API.
	Record *RecordName `json:"-"`
}

// ExecuteRequest is the body of a plan execution (optional).
type ExecuteRequest struct {
	Force  bool   `json:"force,omitempty" doc:"carry out steps whose live object changed since the plan"`
	DryRun bool   `json:"dryRun,omitempty" doc:"server-side dry run of every step; the plan stays planned (also ?dryRun=true)"`
	Digest string `json:"digest,omitempty" doc:"the digest of the plan you reviewed (the plan and each dry run answer it): required to execute for real; a plan whose steps, or a state they restore, differ from it is refused (409) before anything is written"`
	// Record names the execution when it is created as a Restore of the
	// aggregated API: it is recorded as a run of its own (plan_id names
	// the plan), whose outcome the plan's row gets too.
	Record *RecordName `json:"-"`
}
