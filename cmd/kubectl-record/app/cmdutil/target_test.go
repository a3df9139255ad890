package cmdutil

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		args           []string
		typ, name, err string
	}{
		{nil, "", "", ""},
		{[]string{"cm"}, "cm", "", ""},
		{[]string{"cm/app-config"}, "cm", "app-config", ""},
		{[]string{"deploy", "web"}, "deploy", "web", ""},
		{[]string{"deployment.apps/web"}, "deployment.apps", "web", ""},
		{[]string{"cm/a/b"}, "", "", "want TYPE/NAME"},
		{[]string{"cm/a", "b"}, "", "", "want TYPE/NAME or TYPE NAME"},
		{[]string{"/a"}, "", "", "no type"},
		{[]string{"a", "b", "c"}, "", "", "3 arguments"},
	} {
		typ, name, err := ParseTarget(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !IsUsage(err) {
				t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || typ != c.typ || name != c.name {
			t.Errorf("%q: %q %q %v, want %q %q", c.args, typ, name, err, c.typ, c.name)
		}
	}
}

// TestTargetSelectorValuesStayValues: a recorded name holding "," and "="
// (a Role may be named "a,object.name=deployer") is one escaped value of
// a target's field selector, which the server parses (as the
// kube-apiserver parses it, fields.ParseSelector) as that one value: it
// cannot add a requirement that selects another object's history.
func TestTargetSelectorValuesStayValues(t *testing.T) {
	const hostile = `a,object.name=deployer\`
	tgt := &Target{Resource: schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, Namespaced: true, Name: hostile}
	sel, err := fields.ParseSelector(tgt.Selector(Field("since", "-1h")))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sel.RequiresExactMatch("object.name"); !ok || v != hostile || len(sel.Requirements()) != 4 {
		t.Errorf("a target's selector: %v", sel.Requirements())
	}
}
