package record

import (
	"context"
	"errors"
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
	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/shortname"
)

// changeStorage serves changes (namespaced objects) or cluster changes
// (cluster-scoped objects) from the record, through the history service:
// each caller sees only the changes of objects they may get. A get adds
// the state before the change, the diff and the clean manifest (the
// restore service's).
type changeStorage struct {
	recordScope
	restore *restore.Service
}

var (
	_ rest.Storage              = (*changeStorage)(nil)
	_ rest.Scoper               = (*changeStorage)(nil)
	_ rest.Getter               = (*changeStorage)(nil)
	_ rest.Lister               = (*changeStorage)(nil)
	_ rest.SingularNameProvider = (*changeStorage)(nil)
	_ rest.CategoriesProvider   = (*changeStorage)(nil)
)

func newChangeStorage(log *slog.Logger, hist *history.Service, rst *restore.Service, cluster string, namespaced bool) *changeStorage {
	return &changeStorage{recordScope: newRecordScope(log, hist, cluster, "changes", namespaced), restore: rst}
}

func (s *changeStorage) New() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.Change{}
	}
	return &recordv1alpha1.ClusterChange{}
}

func (s *changeStorage) NewList() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.ChangeList{}
	}
	return &recordv1alpha1.ClusterChangeList{}
}

func (s *changeStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	id, err := s.resolve(ctx, name, false)
	if err != nil {
		return nil, err
	}
	d, err := s.hist.ChangeDetail(ctx, id)
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, name)
	}
	v := history.VersionAsRead(d.Version)
	if !s.serves(ctx, v.Namespace) {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	obj := s.object(&v, true)
	var rec *recordv1alpha1.ChangeRecord
	switch o := obj.(type) {
	case *recordv1alpha1.Change:
		rec = &o.ChangeRecord
	case *recordv1alpha1.ClusterChange:
		rec = &o.ChangeRecord
	}
	if d.Prior != nil && len(d.Prior.Object) > 0 {
		rec.PriorState = &runtime.RawExtension{Raw: d.Prior.Object}
	}
	if d.Diff != nil {
		for _, c := range d.Diff.Changes {
			rec.Diff = append(rec.Diff, recordv1alpha1.FieldChange{Op: c.Op, Path: c.Path, From: registry.Raw(c.From), To: registry.Raw(c.To)})
		}
	}
	// The clean manifest, when the version can be restored (the restore
	// service says why not: no full state, Secret values as digests).
	if d.Version.HasState() {
		m, err := s.restore.Manifest(ctx, id)
		switch {
		case err == nil:
			rec.Manifest = registry.Raw(m.Manifest)
		case !errors.Is(err, errs.ErrUnprocessable):
			// The change itself was read: it is answered without the
			// manifest rather than not at all.
			s.log.Warn("a change's manifest could not be made", "change", name, "err", err)
		}
	}
	return obj, nil
}

func (s *changeStorage) fieldSelector(ctx context.Context, sel fields.Selector, now time.Time) (history.ChangeFilter, history.PageOptions, error) {
	var f history.ChangeFilter
	var p history.PageOptions
	if sel == nil || sel.Empty() {
		return f, p, nil
	}
	reqs, err := requirements(sel)
	if err != nil {
		return f, p, err
	}
	for _, r := range reqs {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return f, p, apierrors.NewBadRequest("field selector " + r.Field + string(r.Operator) + r.Value + ": only = is supported")
		}
		v := r.Value
		switch r.Field {
		case "metadata.namespace":
		case "metadata.name", "object.uid":
			uid := v
			if r.Field == "metadata.name" {
				id, err := s.resolveSelected(ctx, v, false)
				if err != nil {
					return f, p, err
				}
				uid = id.UID
			}
			f.UID = uid
		case "object.apiGroup":
			g := v
			f.Group = &g
		case "object.resource":
			f.Resource = v
		case "object.name":
			f.Name = v
		case "actor.username":
			f.User = v
		case "verb":
			f.Verb = v
		case "since", "until":
			t, err := history.ParseTime(r.Field, v, now)
			if err != nil {
				return f, p, apierrors.NewBadRequest(err.Error())
			}
			if r.Field == "since" {
				p.Since = t
			} else {
				p.Until = t
			}
		case "asOf":
			t, err := history.ParseTime(r.Field, v, now)
			if err != nil {
				return f, p, apierrors.NewBadRequest(err.Error())
			}
			f.AsOf = &t
		default:
			return f, p, apierrors.NewBadRequest("field label " + r.Field + " not supported for " + s.resource.Resource +
				" (supported: metadata.name, metadata.namespace, " + strings.Join(recordv1alpha1.ChangeSelectableFields, ", ") + ")")
		}
	}
	return f, p, nil
}

// List pages through the changes the caller may read, newest first, with
// the history service's sealed cursor as the continue token.
func (s *changeStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	opts, matches := listOptions(opts)
	f, p, err := s.fieldSelector(ctx, opts.FieldSelector, time.Now())
	if err != nil {
		return nil, err
	}
	list := s.NewList()
	if !matches {
		return list, nil
	}
	var some bool
	if f.Namespace, some = s.listNamespace(ctx, opts.FieldSelector); !some {
		return list, nil
	}
	f.NamespacedOnly = s.namespaced
	f.Cluster = s.cluster
	p.Limit, p.Continue = registry.ListLimit(opts), opts.Continue
	page, err := s.hist.Changes(ctx, f, p)
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, "")
	}
	items := make([]runtime.Object, 0, len(page.Items))
	for i := range page.Items {
		if s.namespaced && page.Items[i].Namespace == "" {
			continue // a cluster-scoped object's: see clusterchanges
		}
		items = append(items, s.object(&page.Items[i], false))
	}
	return fillList(list, items, page.Next)
}

// object converts a version of the record; withState carries its state (a
// get), a list leaves it out.
func (s *changeStorage) object(v *history.Version, withState bool) runtime.Object {
	rec := recordv1alpha1.ChangeRecord{
		Object: recordv1alpha1.ObjectReference{APIGroup: v.Group, APIVersion: v.APIVersion, Resource: v.Resource, Kind: v.Kind,
			Namespace: v.Namespace, Name: v.Name, UID: v.UID},
		ChangedAt: metav1.NewMicroTime(v.ChangedAt), Verb: v.Verb, Subresource: v.Subresource,
		ResourceVersion: v.ResourceVersion, Restorable: v.HasState && !v.SecretDigested,
		InitiatedBy: v.InitiatedBy, InitiatedVia: v.InitiatedVia,
	}
	if i := v.InitiatedObject; i != nil {
		rec.InitiatedObject = &recordv1alpha1.ObjectReference{APIGroup: i.Group, Resource: i.Resource, Namespace: i.Namespace, Name: i.Name}
	}
	if a := v.Actor; a != nil {
		rec.Actor = &recordv1alpha1.Actor{Username: a.Username, Groups: a.Groups, ImpersonatedUser: a.ImpersonatedUser,
			ImpersonatedGroups: a.ImpersonatedGroups, SourceIPs: a.SourceIPs, UserAgent: a.UserAgent, AuditID: a.AuditID}
	}
	if withState && len(v.Object) > 0 {
		rec.State = &runtime.RawExtension{Raw: v.Object}
	}
	meta := metav1.ObjectMeta{Name: registry.ObjectName(v.UID, v.VersionKey), Namespace: v.Namespace, CreationTimestamp: metav1.NewTime(v.ChangedAt)}
	if s.namespaced {
		return &recordv1alpha1.Change{TypeMeta: metav1.TypeMeta{Kind: "Change", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
			ObjectMeta: meta, ChangeRecord: rec}
	}
	meta.Namespace = ""
	return &recordv1alpha1.ClusterChange{TypeMeta: metav1.TypeMeta{Kind: "ClusterChange", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: meta, ChangeRecord: rec}
}

// changeColumns lead with what a person reads first (the object, who,
// when); the short name ends the row, the long one is in -o wide. USER
// names the cluster's controllers by their words (escape.Deleter, the
// rule of the deletions' table), so a cascade's delete fits 120 columns;
// -o wide adds Username, the full name.
var changeColumns = []metav1.TableColumnDefinition{
	{Name: "Resource", Type: "string", Description: "Resource of the object"},
	{Name: "Object", Type: "string", Description: "Name of the object"},
	{Name: "Verb", Type: "string", Description: "create, update, patch, delete, deletecollection or baseline"},
	{Name: "User", Type: "string", Description: "Who changed it (the authenticated caller; the garbage collector and the namespace controller as <garbage-collector> and <namespace-controller>, a name that begins with < quoted)"},
	{Name: "As", Type: "string", Description: "The identity the caller impersonated, if any"},
	{Name: "Changed", Type: "string", Description: "How long ago"},
	{Name: "Name", Type: "string", Format: "name", Description: "Short name of the change (the object's name and the first digits of its version key): kubectl get change NAME takes it"},
	{Name: "Initiated-By", Type: "string", Description: "For a cascade's delete: the user whose namespace or owner deletion started it", Priority: 1},
	{Name: "Subresource", Type: "string", Priority: 1},
	{Name: "Restorable", Type: "boolean", Description: "The record holds the full state of this version", Priority: 1},
	{Name: "Audit-ID", Type: "string", Priority: 1},
	{Name: "Long-Name", Type: "string", Description: "<object uid>.<version key>: metadata.name", Priority: 1},
	{Name: "Username", Type: "string", Description: "The full user name of who changed it (USER shows the garbage collector and the namespace controller as <garbage-collector> and <namespace-controller>)", Priority: 1},
}

func (*changeStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: changeColumns}
	add := func(o runtime.Object, r *recordv1alpha1.ChangeRecord, name string) {
		res := r.Object.Resource
		if r.Object.APIGroup != "" {
			res += "." + r.Object.APIGroup
		}
		var user, as, audit string
		if r.Actor != nil {
			user, as, audit = r.Actor.Username, r.Actor.ImpersonatedUser, r.Actor.AuditID
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{registry.Cell(res), registry.Cell(r.Object.Name), registry.Cell(r.Verb), escape.Deleter(user), registry.Cell(as), duration.HumanDuration(time.Since(r.ChangedAt.Time)),
				shortname.OfLong(r.Object.Name, name),
				registry.Cell(r.InitiatedBy), registry.Cell(r.Subresource), r.Restorable, registry.Cell(audit), registry.Cell(name), registry.Cell(user)},
			Object: runtime.RawExtension{Object: o},
		})
	}
	err := eachObject(obj, &table.ListMeta, func(o runtime.Object) error {
		switch o := o.(type) {
		case *recordv1alpha1.Change:
			add(o, &o.ChangeRecord, o.Name)
		case *recordv1alpha1.ClusterChange:
			add(o, &o.ChangeRecord, o.Name)
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
