package restores

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/options-record/options-record/api/aggregated/registry"
	"github.com/options-record/options-record/api/errs"
	"github.com/options-record/options-record/api/history"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/shortname"
)

// restoreStorage runs restores (or, not namespaced, cluster restores: of
// cluster-scoped objects) through the restore service when they are
// created, and reads the caller's own back from the restores table.
type restoreStorage struct {
	log        *slog.Logger
	hist       *history.Service
	svc        *restore.Service
	cluster    string
	namespaced bool
	resource   schema.GroupResource
	kind       schema.GroupKind
}

func newRestoreStorage(log *slog.Logger, hist *history.Service, svc *restore.Service, cluster string, namespaced bool) *restoreStorage {
	res, kind := "clusterrestores", "ClusterRestore"
	if namespaced {
		res, kind = "restores", "Restore"
	}
	return &restoreStorage{log: log, hist: hist, svc: svc, cluster: cluster, namespaced: namespaced,
		resource: recordv1alpha1.SchemeGroupVersion.WithResource(res).GroupResource(),
		kind:     recordv1alpha1.SchemeGroupVersion.WithKind(kind).GroupKind()}
}

var (
	_ rest.Creater              = (*restoreStorage)(nil)
	_ rest.Updater              = (*restoreStorage)(nil)
	_ rest.Getter               = (*restoreStorage)(nil)
	_ rest.Lister               = (*restoreStorage)(nil)
	_ rest.Scoper               = (*restoreStorage)(nil)
	_ rest.SingularNameProvider = (*restoreStorage)(nil)
	_ rest.CategoriesProvider   = (*restoreStorage)(nil)
)

func (s *restoreStorage) New() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.Restore{}
	}
	return &recordv1alpha1.ClusterRestore{}
}

func (s *restoreStorage) NewList() runtime.Object {
	if s.namespaced {
		return &recordv1alpha1.RestoreList{}
	}
	return &recordv1alpha1.ClusterRestoreList{}
}

func (*restoreStorage) Destroy()                {}
func (s *restoreStorage) NamespaceScoped() bool { return s.namespaced }
func (s *restoreStorage) GetSingularName() string {
	return strings.TrimSuffix(s.resource.Resource, "s")
}
func (*restoreStorage) Categories() []string { return []string{"optionsrecord"} }

// asRestore is the Restore a request's object stands for (a ClusterRestore
// is one without a namespace).
func asRestore(obj runtime.Object) (*recordv1alpha1.Restore, bool) {
	switch o := obj.(type) {
	case *recordv1alpha1.Restore:
		return o, true
	case *recordv1alpha1.ClusterRestore:
		return &recordv1alpha1.Restore{ObjectMeta: o.ObjectMeta, Spec: o.Spec, Status: o.Status}, true
	}
	return nil, false
}

// out is r as this storage's kind.
func (s *restoreStorage) out(r *recordv1alpha1.Restore) runtime.Object {
	if s.namespaced {
		return r
	}
	meta := r.ObjectMeta
	meta.Namespace = ""
	return &recordv1alpha1.ClusterRestore{TypeMeta: metav1.TypeMeta{Kind: "ClusterRestore", APIVersion: recordv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: meta, Spec: r.Spec, Status: r.Status}
}

// Create validates the restore, runs it as the caller and answers it with
// its outcome. A refused or failed restore is still created (its status
// says why): the restores table records it. Errors are answered only for
// what stops it before anything is recorded (an invalid spec, a version
// the caller may not read, a name taken).
func (s *restoreStorage) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	r, ok := asRestore(obj)
	if !ok {
		return nil, apierrors.NewInternalError(registry.ErrUnexpectedType(obj))
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if r.Namespace == "" || !s.namespaced {
		r.Namespace = ns
	}
	if r.Name == "" && r.GenerateName != "" {
		r.Name = names.SimpleNameGenerator.GenerateName(r.GenerateName)
	}
	invalids := validateMeta(&r.ObjectMeta, s.namespaced)
	spec := field.NewPath("spec")
	given := 0
	for _, v := range []string{r.Spec.Version, r.Spec.Deletion, r.Spec.Plan} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		invalids = append(invalids, field.Invalid(spec, r.Spec, "give exactly one of version, deletion and plan"))
	}
	if r.Spec.Plan != "" && r.Spec.StateDigest != "" {
		invalids = append(invalids, field.Forbidden(spec.Child("stateDigest"), "pins a version or a deletion: a plan is pinned by planDigest"))
	}
	if r.Spec.Plan == "" && r.Spec.PlanDigest != "" {
		invalids = append(invalids, field.Forbidden(spec.Child("planDigest"), "pins a plan: a version or a deletion is pinned by stateDigest"))
	}
	if len(invalids) > 0 {
		return nil, apierrors.NewInvalid(s.kind, r.Name, invalids)
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	dryRun := slices.Contains(opts.DryRun, metav1.DryRunAll)
	if r.Spec.Plan != "" {
		return s.execute(ctx, r, ns, dryRun)
	}
	id, err := s.source(ctx, r, ns)
	if err != nil {
		return nil, err
	}
	res, err := s.svc.RestoreVersion(ctx, id, restore.RestoreRequest{ExpectedResourceVersion: r.Spec.ExpectedResourceVersion,
		Force: r.Spec.Force, DryRun: dryRun, StateDigest: r.Spec.StateDigest, Record: &restore.RecordName{Namespace: r.Namespace, Name: r.Name}})
	if res == nil || res.RestoreID == "" {
		if errors.Is(err, errs.ErrExists) {
			return nil, apierrors.NewAlreadyExists(s.resource, r.Name)
		}
		return nil, registry.StatusError(s.log, err, s.resource, r.Name)
	}
	out := r.DeepCopy()
	out.UID = types.UID(res.RestoreID)
	out.CreationTimestamp = metav1.NewTime(time.Now())
	out.ResourceVersion = "1"
	out.Spec.Version = registry.ObjectName(res.Source.UID, res.Source.VersionKey)
	u := history.Caller(ctx)
	out.Status = recordv1alpha1.RestoreStatus{Phase: "Succeeded", DryRun: dryRun, Action: res.Action, RestoreID: res.RestoreID,
		CreatedBy: u.GetName(), Object: sourceRef(&res.Source), StateDigest: res.StateDigest}
	if err != nil {
		out.Status.Phase = "Failed"
		out.Status.Code, out.Status.Message = registry.StatusMessage(s.log, err)
		if errors.Is(err, errs.ErrConflict) || errors.Is(err, errs.ErrUnprocessable) {
			out.Status.Phase = "Refused"
		}
	}
	var live metav1.PartialObjectMetadata
	if len(res.Object) > 0 && json.Unmarshal(res.Object, &live) == nil {
		out.Status.Object.UID, out.Status.ResourceVersion = string(live.UID), live.ResourceVersion
	}
	secret := res.Source.Group == "" && res.Source.Resource == "secrets"
	for _, c := range res.Changes {
		fc := recordv1alpha1.FieldChange{Op: c.Op, Path: c.Path, From: registry.Raw(c.From), To: registry.Raw(c.To)}
		if secret {
			fc = secretChange(fc, c.From, c.To)
		}
		out.Status.Changes = append(out.Status.Changes, fc)
	}
	for _, d := range res.DroppedOwners {
		out.Status.DroppedOwnerReferences = append(out.Status.DroppedOwnerReferences, recordv1alpha1.DroppedOwner(d))
	}
	return s.out(out), nil
}

// execute runs a plan of the creator's for a Restore naming it.
func (s *restoreStorage) execute(ctx context.Context, r *recordv1alpha1.Restore, ns string, dryRun bool) (runtime.Object, error) {
	plan, err := s.svc.Named(ctx, ns, r.Spec.Plan)
	if err == nil && (plan.Kind == restore.KindVersion || plan.PlanID != "") {
		err = errs.ErrNotFound // a restore, not a plan
	}
	if errors.Is(err, errs.ErrNotFound) {
		return nil, apierrors.NewInvalid(s.kind, r.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "plan"), r.Spec.Plan, "no "+planKind(s.namespaced)+" of yours by this name"+where(s.namespaced))})
	}
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, r.Name)
	}
	if !dryRun && r.Spec.PlanDigest == "" {
		return nil, apierrors.NewInvalid(s.kind, r.Name, field.ErrorList{field.Required(field.NewPath("spec", "planDigest"),
			"the digest of the plan you reviewed (status.planDigest of the "+planKind(s.namespaced)+" or of a dry run of this Restore) is required to execute it")})
	}
	p, err := s.svc.ExecutePlan(ctx, s.cluster, plan.ID, restore.ExecuteRequest{Force: r.Spec.Force, DryRun: dryRun,
		Digest: r.Spec.PlanDigest, Record: &restore.RecordName{Namespace: r.Namespace, Name: r.Name}})
	if p == nil {
		if errors.Is(err, errs.ErrExists) {
			return nil, apierrors.NewAlreadyExists(s.resource, r.Name)
		}
		return nil, registry.StatusError(s.log, err, s.resource, r.Name)
	}
	out := restoreOf(p)
	out.Spec = r.Spec
	if err != nil {
		_, out.Status.Message = registry.StatusMessage(s.log, err)
	}
	return s.out(out), nil
}

// planKind is the kind of plan a restore (namespaced) or cluster restore
// executes.
func planKind(namespaced bool) string {
	if namespaced {
		return "RestorePlan"
	}
	return "ClusterRestorePlan"
}

func where(namespaced bool) string {
	if namespaced {
		return " in this namespace"
	}
	return ""
}

// source is the version a restore puts back: spec.version, or the state
// before spec.deletion. Either must be an object of the restore's namespace
// (of a cluster restore: a cluster-scoped object).
func (s *restoreStorage) source(ctx context.Context, r *recordv1alpha1.Restore, ns string) (history.VersionID, error) {
	where := "in this namespace"
	if !s.namespaced {
		where = "of a cluster-scoped object"
	}
	invalid := func(path, value, why string) error {
		return apierrors.NewInvalid(s.kind, r.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", path), value, why)})
	}
	if r.Spec.Deletion != "" {
		did, err := s.hist.ResolveVersion(ctx, s.cluster, r.Spec.Deletion, history.NameScope{Namespace: &ns, Deletions: true})
		if err == nil {
			var d *history.Deletion
			if d, err = s.hist.Deletion(ctx, did); err == nil && d.Namespace != ns {
				err = errs.ErrNotFound
			}
			if err == nil && d.StateKey == "" {
				return did, invalid("deletion", r.Spec.Deletion, "the record holds no state from before this deletion")
			}
			if err == nil {
				return registry.ParseRecordName(s.cluster, registry.ObjectName(d.UID, d.StateKey))
			}
		}
		return did, s.nameError(err, "deletion", r.Spec.Deletion, where, r.Name, invalid)
	}
	id, err := s.hist.ResolveVersion(ctx, s.cluster, r.Spec.Version, history.NameScope{Namespace: &ns})
	if err == nil {
		var v *history.Version
		if v, err = s.hist.Version(ctx, id); err == nil && v.Namespace != ns {
			err = errs.ErrNotFound
		}
	}
	if err != nil {
		return id, s.nameError(err, "version", r.Spec.Version, where, r.Name, invalid)
	}
	return id, nil
}

// nameError is the answer to a spec.version or spec.deletion that names
// nothing the caller may read here (or is not a name), or names several.
func (s *restoreStorage) nameError(err error, path, value, where, name string, invalid func(path, value, why string) error) error {
	switch {
	case errors.Is(err, shortname.ErrNotAName):
		return invalid(path, value, "not the name of a "+path+" (<uid>.<version key>, or a short name such as app-config-3f9a2c1b)")
	case errors.Is(err, errs.ErrNotFound):
		return invalid(path, value, "no such "+path+" "+where+" that you may read")
	case errors.Is(err, errs.ErrInvalid):
		return invalid(path, value, err.Error())
	}
	return registry.StatusError(s.log, err, s.resource, name)
}

// Update refuses: a restore is immutable once created. It exists so that
// the OpenAPI document has a PATCH operation for the kind: kubectl decides
// whether the server supports server-side field validation by looking for
// that parameter on the kind's PATCH operation, and without one it asks
// whether the kind is a CRD, which needs "list customresourcedefinitions"
// at cluster scope: kubectl create -f would fail for every ordinary user.
func (s *restoreStorage) Update(_ context.Context, _ string, _ rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	_ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, apierrors.NewMethodNotSupported(s.resource, "update")
}

func (s *restoreStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	p, err := s.svc.Named(ctx, genericapirequest.NamespaceValue(ctx), name)
	if err == nil && p.Kind != restore.KindVersion && p.PlanID == "" {
		err = errs.ErrNotFound // a plan: see restoreplans
	}
	if errors.Is(err, errs.ErrNotFound) {
		return nil, apierrors.NewNotFound(s.resource, name)
	}
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, name)
	}
	r := restoreOf(p)
	if p.PlanID != "" {
		if plan, err := s.svc.Plan(ctx, s.cluster, p.PlanID); err == nil && plan.Record != nil {
			r.Spec.Plan = plan.Record.Name
		}
	}
	return s.out(r), nil
}

// List lists the caller's own restores, newest first (at most
// history.MaxLimit; no paging).
func (s *restoreStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	list := s.NewList()
	if err := nameAndNamespaceOnly(opts, s.resource); err != nil {
		return nil, err
	}
	if opts != nil && opts.LabelSelector != nil && !opts.LabelSelector.Matches(labels.Set{}) {
		return list, nil
	}
	ps, next, err := s.svc.NamedList(ctx, namedListOptions(ctx, opts, s.namespaced, true))
	if err != nil {
		return nil, registry.StatusError(s.log, err, s.resource, "")
	}
	registry.SetContinue(list, next)
	for _, p := range ps {
		r := restoreOf(p)
		if opts != nil && opts.FieldSelector != nil && !opts.FieldSelector.Matches(fields.Set{"metadata.name": r.Name, "metadata.namespace": r.Namespace}) {
			continue
		}
		switch l := list.(type) {
		case *recordv1alpha1.RestoreList:
			l.Items = append(l.Items, *r)
		case *recordv1alpha1.ClusterRestoreList:
			l.Items = append(l.Items, *s.out(r).(*recordv1alpha1.ClusterRestore))
		}
	}
	return list, nil
}

// nameAndNamespaceOnly refuses a field selector on other fields than
// metadata.name and metadata.namespace, the only ones of restores and
// plans.
func nameAndNamespaceOnly(opts *metainternalversion.ListOptions, res schema.GroupResource) error {
	if opts == nil || opts.FieldSelector == nil || opts.FieldSelector.Empty() {
		return nil
	}
	for _, r := range opts.FieldSelector.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return apierrors.NewBadRequest("field label " + r.Field + " not supported for " + res.Resource +
				" (supported: metadata.name, metadata.namespace)")
		}
	}
	return nil
}

// maxRestoresPage bounds a page of restores or plans: each carries its
// steps (up to --api-max-plan-objects), so pages are fewer than other
// lists' and continue with limit/continue.
const maxRestoresPage = 50

// namedListOptions is the page of restores (or plans) a list asks for: in
// its namespace, or every namespace but the cluster scope (-A), or the
// cluster scope (a cluster-scoped resource).
func namedListOptions(ctx context.Context, opts *metainternalversion.ListOptions, namespaced, restores bool) restore.NamedListOptions {
	o := restore.NamedListOptions{Namespaced: namespaced, Restores: restores, Limit: maxRestoresPage}
	if ns := genericapirequest.NamespaceValue(ctx); ns != "" || !namespaced {
		o.Namespace = &ns
	}
	if opts != nil {
		o.Limit = min(registry.ListLimit(opts), maxRestoresPage)
		o.Continue = opts.Continue
	}
	return o
}
