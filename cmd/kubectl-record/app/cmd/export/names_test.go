package export

import (
	"strings"
	"testing"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestManifestFileNames: a recorded name cannot leave the export's
// directory, hide a file or carry control characters into a file name.
func TestManifestFileNames(t *testing.T) {
	for _, c := range []struct {
		obj  record.ObjectReference
		want string
	}{
		{record.ObjectReference{Resource: "configmaps", Name: "app-config"}, "configmaps_app-config.yaml"},
		{record.ObjectReference{APIGroup: "apps", Resource: "deployments", Name: "web"}, "deployments.apps_web.yaml"},
		{record.ObjectReference{APIGroup: "rbac.authorization.k8s.io", Resource: "roles", Name: "system:viewer"}, "roles.rbac.authorization.k8s.io_system:viewer.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "../../etc/passwd"}, "configmaps_..%2F..%2Fetc%2Fpasswd.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: ".."}, "configmaps_...yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "a\nb"}, "configmaps_a%0Ab.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: `a\b`}, "configmaps_a%5Cb.yaml"},
		{record.ObjectReference{APIGroup: "rbac.authorization.k8s.io", Resource: "roles", Name: "x\u202elmay.exe"}, "roles.rbac.authorization.k8s.io_x%E2%80%AElmay.exe.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "50%\u200b"}, "configmaps_50%25%E2%80%8B.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "naïve-日本"}, "configmaps_naïve-日本.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "no\u00a0break\u3164"}, "configmaps_no%C2%A0break%E3%85%A4.yaml"},
		{record.ObjectReference{Resource: "", Name: "x"}, ""},
		{record.ObjectReference{Resource: "configmaps", Name: ""}, ""},
	} {
		got, err := manifestFile(c.obj)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%+v: %q %v, want %q", c.obj, got, err, c.want)
		}
	}
}

// TestExportFileNamesDifferInMoreThanCase: Roles "Edit" and "edit" would be
// one file on a case-insensitive file system; the second gets its uid.
func TestExportFileNamesDifferInMoreThanCase(t *testing.T) {
	var e options
	a := e.claim("roles.rbac.authorization.k8s.io_Edit.yaml", "1111aaaa-0000")
	b := e.claim("roles.rbac.authorization.k8s.io_edit.yaml", "2222bbbb-0000")
	c := e.claim("roles.rbac.authorization.k8s.io_view.yaml", "3333cccc-0000")
	if a != "roles.rbac.authorization.k8s.io_Edit.yaml" || b != "roles.rbac.authorization.k8s.io_edit.2222bbbb.yaml" || c != "roles.rbac.authorization.k8s.io_view.yaml" {
		t.Errorf("file names %q %q %q", a, b, c)
	}
	// A name composed (é) and decomposed (e and U+0301) is one file on
	// macOS; and an object may be named as a twin's file would be.
	d := e.claim("roles.rbac.authorization.k8s.io_caf\u00e9.yaml", "4444dddd-0000")
	f := e.claim("roles.rbac.authorization.k8s.io_cafe\u0301.yaml", "5555eeee-0000")
	g := e.claim("roles.rbac.authorization.k8s.io_edit.2222bbbb.yaml", "2222bbbb-0000")
	if f == d || !strings.Contains(f, "5555eeee") || g == b {
		t.Errorf("file names %q %q, %q after %q", d, f, g, b)
	}
}
