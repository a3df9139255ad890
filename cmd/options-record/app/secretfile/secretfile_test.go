package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretFilesAreCheckedBeforeTheyAreTrusted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name      string
		mode      os.FileMode
		generated bool
		wantErr   string
	}{
		{"generated, private", 0o600, true, ""},
		{"generated, readable by others", 0o644, true, "readable by other users"},
		{"generated, group-readable", 0o640, true, "readable by other users"},
		{"given (a mounted Secret), readable", 0o644, false, ""},
		{"given, writable by others", 0o666, false, "writable by other users"},
		{"given, group-writable", 0o660, false, "writable by other users"},
	}
	for i, tt := range tests {
		p := write(strings.ReplaceAll(tt.name, " ", "-")+string(rune('a'+i)), tt.mode)
		_, err := Read(p, tt.generated)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
	}
	// A key file the sink generates is private, in a private directory.
	data := filepath.Join(dir, "data")
	p, err := Ensure(filepath.Join(data, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("generated token mode %04o, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(data); st.Mode().Perm()&0o077 != 0 {
		t.Errorf("generated token's directory mode %04o, want private", st.Mode().Perm())
	}
	if _, err := Read(p, true); err != nil {
		t.Errorf("the generated token is refused: %v", err)
	}
}
