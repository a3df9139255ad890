package aggregated

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// restoreStorage accepts restores. The prototype does not restore anything:
// it records the request and echoes the caller's identity into the status,
// which is what the end-to-end test checks.
type restoreStorage struct {
	mu    sync.Mutex
	items []*recordv1alpha1.Restore
}

var (
	_ rest.Creater              = (*restoreStorage)(nil)
	_ rest.Updater              = (*restoreStorage)(nil)
	_ rest.Getter               = (*restoreStorage)(nil)
	_ rest.Lister               = (*restoreStorage)(nil)
	_ rest.Scoper               = (*restoreStorage)(nil)
	_ rest.SingularNameProvider = (*restoreStorage)(nil)
)

func newRestoreStorage() *restoreStorage { return &restoreStorage{} }

func (*restoreStorage) New() runtime.Object     { return &recordv1alpha1.Restore{} }
func (*restoreStorage) NewList() runtime.Object { return &recordv1alpha1.RestoreList{} }
func (*restoreStorage) Destroy()                {}
func (*restoreStorage) NamespaceScoped() bool   { return true }
func (*restoreStorage) GetSingularName() string { return "restore" }

var restoreResource = recordv1alpha1.SchemeGroupVersion.WithResource("restores").GroupResource()

func (s *restoreStorage) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	r, ok := obj.(*recordv1alpha1.Restore)
	if !ok {
		return nil, apierrors.NewInternalError(errUnexpectedType(obj))
	}
	ns := genericapirequest.NamespaceValue(ctx)
	if r.Namespace == "" {
		r.Namespace = ns
	}
	if r.Name == "" && r.GenerateName != "" {
		r.Name = names.SimpleNameGenerator.GenerateName(r.GenerateName)
	}
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	if r.Spec.Deletion == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "deletion"), "the Deletion to restore"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(recordv1alpha1.SchemeGroupVersion.WithKind("Restore").GroupKind(), r.Name, errs)
	}
	if validate != nil {
		if err := validate(ctx, r); err != nil {
			return nil, err
		}
	}
	rest.FillObjectMetaSystemFields(r)
	r.ResourceVersion = "1"
	u, _ := genericapirequest.UserFrom(ctx)
	r.Status = recordv1alpha1.RestoreStatus{Phase: "Succeeded", Message: "prototype: nothing restored", RequestedBy: requester(u)}
	dryRun := slices.Contains(opts.DryRun, metav1.DryRunAll)
	if dryRun {
		r.Status.Phase, r.Status.Message = "DryRun", "dry run: nothing stored, nothing restored"
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.items {
		if e.Namespace == r.Namespace && e.Name == r.Name {
			return nil, apierrors.NewAlreadyExists(restoreResource, r.Name)
		}
	}
	if !dryRun {
		s.items = append(s.items, r.DeepCopy())
	}
	return r, nil
}

// Update refuses: a restore is immutable once created. It exists only so
// that the OpenAPI document has a PATCH operation for the kind: kubectl
// decides whether the server supports server-side field validation
// (fieldValidation) by looking for that parameter on the kind's PATCH
// operation; without one it falls back to asking whether the kind is a
// CRD, which needs "list customresourcedefinitions" at cluster scope, and
// `kubectl create -f` fails for every ordinary user.
func (*restoreStorage) Update(_ context.Context, name string, _ rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	_ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return nil, false, apierrors.NewMethodNotSupported(restoreResource, "update")
}

func requester(u user.Info) recordv1alpha1.Requester {
	if u == nil {
		return recordv1alpha1.Requester{}
	}
	return recordv1alpha1.Requester{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

func (s *restoreStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.items {
		if e.Namespace == ns && e.Name == name {
			return e.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(restoreResource, name)
}

func (s *restoreStorage) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	list := &recordv1alpha1.RestoreList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	for _, e := range s.items {
		if ns == "" || e.Namespace == ns {
			list.Items = append(list.Items, *e.DeepCopy())
		}
	}
	return list, nil
}

var restoreColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Deletion", Type: "string"},
	{Name: "Phase", Type: "string"},
	{Name: "Requested-By", Type: "string"},
	{Name: "Age", Type: "string"},
}

func (*restoreStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: restoreColumns}
	add := func(r *recordv1alpha1.Restore) {
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []any{r.Name, r.Spec.Deletion, r.Status.Phase, r.Status.RequestedBy.Username, duration.HumanDuration(time.Since(r.CreationTimestamp.Time))},
			Object: runtime.RawExtension{Object: r},
		})
	}
	switch o := obj.(type) {
	case *recordv1alpha1.Restore:
		add(o)
	case *recordv1alpha1.RestoreList:
		table.ListMeta = o.ListMeta
		for i := range o.Items {
			add(&o.Items[i])
		}
	default:
		return nil, apierrors.NewInternalError(errUnexpectedType(obj))
	}
	return table, nil
}

func errUnexpectedType(obj runtime.Object) error {
	return fmt.Errorf("unexpected object type %T", obj)
}
