package restores

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
)

func TestRestoreListsSelectByNameAndNamespaceOnly(t *testing.T) {
	for sel, ok := range map[string]bool{
		"":                                     true,
		"metadata.name=a":                      true,
		"metadata.namespace=n,metadata.name=a": true,
		"spec.plan=x":                          false,
		"metadata.name=a,status.phase=Done":    false,
	} {
		opts := &metainternalversion.ListOptions{}
		if sel != "" {
			fs, err := fields.ParseSelector(sel)
			if err != nil {
				t.Fatal(err)
			}
			opts.FieldSelector = fs
		}
		err := nameAndNamespaceOnly(opts, newPlanStorage(nil, nil, "c", true).resource)
		if (err == nil) != ok || err != nil && !apierrors.IsBadRequest(err) {
			t.Errorf("%q: %v, want accepted=%v (or a bad request)", sel, err, ok)
		}
	}
	if err := nameAndNamespaceOnly(nil, newPlanStorage(nil, nil, "c", true).resource); err != nil {
		t.Errorf("no options: %v", err)
	}
}
