package manifest

import (
	"errors"
	"fmt"
	"sort"
)

// ErrNotObject is returned for a recorded state that cannot become a
// manifest; the restore paths answer it as "cannot be restored".
var ErrNotObject = errors.New("cannot be restored")

// DroppedOwner is an ownerReference left out of a manifest.
type DroppedOwner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Reason     string `json:"reason"`
}

// OwnerReference is the part of a metadata.ownerReferences entry that
// names the owner.
type OwnerReference struct {
	APIVersion string
	Kind       string
	Name       string
	UID        string
	Controller bool
}

// OwnerCheck says whether an owner exists now and under which uid (an
// owner restored by the same plan has a new one). When ok is false, why
// says what was found.
type OwnerCheck func(ref OwnerReference) (uid string, ok bool, why string)

// Manifest is a version's state cleaned for kubectl apply or a create.
type Manifest struct {
	Object        map[string]any
	Removed       []string       // the server-set fields that were removed
	DroppedOwners []DroppedOwner // ownerReferences removed: the owner is gone
}

// serverSetMetadata are the metadata fields the apiserver sets; a manifest
// must not carry them.
var serverSetMetadata = []string{
	"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
	"deletionTimestamp", "deletionGracePeriodSeconds",
}

// CleanManifest returns a copy of a recorded object fit for kubectl apply
// or a create: without the server-set metadata fields above and status;
// ownerReferences kept only for owners that still exist (owners says so,
// and may give the owner's new uid), the others reported. A Service loses
// its allocated cluster IPs (unless headless), which the cluster may have
// given to another Service meanwhile. obj is not modified.
//
// It fails when obj is not a Kubernetes object (no apiVersion, kind or
// metadata.name).
func CleanManifest(obj map[string]any, owners OwnerCheck) (*Manifest, error) {
	if obj == nil {
		return nil, fmt.Errorf("%w: no object", ErrNotObject)
	}
	out := DeepCopy(obj).(map[string]any)
	apiVersion, _ := out["apiVersion"].(string)
	kind, _ := out["kind"].(string)
	md, _ := out["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if apiVersion == "" || kind == "" || name == "" {
		return nil, fmt.Errorf("%w: the recorded state is not a Kubernetes object (apiVersion, kind or metadata.name missing)", ErrNotObject)
	}
	m := &Manifest{Object: out}
	for _, f := range serverSetMetadata {
		if _, ok := md[f]; ok {
			delete(md, f)
			m.Removed = append(m.Removed, "metadata."+f)
		}
	}
	if _, ok := out["status"]; ok {
		delete(out, "status")
		m.Removed = append(m.Removed, "status")
	}
	if kind == "Service" && apiVersion == "v1" {
		if spec, ok := out["spec"].(map[string]any); ok && spec["clusterIP"] != "None" {
			for _, f := range []string{"clusterIP", "clusterIPs"} {
				if _, ok := spec[f]; ok {
					delete(spec, f)
					m.Removed = append(m.Removed, "spec."+f)
				}
			}
		}
	}
	if refs, ok := md["ownerReferences"]; ok {
		kept := m.cleanOwners(refs, owners)
		if len(kept) == 0 {
			delete(md, "ownerReferences")
		} else {
			md["ownerReferences"] = kept
		}
	}
	sort.Strings(m.Removed)
	return m, nil
}

func (m *Manifest) cleanOwners(refs any, owners OwnerCheck) []any {
	list, _ := refs.([]any)
	var kept []any
	for _, r := range list {
		rm, ok := r.(map[string]any)
		if !ok {
			m.DroppedOwners = append(m.DroppedOwners, DroppedOwner{Reason: "not an ownerReference"})
			continue
		}
		ref := OwnerReference{}
		ref.APIVersion, _ = rm["apiVersion"].(string)
		ref.Kind, _ = rm["kind"].(string)
		ref.Name, _ = rm["name"].(string)
		ref.UID, _ = rm["uid"].(string)
		ref.Controller, _ = rm["controller"].(bool)
		dropped := DroppedOwner{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
		if owners == nil {
			dropped.Reason = "owner not checked"
			m.DroppedOwners = append(m.DroppedOwners, dropped)
			continue
		}
		uid, ok, why := owners(ref)
		if !ok {
			dropped.Reason = why
			m.DroppedOwners = append(m.DroppedOwners, dropped)
			continue
		}
		if uid != "" && uid != ref.UID {
			rm["uid"] = uid
		}
		kept = append(kept, rm)
	}
	return kept
}

// DeepCopy copies decoded JSON.
func DeepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = DeepCopy(e)
		}
		return out
	}
	return v
}
