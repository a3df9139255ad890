package record

import (
	"context"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/shortname"
)

// deletionStorage serves deletions (namespaced) or cluster deletions
// (cluster-scoped objects) from the record, through the history service:
// each caller sees only the deletions of objects they may get.
type deletionStorage struct {
	recordScope
}

var (
	_ rest.Storage              = (*deletionStorage)(nil)
	_ rest.Scoper               = (*deletionStorage)(nil)
	_ rest.Getter               = (*deletionStorage)(nil)
	_ rest.Lister               = (*deletionStorage)(nil)
	_ rest.SingularNameProvider = (*deletionStorage)(nil)
	_ rest.CategoriesProvider   = (*deletionStorage)(nil)
)

func newDeletionStorage(log *slog.Logger, hist *history.Service, cluster string, namespaced bool) *deletionStorage {
	return &deletionStorage{newRecordScope(log, hist, cluster, "deletions", namespaced)}
}

func (s *deletionStorage) New() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.Deletion{}
	}
	return &recordv1alpha1.ClusterDeletion{}
}

func (s *deletionStorage) NewList() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.DeletionList{}
	}
	return &recordv1alpha1.ClusterDeletionList{}
}

func (s *deletionStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	id, err := s.resolve(ctx, name, true)
	if err != nil {
		return nil, err
	}
	d, err := s.hist.Deletion(ctx, id)
	if err != nil {
		return nil, s.apiError(err, name)
	}
	if !s.serves(ctx, d.Namespace) {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	return s.object(d, true), nil
}

// selected is what a list's field selector asks for.
type selected struct {
	filter history.ObjectFilter
	since  time.Time
	until  time.Time
}

func (s *deletionStorage) fieldSelector(ctx context.Context, sel fields.Selector, now time.Time) (selected, error) {
	var out selected
	if sel == nil || sel.Empty() {
		return out, nil
	}
	reqs, err := requirements(sel)
	if err != nil {
		return out, err
	}
	for _, r := range reqs {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return out, apierrors.NewBadRequest("field selector " + r.Field + string(r.Operator) + r.Value + ": only = is supported")
		}
		v := r.Value
		switch r.Field {
		case "metadata.namespace":
			// The request's namespace already selects.
		case "metadata.name":
			id, err := s.resolveSelected(ctx, v, true)
			if err != nil {
				return out, err
			}
			out.filter.UID = id.UID
		case "object.apiGroup":
			g := v
			out.filter.Group = &g
		case "object.resource":
			out.filter.Resource = v
		case "object.name":
			out.filter.Name = v
		case "actor.username":
			out.filter.User = v
		case "since", "until":
			t, err := history.ParseTime(r.Field, v, now)
			if err != nil {
				return out, apierrors.NewBadRequest(err.Error())
			}
			if r.Field == "since" {
				out.since = t
			} else {
				out.until = t
			}
		default:
			return out, apierrors.NewBadRequest("field label " + r.Field + " not supported for " + s.resource.Resource +
				" (supported: metadata.name, metadata.namespace, " + strings.Join(recordv1alpha1.DeletionSelectableFields, ", ") + ")")
		}
	}
	return out, nil
}

// List pages through the deletions the caller may read, newest first. The
// continue token is the history service's sealed cursor: it tells nothing
// of the rows the caller may not read, and a later page continues where the
// last one stopped (the record only grows at its head).
func (s *deletionStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	opts, matches := listOptions(opts)
	sel, err := s.fieldSelector(ctx, opts.FieldSelector, time.Now())
	if err != nil {
		return nil, err
	}
	list := s.NewList()
	if !matches {
		return list, nil
	}
	f := sel.filter
	var some bool
	if f.Namespace, some = s.listNamespace(ctx, opts.FieldSelector); !some {
		return list, nil
	}
	f.NamespacedOnly = s.namespaced
	f.Cluster = s.cluster
	page, err := s.hist.Deletions(ctx, f, history.PageOptions{Limit: registry.ListLimit(opts), Continue: opts.Continue, Since: sel.since, Until: sel.until})
	if err != nil {
		return nil, s.apiError(err, "")
	}
	items := make([]runtime.Object, 0, len(page.Items))
	for i := range page.Items {
		if s.namespaced && page.Items[i].Namespace == "" {
			continue // a cluster-scoped object's: see clusterdeletions
		}
		items = append(items, s.object(&page.Items[i], false))
	}
	return fillList(list, items, page.Next)
}

// object converts a deletion of the record; withState carries the last
// state (a get), a list leaves it out.
func (s *deletionStorage) object(d *history.Deletion, withState bool) runtime.Object {
	rec := recordv1alpha1.DeletionRecord{
		Object: recordv1alpha1.ObjectReference{APIGroup: d.Group, APIVersion: d.APIVersion, Resource: d.Resource, Kind: d.Kind,
			Namespace: d.Namespace, Name: d.Name, UID: d.UID},
		DeletedAt:    metav1.NewMicroTime(d.ChangedAt),
		Verb:         d.Verb,
		InitiatedBy:  d.InitiatedBy,
		InitiatedVia: d.InitiatedVia,
	}
	if i := d.InitiatedObject; i != nil {
		rec.InitiatedObject = &recordv1alpha1.ObjectReference{APIGroup: i.Group, Resource: i.Resource, Namespace: i.Namespace, Name: i.Name}
		if d.InitiatedAt != nil {
			at := metav1.NewMicroTime(*d.InitiatedAt)
			rec.InitiatedAt = &at
		}
	}
	if d.Actor != nil {
		rec.Actor = recordv1alpha1.Actor{Username: d.Actor.Username, Groups: d.Actor.Groups, ImpersonatedUser: d.Actor.ImpersonatedUser,
			ImpersonatedGroups: d.Actor.ImpersonatedGroups, SourceIPs: d.Actor.SourceIPs, UserAgent: d.Actor.UserAgent, AuditID: d.Actor.AuditID}
	}
	if d.StateKey != "" {
		rec.StateVersion = registry.ObjectName(d.UID, d.StateKey)
	}
	rec.StateUnknown = d.StateUnknown
	if withState && len(d.Object) > 0 {
		rec.LastState = &runtime.RawExtension{Raw: d.Object}
	}
	meta := metav1.ObjectMeta{Name: registry.ObjectName(d.UID, d.VersionKey), Namespace: d.Namespace,
		CreationTimestamp: metav1.NewTime(d.ChangedAt)}
	if s.namespaced {
		return &recordv1alpha1.Deletion{TypeMeta: metav1.TypeMeta{Kind: "Deletion", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
			ObjectMeta: meta, DeletionRecord: rec}
	}
	meta.Namespace = ""
	return &recordv1alpha1.ClusterDeletion{TypeMeta: metav1.TypeMeta{Kind: "ClusterDeletion", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: meta, DeletionRecord: rec}
}

// apiError turns an error of the history service into the Kubernetes
// status a client expects; internal errors say nothing of the database.
func (s *deletionStorage) apiError(err error, name string) error {
	return registry.StatusError(s.log, err, s.resource, name)
}

// deletionColumns lead with what a person reads first (the object, who,
// when); the short name ends the row, the long one is in -o wide.
var deletionColumns = []metav1.TableColumnDefinition{
	{Name: "Resource", Type: "string", Description: "Resource of the deleted object"},
	{Name: "Object", Type: "string", Description: "Name of the deleted object"},
	{Name: "User", Type: "string", Description: "Who deleted it (the authenticated caller; the garbage collector and the namespace controller as <garbage-collector> and <namespace-controller>, a name that begins with < quoted)"},
	{Name: "As", Type: "string", Description: "The identity the caller impersonated, if any"},
	{Name: "Deleted", Type: "string", Description: "How long ago"},
	{Name: "Initiated-By", Type: "string", Description: "The user whose namespace or owner deletion started this cascade"},
	{Name: "Name", Type: "string", Format: "name", Description: "Short name of the deletion (the object's name and the first digits of its version key): kubectl get deletion NAME and a Restore's spec.deletion take it"},
	{Name: "Verb", Type: "string", Description: "delete or deletecollection", Priority: 1},
	{Name: "Restorable", Type: "boolean", Description: "The record holds the object's last state", Priority: 1},
	{Name: "Audit-ID", Type: "string", Description: "Audit ID of the delete", Priority: 1},
	{Name: "Long-Name", Type: "string", Description: "<object uid>.<version key> of the delete: metadata.name", Priority: 1},
	{Name: "Deleter", Type: "string", Description: "The full user name of who deleted it (USER shows the garbage collector and the namespace controller as <garbage-collector> and <namespace-controller>)", Priority: 1},
}

func (*deletionStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: deletionColumns}
	add := func(o runtime.Object, r *recordv1alpha1.DeletionRecord, name string) {
		res := r.Object.Resource
		if r.Object.APIGroup != "" {
			res += "." + r.Object.APIGroup
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{registry.Cell(res), registry.Cell(r.Object.Name), escape.Deleter(r.Actor.Username), registry.Cell(r.Actor.ImpersonatedUser),
				duration.HumanDuration(time.Since(r.DeletedAt.Time)), registry.Cell(r.InitiatedBy), shortname.OfLong(r.Object.Name, name),
				registry.Cell(r.Verb), r.StateVersion != "", registry.Cell(r.Actor.AuditID), registry.Cell(name), registry.Cell(r.Actor.Username)},
			Object: runtime.RawExtension{Object: o},
		})
	}
	err := eachObject(obj, &table.ListMeta, func(o runtime.Object) error {
		switch o := o.(type) {
		case *recordv1alpha1.Deletion:
			add(o, &o.DeletionRecord, o.Name)
		case *recordv1alpha1.ClusterDeletion:
			add(o, &o.DeletionRecord, o.Name)
		default:
			return registry.ErrUnexpectedType(o)
		}
		return nil
	})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return table, nil
}
