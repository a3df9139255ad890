package restores

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateMeta(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta metav1.ObjectMeta
		ok   bool
	}{
		{"a name", metav1.ObjectMeta{Name: "bring-back", Namespace: "prod"}, true},
		{"no name", metav1.ObjectMeta{Namespace: "prod"}, false},
		{"a name too long", metav1.ObjectMeta{Name: strings.Repeat("a", 254), Namespace: "prod"}, false},
		{"a name with a slash", metav1.ObjectMeta{Name: "a/b", Namespace: "prod"}, false},
		{"an upper-case name", metav1.ObjectMeta{Name: "Back", Namespace: "prod"}, false},
		{"a bad label", metav1.ObjectMeta{Name: "x", Namespace: "prod", Labels: map[string]string{"a": strings.Repeat("v", 64)}}, false},
		{"annotations too large", metav1.ObjectMeta{Name: "x", Namespace: "prod", Annotations: map[string]string{"a": strings.Repeat("v", 300<<10)}}, false},
	} {
		if errs := validateMeta(&tc.meta, true); (len(errs) == 0) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, errs, tc.ok)
		}
	}
}
