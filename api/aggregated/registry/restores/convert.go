package restores

import (
	"context"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore"
)

// restoreOf reads a recorded restore back as an object.
func restoreOf(p *restore.Plan) *recordv1alpha1.Restore {
	r := &recordv1alpha1.Restore{
		TypeMeta:   metav1.TypeMeta{Kind: "Restore", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(p.ID), CreationTimestamp: metav1.NewTime(p.CreatedAt), ResourceVersion: "1"},
		Status:     recordv1alpha1.RestoreStatus{DryRun: p.DryRun, RestoreID: p.ID, CreatedBy: p.CreatedBy},
	}
	if p.Record != nil {
		r.Namespace, r.Name = p.Record.Namespace, p.Record.Name
	}
	r.Status.Phase = phaseOf(p.State)
	if p.Kind != restore.KindVersion {
		// The run of a plan: one result per step.
		r.Status.PlanDigest = p.Digest
		for _, o := range p.Outcome {
			sr := recordv1alpha1.StepResult{Index: int32(o.Index), Action: o.Action, Result: o.Result, Code: int32(o.Code), Message: o.Message}
			if o.Index >= 0 && o.Index < len(p.Steps) {
				sr.Object = objectRef(p.Steps[o.Index].Object)
			}
			r.Status.Steps = append(r.Status.Steps, sr)
		}
		return r
	}
	if len(p.Steps) > 0 && p.Steps[0].Source != nil {
		src := p.Steps[0].Source
		r.Spec.Version = registry.ObjectName(src.UID, src.VersionKey)
		r.Status.Object = sourceRef(src)
		r.Status.StateDigest = p.Steps[0].StateDigest
	}
	if len(p.Outcome) > 0 {
		o := p.Outcome[0]
		r.Status.Action, r.Status.Code, r.Status.Message = o.Action, int32(o.Code), o.Message
		if r.Status.Object != nil && o.UID != "" {
			r.Status.Object.UID = o.UID
		}
		r.Status.ResourceVersion = o.ResourceVersion
		for _, d := range o.DroppedOwners {
			r.Status.DroppedOwnerReferences = append(r.Status.DroppedOwnerReferences, recordv1alpha1.DroppedOwner(d))
		}
	}
	return r
}

// phaseOf names a restore's state as a phase.
func phaseOf(state string) string {
	switch state {
	case restore.StatePlanned:
		return "Planned"
	case restore.StateRunning:
		return "Running"
	case restore.StateSucceeded:
		return "Succeeded"
	case restore.StatePartial:
		return "Partial"
	case restore.StateRefused:
		return "Refused"
	}
	return "Failed"
}

func objectRef(o restore.ObjectRef) recordv1alpha1.ObjectReference {
	return recordv1alpha1.ObjectReference{APIGroup: o.Group, APIVersion: o.APIVersion, Resource: o.Resource, Kind: o.Kind,
		Namespace: o.Namespace, Name: o.Name}
}

func sourceRef(v *history.Version) *recordv1alpha1.ObjectReference {
	return &recordv1alpha1.ObjectReference{APIGroup: v.Group, APIVersion: v.APIVersion, Resource: v.Resource, Kind: v.Kind,
		Namespace: v.Namespace, Name: v.Name, UID: v.UID}
}

var restoreColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Resource", Type: "string", Description: "Resource of the restored object"},
	{Name: "Object", Type: "string", Description: "Name of the restored object"},
	{Name: "Phase", Type: "string", Description: "Succeeded, Refused or Failed"},
	{Name: "Action", Type: "string", Description: "create, update or none"},
	{Name: "Age", Type: "string"},
	{Name: "Message", Type: "string", Priority: 1},
}

func (*restoreStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: restoreColumns}
	add := func(o runtime.Object, r *recordv1alpha1.Restore) {
		var res, name string
		if o := r.Status.Object; o != nil {
			res, name = o.Resource, o.Name
			if o.APIGroup != "" {
				res += "." + o.APIGroup
			}
		}
		phase := r.Status.Phase
		if r.Status.DryRun {
			phase += " (dry run)"
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{registry.Cell(r.Name), registry.Cell(res), registry.Cell(name), phase, r.Status.Action,
				duration.HumanDuration(time.Since(r.CreationTimestamp.Time)), registry.Cell(strings.TrimSpace(r.Status.Message))},
			Object: runtime.RawExtension{Object: o},
		})
	}
	switch o := obj.(type) {
	case *recordv1alpha1.Restore:
		add(o, o)
	case *recordv1alpha1.ClusterRestore:
		r, _ := asRestore(o)
		add(o, r)
	case *recordv1alpha1.RestoreList:
		table.ListMeta = o.ListMeta
		for i := range o.Items {
			add(&o.Items[i], &o.Items[i])
		}
	case *recordv1alpha1.ClusterRestoreList:
		table.ListMeta = o.ListMeta
		for i := range o.Items {
			r, _ := asRestore(&o.Items[i])
			add(&o.Items[i], r)
		}
	default:
		return nil, apierrors.NewInternalError(registry.ErrUnexpectedType(obj))
	}
	return table, nil
}

// secretChange is a change of a Secret as a Restore's status tells it: the
// path and operation, never a value. A Restore's create is answered with
// its status, and the kube-apiserver's audit log (RequestResponse for
// writes) keeps that answer, where Secret values must not be; the keys of a
// data or stringData map that changed as a whole are named, each with an
// empty value.
func secretChange(fc recordv1alpha1.FieldChange, from, to any) recordv1alpha1.FieldChange {
	keysOnly := func(v any) *runtime.RawExtension {
		m, ok := v.(map[string]any)
		if !ok || (fc.Path != "/data" && fc.Path != "/stringData" && fc.Path != "") {
			return nil
		}
		if fc.Path == "" { // the whole object: keep its metadata, name its data keys
			out := map[string]any{}
			for k, val := range m {
				switch k {
				case "data", "stringData":
					if d, ok := val.(map[string]any); ok {
						keys := map[string]any{}
						for dk := range d {
							keys[dk] = ""
						}
						out[k] = keys
					}
				default:
					out[k] = val
				}
			}
			return registry.Raw(out)
		}
		keys := map[string]any{}
		for k := range m {
			keys[k] = ""
		}
		return registry.Raw(keys)
	}
	fc.From, fc.To = keysOnly(from), keysOnly(to)
	return fc
}
