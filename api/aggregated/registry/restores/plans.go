package restores

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/errs"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore"
)

// planStorage makes restore plans through the restore service when they are
// created (nothing is written to the cluster), and reads the caller's own
// back; a Restore naming a plan executes it.
type planStorage struct {
	log        *slog.Logger
	svc        *restore.Service
	cluster    string
	namespaced bool
	resource   schema.GroupResource
	kind       schema.GroupKind
}

// newPlanStorage serves restoreplans, or (not namespaced)
// clusterrestoreplans: plans of cluster-scoped objects.
func newPlanStorage(log *slog.Logger, svc *restore.Service, cluster string, namespaced bool) *planStorage {
	res, kind := "clusterrestoreplans", "ClusterRestorePlan"
	if namespaced {
		res, kind = "restoreplans", "RestorePlan"
	}
	return &planStorage{log: log, svc: svc, cluster: cluster, namespaced: namespaced,
		resource: recordv1alpha1.SchemeGroupVersion.WithResource(res).GroupResource(),
		kind:     recordv1alpha1.SchemeGroupVersion.WithKind(kind).GroupKind()}
}

var (
	_ rest.Creater              = (*planStorage)(nil)
	_ rest.Updater              = (*planStorage)(nil)
	_ rest.Getter               = (*planStorage)(nil)
	_ rest.Lister               = (*planStorage)(nil)
	_ rest.Scoper               = (*planStorage)(nil)
	_ rest.SingularNameProvider = (*planStorage)(nil)
	_ rest.CategoriesProvider   = (*planStorage)(nil)
)

func (s *planStorage) New() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.RestorePlan{}
	}
	return &recordv1alpha1.ClusterRestorePlan{}
}

func (s *planStorage) NewList() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.RestorePlanList{}
	}
	return &recordv1alpha1.ClusterRestorePlanList{}
}

func (*planStorage) Destroy()                  {}
func (s *planStorage) NamespaceScoped() bool   { return s.namespaced }
func (s *planStorage) GetSingularName() string { return strings.TrimSuffix(s.resource.Resource, "s") }
func (*planStorage) Categories() []string      { return []string{"optionsrecord"} }

// asPlan is the RestorePlan a request's object stands for (a
// ClusterRestorePlan is one without a namespace).
func asPlan(obj runtime.Object) (*recordv1alpha1.RestorePlan, bool) {
	switch o := obj.(type) {
	case *recordv1alpha1.RestorePlan:
		return o, true
	case *recordv1alpha1.ClusterRestorePlan:
		return &recordv1alpha1.RestorePlan{ObjectMeta: o.ObjectMeta, Spec: o.Spec, Status: o.Status}, true
	}
	return nil, false
}

// out is pl as this storage's kind.
func (s *planStorage) out(pl *recordv1alpha1.RestorePlan) runtime.Object {
	if s.namespaced {
		return pl
	}
	meta := pl.ObjectMeta
	meta.Namespace = ""
	return &recordv1alpha1.ClusterRestorePlan{TypeMeta: metav1.TypeMeta{Kind: "ClusterRestorePlan", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: meta, Spec: pl.Spec, Status: pl.Status}
}

// Create plans, in the plan's namespace, what the caller may read; with
// --dry-run=server it answers the plan without keeping it.
func (s *planStorage) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	pl, ok := asPlan(obj)
	if !ok {
		return nil, apierrors.NewInternalError(registry.ErrUnexpectedType(obj))
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if pl.Namespace == "" || !s.namespaced {
		pl.Namespace = ns
	}
	if pl.Name == "" && pl.GenerateName != "" {
		pl.Name = names.SimpleNameGenerator.GenerateName(pl.GenerateName)
	}
	if errs := validateMeta(&pl.ObjectMeta, s.namespaced); len(errs) > 0 {
		return nil, apierrors.NewInvalid(s.kind, pl.Name, errs)
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	sp := pl.Spec
	req := restore.PlanRequest{Kind: sp.Kind, Namespaces: []string{pl.Namespace}, User: sp.User, Names: sp.Names,
		At: timeOf(sp.At), Since: timeOf(sp.Since), Until: timeOf(sp.Until),
		Record: &restore.RecordName{Namespace: pl.Namespace, Name: pl.Name}, Preview: slices.Contains(opts.DryRun, metav1.DryRunAll)}
	for _, r := range sp.Resources {
		req.Resources = append(req.Resources, restore.GroupResource{Group: r.Group, Resource: r.Resource})
	}
	p, err := s.svc.CreatePlan(ctx, s.cluster, req)
	if errors.Is(err, errs.ErrExists) {
		return nil, apierrors.NewAlreadyExists(s.resource, pl.Name)
	}
	if errors.Is(err, errs.ErrInvalid) {
		return nil, apierrors.NewInvalid(s.kind, pl.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec"), pl.Spec, err.Error())})
	}
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, pl.Name)
	}
	out := planOf(p)
	out.Spec = pl.Spec
	out.Namespace, out.Name = pl.Namespace, pl.Name
	return s.out(out), nil
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}

// Update refuses (see restoreStorage.Update: it gives kubectl a PATCH
// operation to find).
func (s *planStorage) Update(_ context.Context, _ string, _ rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	_ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, apierrors.NewMethodNotSupported(s.resource, "update")
}

func (s *planStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	p, err := s.svc.Named(ctx, genericapirequest.NamespaceValue(ctx), name)
	if err == nil && (p.Kind == restore.KindVersion || p.PlanID != "") {
		err = errs.ErrNotFound // a restore: see restores
	}
	if errors.Is(err, errs.ErrNotFound) {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, name)
	}
	return s.out(planOf(p)), nil
}

// List lists the caller's own plans, newest first.
func (s *planStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	list := s.NewList()
	if err := nameAndNamespaceOnly(opts, s.resource); err != nil {
		return nil, err
	}
	if opts != nil && opts.LabelSelector != nil && !opts.LabelSelector.Matches(labels.Set{}) {
		return list, nil
	}
	ps, next, err := s.svc.NamedList(ctx, namedListOptions(ctx, opts, s.namespaced, false))
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, "")
	}
	registry.SetContinue(list, next)
	for _, p := range ps {
		pl := planOf(p)
		if opts != nil && opts.FieldSelector != nil && !opts.FieldSelector.Matches(fields.Set{"metadata.name": pl.Name, "metadata.namespace": pl.Namespace}) {
			continue
		}
		switch l := list.(type) {
		case *recordv1alpha1.RestorePlanList:
			l.Items = append(l.Items, *pl)
		case *recordv1alpha1.ClusterRestorePlanList:
			l.Items = append(l.Items, *s.out(pl).(*recordv1alpha1.ClusterRestorePlan))
		}
	}
	return list, nil
}

// planOf reads a plan of the restore service as an object.
func planOf(p *restore.Plan) *recordv1alpha1.RestorePlan {
	out := &recordv1alpha1.RestorePlan{
		TypeMeta:   metav1.TypeMeta{Kind: "RestorePlan", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(p.ID), CreationTimestamp: metav1.NewTime(p.CreatedAt), ResourceVersion: "1"},
		Spec: recordv1alpha1.RestorePlanSpec{Kind: p.Request.Kind, User: p.Request.User, Names: p.Request.Names,
			At: metaTime(p.Request.At), Since: metaTime(p.Request.Since), Until: metaTime(p.Request.Until)},
		Status: recordv1alpha1.RestorePlanStatus{State: phaseOf(p.State), RestoreID: p.ID, PlanDigest: p.Digest, Summary: map[string]int32{}},
	}
	if p.Record != nil {
		out.Namespace, out.Name = p.Record.Namespace, p.Record.Name
	}
	for _, r := range p.Request.Resources {
		out.Spec.Resources = append(out.Spec.Resources, recordv1alpha1.GroupResource{Group: r.Group, Resource: r.Resource})
	}
	for a, n := range p.Summary {
		out.Status.Summary[a] = int32(n)
	}
	for _, st := range p.Steps {
		ps := recordv1alpha1.PlanStep{Index: int32(st.Index), Action: st.Action, Object: objectRef(st.Object), Reason: st.Reason}
		if st.Source != nil {
			ps.Version = registry.ObjectName(st.Source.UID, st.Source.VersionKey)
		}
		for _, o := range p.Outcome {
			if o.Index == st.Index {
				ps.Result, ps.Message = o.Result, o.Message
			}
		}
		out.Status.Steps = append(out.Status.Steps, ps)
	}
	return out
}

func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	v := metav1.NewTime(*t)
	return &v
}

var planColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Kind", Type: "string", Description: "as-of or undo"},
	{Name: "State", Type: "string", Description: "Planned, Running, Succeeded, Partial or Failed"},
	{Name: "Steps", Type: "integer"},
	{Name: "Create", Type: "integer", Description: "Steps that create an object"},
	{Name: "Update", Type: "integer", Description: "Steps that update an object"},
	{Name: "Delete", Type: "integer", Description: "Steps that delete an object"},
	{Name: "Age", Type: "string"},
}

func (*planStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: planColumns}
	add := func(o runtime.Object, p *recordv1alpha1.RestorePlan) {
		sm := p.Status.Summary
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{registry.Cell(p.Name), registry.Cell(p.Spec.Kind), p.Status.State, len(p.Status.Steps), sm[restore.ActionCreate], sm[restore.ActionUpdate],
				sm[restore.ActionDelete], duration.HumanDuration(time.Since(p.CreationTimestamp.Time))},
			Object: runtime.RawExtension{Object: o},
		})
	}
	switch o := obj.(type) {
	case *recordv1alpha1.RestorePlan:
		add(o, o)
	case *recordv1alpha1.ClusterRestorePlan:
		p, _ := asPlan(o)
		add(o, p)
	case *recordv1alpha1.RestorePlanList:
		table.ListMeta = o.ListMeta
		for i := range o.Items {
			add(&o.Items[i], &o.Items[i])
		}
	case *recordv1alpha1.ClusterRestorePlanList:
		table.ListMeta = o.ListMeta
		for i := range o.Items {
			p, _ := asPlan(&o.Items[i])
			add(&o.Items[i], p)
		}
	default:
		return nil, apierrors.NewInternalError(registry.ErrUnexpectedType(obj))
	}
	return table, nil
}
