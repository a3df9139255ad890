package filter

import (
	"testing"
	"time"

	"github.com/options-record/options-record/api/v1alpha1"
)

// TestCoverage: what a baseline depends on changes a resource's Coverage;
// nothing else does.
func TestCoverage(t *testing.T) {
	t.Parallel()
	base := sinkORC("r", namespaces("prod"), resources("", "configmaps"))
	cov := func(objs ...v1alpha1.OptionsRecordController) string {
		rules, _ := Compile(objs, Options{})
		return joinLines(rules.Coverage("", "configmaps"))
	}
	tests := []struct {
		name string
		objs []v1alpha1.OptionsRecordController
		same bool
	}{
		{"users, verbs and retention", []v1alpha1.OptionsRecordController{sinkORC("r", namespaces("prod"), resources("", "configmaps"),
			users("alice"), verbs(v1alpha1.VerbDelete), retention(48*time.Hour))}, true},
		{"another resource added to the rule", []v1alpha1.OptionsRecordController{sinkORC("r", namespaces("prod"), resources("", "configmaps"),
			resources("apps", "deployments"))}, true},
		{"a rule of another resource", []v1alpha1.OptionsRecordController{base, sinkORC("d", resources("apps", "deployments"))}, true},
		{"namespaces widened", []v1alpha1.OptionsRecordController{sinkORC("r", namespaces("prod", "dev"), resources("", "configmaps"))}, false},
		{"excluded namespace", []v1alpha1.OptionsRecordController{sinkORC("r", namespaces("prod"), excludeNamespaces("x"), resources("", "configmaps"))}, false},
		{"Secret data", []v1alpha1.OptionsRecordController{sinkORC("r", namespaces("prod"), resources("", "configmaps"), recordSecretData())}, false},
		{"another rule of the resource", []v1alpha1.OptionsRecordController{base, orc("team-a", "t", resources("", "configmaps"))}, false},
		// A tenant making its rule again under new names must not make
		// the sink LIST the cluster each time.
		{"the rule renamed", []v1alpha1.OptionsRecordController{sinkORC("r2", namespaces("prod"), resources("", "configmaps"))}, true},
		{"a second rule of the same scope", []v1alpha1.OptionsRecordController{base, sinkORC("r2", namespaces("prod"), resources("", "configmaps"))}, true},
	}
	want := cov(base)
	if want == "" {
		t.Fatal("the rule does not cover configmaps")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := cov(tt.objs...); (got == want) != tt.same {
				t.Errorf("Coverage = %q, base %q: same = %t, want %t", got, want, got == want, tt.same)
			}
		})
	}
	rules, _ := Compile([]v1alpha1.OptionsRecordController{base}, Options{})
	if got := rules.Coverage("apps", "deployments"); got != nil {
		t.Errorf("Coverage of an uncovered resource = %q, want nil", got)
	}
}

func joinLines(s []string) string {
	out := ""
	for _, l := range s {
		out += l + "\n"
	}
	return out
}
