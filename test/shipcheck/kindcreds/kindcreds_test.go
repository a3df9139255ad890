package kindcreds

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/options-record/options-record/test/framework/controlplane"
)

func TestEnsureKeepsExistingCredentials(t *testing.T) {
	tmpl, err := os.ReadFile(controlplane.RepoFile(t, controlplane.WebhookKubeconfigTemplatePath))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "credentials")
	if wrote, err := Ensure(dir, tmpl, false); err != nil || !wrote {
		t.Fatalf("first Ensure: wrote=%v err=%v", wrote, err)
	}
	before, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if wrote, err := Ensure(dir, tmpl, false); err != nil || wrote {
		t.Fatalf("second Ensure replaced the credentials of a running cluster: wrote=%v err=%v", wrote, err)
	}
	if wrote, err := Ensure(dir, tmpl, true); err != nil || !wrote {
		t.Fatalf("forced Ensure: wrote=%v err=%v", wrote, err)
	}
	after, err := os.ReadFile(filepath.Join(dir, TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) {
		t.Error("forced Ensure kept the old token")
	}
	for _, f := range Files {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is readable by others: %v", f, st.Mode())
		}
	}
}
