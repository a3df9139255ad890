package restores

import (
	"strings"
	"testing"

	"github.com/options-record/options-record/api/aggregated/registry"
	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestSecretChangeTellsNoValue: a Restore's status names what changed in a
// Secret, never a value: not at a data key, not in a data map replaced as a
// whole, not in an annotation (last-applied-configuration holds the data).
func TestSecretChangeTellsNoValue(t *testing.T) {
	secret := "czNjcjN0"
	for _, c := range []struct {
		path     string
		from, to any
		keys     string
	}{
		{"/data/k", secret, "b3RoZXI=", ""},
		{"/data", map[string]any{"k": secret}, map[string]any{"k": "x", "j": "y"}, `"k"`},
		{"", nil, map[string]any{"kind": "Secret", "data": map[string]any{"k": secret}}, `"k"`},
		{"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration", `{"data":{"k":"` + secret + `"}}`, nil, ""},
	} {
		fc := secretChange(recordv1alpha1.FieldChange{Op: "replace", Path: c.path, From: registry.Raw(c.from), To: registry.Raw(c.to)}, c.from, c.to)
		got := ""
		if fc.From != nil {
			got += string(fc.From.Raw)
		}
		if fc.To != nil {
			got += string(fc.To.Raw)
		}
		if strings.Contains(got, secret) || fc.Path != c.path {
			t.Errorf("%s: %s", c.path, got)
		}
		if c.keys != "" && !strings.Contains(got, c.keys) {
			t.Errorf("%s: the changed keys are not named: %s", c.path, got)
		}
	}
}
