package aggregated

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

func deletion(ns, name, user, resource string) recordv1alpha1.Deletion {
	return recordv1alpha1.Deletion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       recordv1alpha1.DeletionSpec{Time: metav1.NewTime(time.Now()), User: user, Resource: resource, Name: name},
	}
}

func listNames(t *testing.T, obj any) []string {
	t.Helper()
	var out []string
	for _, d := range obj.(*recordv1alpha1.DeletionList).Items {
		out = append(out, d.Name)
	}
	return out
}

func TestDeletionListFiltersAndPages(t *testing.T) {
	s := newDeletionStorage([]recordv1alpha1.Deletion{
		deletion("shop", "a", "bob", "configmaps"),
		deletion("shop", "b", "bob", "secrets"),
		deletion("other", "c", "bob", "configmaps"),
		deletion("shop", "d", "eve", "configmaps"),
		deletion("shop", "e", "bob", "configmaps"),
	})
	ctx := genericapirequest.WithNamespace(context.Background(), "shop")
	sel := fields.SelectorFromSet(fields.Set{"spec.user": "bob", "spec.resource": "configmaps"})

	got, err := s.List(ctx, &metainternalversion.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "e"}, listNames(t, got)); diff != "" {
		t.Errorf("field selector (-want +got):\n%s", diff)
	}

	var all []string
	cont := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		got, err := s.List(ctx, &metainternalversion.ListOptions{Limit: 1, Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, listNames(t, got)...)
		if cont = got.(*recordv1alpha1.DeletionList).Continue; cont == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "d", "e"}, all); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if _, err := s.List(ctx, &metainternalversion.ListOptions{Continue: "garbage"}); err == nil {
		t.Error("a bad continue token was accepted")
	}

	table, err := s.ConvertToTable(ctx, got, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 2 || table.Rows[0].Cells[3] != "bob" {
		t.Errorf("table rows: %+v", table.Rows)
	}
}
