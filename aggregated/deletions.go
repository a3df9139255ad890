package aggregated

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// deletionStorage serves deletions from a fixed slice (the prototype's
// stand-in for the query layer).
type deletionStorage struct {
	items []recordv1alpha1.Deletion
}

var (
	_ rest.Storage              = (*deletionStorage)(nil)
	_ rest.Scoper               = (*deletionStorage)(nil)
	_ rest.Getter               = (*deletionStorage)(nil)
	_ rest.Lister               = (*deletionStorage)(nil)
	_ rest.SingularNameProvider = (*deletionStorage)(nil)
	_ rest.CategoriesProvider   = (*deletionStorage)(nil)
)

func newDeletionStorage(items []recordv1alpha1.Deletion) *deletionStorage {
	return &deletionStorage{items: items}
}

func (*deletionStorage) New() runtime.Object     { return &recordv1alpha1.Deletion{} }
func (*deletionStorage) NewList() runtime.Object { return &recordv1alpha1.DeletionList{} }
func (*deletionStorage) Destroy()                {}
func (*deletionStorage) NamespaceScoped() bool   { return true }
func (*deletionStorage) GetSingularName() string { return "deletion" }
func (*deletionStorage) Categories() []string    { return []string{"optionsrecord"} }

func (s *deletionStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	for i := range s.items {
		if d := &s.items[i]; d.Namespace == ns && d.Name == name {
			return d.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(recordv1alpha1.SchemeGroupVersion.WithResource("deletions").GroupResource(), name)
}

// deletionFields is what field selectors match on.
func deletionFields(d *recordv1alpha1.Deletion) fields.Set {
	return fields.Set{
		"metadata.name":      d.Name,
		"metadata.namespace": d.Namespace,
		"spec.user":          d.Spec.User,
		"spec.resource":      d.Spec.Resource,
		"spec.name":          d.Spec.Name,
	}
}

// List filters by namespace, label and field selectors, then pages: the
// continue token is the (base64) offset into the filtered sequence, which
// is stable here because the slice never changes.
func (s *deletionStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	ns := genericapirequest.NamespaceValue(ctx)
	label, field := labels.Everything(), fields.Everything()
	var limit int64
	var cont string
	if opts != nil {
		if opts.LabelSelector != nil {
			label = opts.LabelSelector
		}
		if opts.FieldSelector != nil {
			field = opts.FieldSelector
		}
		limit, cont = opts.Limit, opts.Continue
	}
	offset := 0
	if cont != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cont)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(raw), "o:"))
		if err != nil || err2 != nil || n < 0 || !strings.HasPrefix(string(raw), "o:") {
			return nil, apierrors.NewBadRequest("invalid continue token")
		}
		offset = n
	}
	list := &recordv1alpha1.DeletionList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	seen := 0
	for i := range s.items {
		d := &s.items[i]
		if ns != "" && d.Namespace != ns {
			continue
		}
		if !label.Matches(labels.Set(d.Labels)) || !field.Matches(deletionFields(d)) {
			continue
		}
		seen++
		if seen <= offset {
			continue
		}
		if limit > 0 && int64(len(list.Items)) == limit {
			// One more matches: hand out a token for the next page.
			list.Continue = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(offset+int(limit))))
			rest := int64(0)
			for j := i; j < len(s.items); j++ {
				e := &s.items[j]
				if (ns == "" || e.Namespace == ns) && label.Matches(labels.Set(e.Labels)) && field.Matches(deletionFields(e)) {
					rest++
				}
			}
			list.RemainingItemCount = &rest
			break
		}
		list.Items = append(list.Items, *d.DeepCopy())
	}
	return list, nil
}

var deletionColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the deletion record"},
	{Name: "Resource", Type: "string", Description: "Resource of the deleted object"},
	{Name: "Object", Type: "string", Description: "Name of the deleted object"},
	{Name: "User", Type: "string", Description: "Who deleted it"},
	{Name: "As", Type: "string", Description: "Impersonated user, if any", Priority: 1},
	{Name: "Deleted", Type: "string", Description: "How long ago"},
	{Name: "Audit-ID", Type: "string", Description: "Audit ID of the delete", Priority: 1},
}

func (*deletionStorage) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: deletionColumns}
	add := func(d *recordv1alpha1.Deletion) {
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{d.Name, d.Spec.Resource, d.Spec.Name, d.Spec.User, d.Spec.ImpersonatedUser,
				duration.HumanDuration(time.Since(d.Spec.Time.Time)), d.Spec.AuditID},
			Object: runtime.RawExtension{Object: d},
		})
	}
	switch o := obj.(type) {
	case *recordv1alpha1.Deletion:
		add(o)
	case *recordv1alpha1.DeletionList:
		table.ListMeta = o.ListMeta
		for i := range o.Items {
			add(&o.Items[i])
		}
	default:
		return nil, apierrors.NewInternalError(errUnexpectedType(obj))
	}
	return table, nil
}
