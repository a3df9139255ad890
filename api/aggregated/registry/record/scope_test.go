package record

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestListNamespace: the namespace a list reads, from the request's scope
// and a metadata.namespace field selector (kubectl get deletions -A
// --field-selector metadata.namespace=prod reads prod only).
func TestListNamespace(t *testing.T) {
	ns := func(s string) *string { return &s }
	for _, tt := range []struct {
		name       string
		namespaced bool
		req, sel   string
		want       *string
		some       bool
	}{
		{"a namespace", true, "prod", "", ns("prod"), true},
		{"all namespaces", true, "", "", nil, true},
		{"all namespaces, one selected", true, "", "metadata.namespace=prod", ns("prod"), true},
		{"a namespace, the same selected", true, "prod", "metadata.namespace=prod", ns("prod"), true},
		{"a namespace, another selected", true, "prod", "metadata.namespace=dev", nil, false},
		{"all namespaces, the cluster scope selected", true, "", "metadata.namespace=", nil, false},
		{"cluster scope", false, "", "", ns(""), true},
		{"cluster scope, a namespace selected", false, "", "metadata.namespace=prod", nil, false},
		{"cluster scope, none selected", false, "", "metadata.namespace=", ns(""), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := recordScope{namespaced: tt.namespaced}
			ctx := genericapirequest.WithNamespace(context.Background(), tt.req)
			var sel fields.Selector
			if tt.sel != "" {
				var err error
				if sel, err = fields.ParseSelector(tt.sel); err != nil {
					t.Fatal(err)
				}
			}
			got, some := s.listNamespace(ctx, sel)
			if some != tt.some || (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("namespace %v (%v), want %v (%v)", deref(got), some, deref(tt.want), tt.some)
			}
		})
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
