package cmdutil

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// Versions lists the recorded changes of a target, newest first, up to
// limit: the list as the API answered it (for -o) and its records.
func (f *Factory) Versions(ctx context.Context, t *Target, extra []string, limit int64) (runtime.Object, []record.ChangeRecord, []metav1.ObjectMeta, error) {
	rc, err := f.Record()
	if err != nil {
		return nil, nil, nil, err
	}
	opts := metav1.ListOptions{FieldSelector: t.Selector(extra...)}
	var recs []record.ChangeRecord
	var metas []metav1.ObjectMeta
	if !t.Namespaced {
		got, err := Collect(opts, limit, func(o metav1.ListOptions) ([]record.ClusterChange, string, error) {
			l, err := rc.ClusterChanges().List(ctx, o)
			if err != nil {
				return nil, "", Explain(err, "list the changes of "+t.Resource.String())
			}
			return l.Items, l.Continue, nil
		})
		if err != nil {
			return nil, nil, nil, err
		}
		for _, i := range got {
			recs, metas = append(recs, i.ChangeRecord), append(metas, i.ObjectMeta)
		}
		return &record.ClusterChangeList{Items: got}, recs, metas, nil
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, nil, nil, err
	}
	got, err := Collect(opts, limit, func(lo metav1.ListOptions) ([]record.Change, string, error) {
		l, err := rc.Changes(ns).List(ctx, lo)
		if err != nil {
			return nil, "", Explain(err, "list the changes of "+t.Resource.String()+" in namespace "+ns)
		}
		return l.Items, l.Continue, nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, i := range got {
		recs, metas = append(recs, i.ChangeRecord), append(metas, i.ObjectMeta)
	}
	return &record.ChangeList{Items: got}, recs, metas, nil
}

// Version returns one recorded change of the target with its states and
// manifest: the named version, or the newest the record can restore.
func (f *Factory) Version(ctx context.Context, t *Target, name string) (*record.ChangeRecord, string, error) {
	if name == "" {
		_, recs, metas, err := f.Versions(ctx, t, nil, 500)
		if err != nil {
			return nil, "", err
		}
		for i, r := range recs {
			if r.Restorable {
				name = metas[i].Name
				break
			}
		}
		if name == "" {
			why := ""
			if t.Resource.Group == "" && t.Resource.Resource == "secrets" {
				// The usual reason, said as manifest and export say it.
				why = "; a Secret's values are recorded as digests unless its rule sets recordSecretData"
			}
			return nil, "", &codedError{ExitNotFound, fmt.Errorf("the record holds no full state of %s/%s (that you may see%s): see kubectl record history", t.Resource, t.Name, why)}
		}
	}
	rc, err := f.Record()
	if err != nil {
		return nil, "", err
	}
	// The server resolves a short name (or a unique prefix of its
	// suffix) among the changes the caller may read; what comes back is
	// named by its long name.
	if !t.Namespaced {
		c, err := rc.ClusterChanges().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, "", Explain(err, "get version "+name)
		}
		if c.Object.Resource != t.Resource.Resource || c.Object.APIGroup != t.Resource.Group || c.Object.Name != t.Name {
			return nil, "", usageError{fmt.Errorf("version %s is of %s %s, not of %s/%s", name, format.ResourceCell(c.Object), format.Cell(c.Object.Name), t.Resource, t.Name)}
		}
		return &c.ChangeRecord, c.Name, nil
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, "", err
	}
	c, err := rc.Changes(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", Explain(err, "get version "+name+" in namespace "+ns)
	}
	if c.Object.Resource != t.Resource.Resource || c.Object.APIGroup != t.Resource.Group || c.Object.Name != t.Name {
		return nil, "", usageError{fmt.Errorf("version %s is of %s %s, not of %s/%s", name, format.ResourceCell(c.Object), format.Cell(c.Object.Name), t.Resource, t.Name)}
	}
	return &c.ChangeRecord, c.Name, nil
}

// ShortName is the short name of the version named long of c's object.
func ShortName(c *record.ChangeRecord, long string) string {
	return shortname.OfLong(c.Object.Name, long)
}

// AttemptShortName is the short name of the attempt named long on a's
// object.
func AttemptShortName(a *record.AttemptRecord, long string) string {
	return shortname.OfLong(a.Object.Name, long)
}

// Side is one side of a diff: a state and how to name it.
type Side struct {
	Label string
	State map[string]any
}

// VersionSide is the state of a named version.
func (f *Factory) VersionSide(ctx context.Context, t *Target, name string) (Side, error) {
	c, name, err := f.Version(ctx, t, name)
	if err != nil {
		return Side{}, err
	}
	state, err := RawState(c.State)
	if err != nil {
		return Side{}, err
	}
	if state == nil {
		return Side{}, &codedError{ExitNotFound, fmt.Errorf("version %s holds no full state (a delete answered by a Status, or not restorable)", name)}
	}
	return Side{Label: fmt.Sprintf("%s (%s by %s, %s ago)", ShortName(c, name), c.Verb, format.ActorOf(c), format.Age(c.ChangedAt.Time)), State: state}, nil
}

// LiveSide is the object as the cluster has it now, read as the caller.
func (f *Factory) LiveSide(ctx context.Context, t *Target) (Side, error) {
	cfg, err := f.Config.ToRESTConfig()
	if err != nil {
		return Side{}, err
	}
	mapper, err := f.Config.ToRESTMapper()
	if err != nil {
		return Side{}, err
	}
	gvr, err := mapper.ResourceFor(t.Resource.WithVersion(""))
	if err != nil {
		return Side{}, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Side{}, err
	}
	ri := dynamic.ResourceInterface(dc.Resource(gvr))
	what := "get " + t.Resource.String() + " " + t.Name
	if t.Namespaced {
		ns, err := f.Namespace()
		if err != nil {
			return Side{}, err
		}
		ri, what = dc.Resource(gvr).Namespace(ns), what+" in namespace "+ns
	}
	u, err := ri.Get(ctx, t.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Side{Label: "live (absent: no such object now)"}, nil
	}
	if err != nil {
		return Side{}, Explain(err, what)
	}
	return Side{Label: "live (resourceVersion " + u.GetResourceVersion() + ")", State: u.Object}, nil
}

// RawState is a recorded state as an object; nil when there is none.
func RawState(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return nil, nil
	}
	data := raw.Raw
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("a recorded state is not an object: %w", err)
	}
	return obj, nil
}
