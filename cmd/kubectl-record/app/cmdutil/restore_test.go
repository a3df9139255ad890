package cmdutil

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestGeneratedNamesAreValid: the names the plugin gives Restores and plans
// are DNS-1123 labels whatever they are made from — a Role's name, a
// ServiceAccount's or an e-mail user's, or something hostile — so a restore
// or undo needs no --name to be accepted.
func TestGeneratedNamesAreValid(t *testing.T) {
	for _, in := range []string{
		"system:controller:foo",
		"undo-system:serviceaccount:shop:deployer",
		"undo-bob@example.com",
		"as-of",
		"ui-undo",
		"app-config",
		"UPPER-Case.Name",
		"ünïcödé-名前-🙂",
		"\x00\n\u202e-x",
		"...---...",
		"",
		strings.Repeat("a", 300),
		strings.Repeat("é", 300),
		strings.Repeat("a.", 150),
	} {
		got := RestoreName(in)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("RestoreName(%q) = %q: %v", in, got, errs)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("RestoreName(%q) = %q: %v", in, got, errs)
		}
	}
	// Readable where it can be: the object's name, its separators made dashes.
	if got := RestoreName("system:controller:foo"); !strings.HasPrefix(got, "system-controller-foo-") {
		t.Errorf("RestoreName(system:controller:foo) = %q", got)
	}
	if got := RestoreName("undo-bob@example.com"); !strings.HasPrefix(got, "undo-bob-example-com-") {
		t.Errorf("RestoreName(undo-bob@example.com) = %q", got)
	}
	if a, b := RestoreName("x"), RestoreName("x"); a == b {
		t.Errorf("two names for x are both %q", a)
	}
}
