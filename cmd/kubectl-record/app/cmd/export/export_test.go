package export_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app"
)

// recordOf serves the record's changes of namespace shop: Roles named
// names (uid i+1 repeated), each restorable with a clean manifest.
func recordOf(t *testing.T, names ...string) string {
	t.Helper()
	changes := map[string]record.Change{}
	var list record.ChangeList
	for i, n := range names {
		uid := strings.Repeat(fmt.Sprint(i+1), 8) + "-0000-0000-0000-000000000000"
		m, _ := json.Marshal(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
			"metadata": map[string]any{"name": n, "namespace": "shop"}})
		c := record.Change{TypeMeta: metav1.TypeMeta{Kind: "Change", APIVersion: record.SchemeGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Name: uid + ".k", Namespace: "shop"},
			ChangeRecord: record.ChangeRecord{Verb: "create", Restorable: true, Object: record.ObjectReference{APIGroup: "rbac.authorization.k8s.io",
				APIVersion: "v1", Resource: "roles", Kind: "Role", Namespace: "shop", Name: n, UID: uid}}}
		list.Items = append(list.Items, c)
		c.Manifest = &runtime.RawExtension{Raw: m}
		changes[c.Name] = c
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path.Base(r.URL.Path) == "proof" {
			// The proof of a Role named "old-...": stored before the
			// log; of the others: a tlog-proof whose state is the
			// manifest with a mark (the logged state, not the clean
			// manifest).
			c := changes[path.Base(path.Dir(r.URL.Path))]
			if strings.HasPrefix(c.Object.Name, "old-") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
					Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "no proof",
					Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: record.CauseBeforeLog,
						Message: "the version was stored before the record kept its tamper-evident log"}}}})
				return
			}
			w.Header().Set("Content-Type", record.ProofContentType)
			_, _ = w.Write(proofOf(c.Manifest.Raw))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if path.Base(r.URL.Path) == "changes" {
			list.TypeMeta = metav1.TypeMeta{Kind: "ChangeList", APIVersion: record.SchemeGroupVersion.String()}
			_ = json.NewEncoder(w).Encode(list)
			return
		}
		_ = json.NewEncoder(w).Encode(changes[path.Base(r.URL.Path)])
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// proofOf is a tlog-proof (not a valid one: verify is not the plugin's)
// whose leaf bundle carries state, marked.
func proofOf(state []byte) []byte {
	row := []byte("the row's encoding")
	bundle := binary.AppendUvarint([]byte{1}, uint64(len(row)))
	bundle = append(append(bundle, row...), state...)
	bundle = append(bundle, " logged"...)
	return []byte(record.ProofHeader + "\nextra " + base64.StdEncoding.EncodeToString(bundle) + "\nindex 0\n\nsigned\n")
}

func export(t *testing.T, server, dir string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = app.Main(append([]string{"export", "-n", "shop", "-o", dir, "--record-server", server, "--record-token", "t0ken"}, args...),
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e})
	return code, o.String(), e.String()
}

// TestExportIsPrivateAndGoesOn: DIR is made 0700 and every file 0600
// (Secrets may be recorded in clear); a valid 253-character name, longer
// than a file name may be, is shortened with its uid; names that only full
// Unicode case folding joins ("STRASSE", "straße") get two files; a file
// that cannot be written (here: one already there) skips its object with a
// line, the others are written, and the export exits 1.
func TestExportIsPrivateAndGoesOn(t *testing.T) {
	long := strings.Repeat("a", 253)
	server := recordOf(t, "edit", long, "STRASSE", "straße", "taken")
	dir := filepath.Join(t.TempDir(), "shop")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "roles.rbac.authorization.k8s.io_taken.yaml"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := export(t, server, dir)
	if code != 1 || !strings.Contains(errOut, "not written roles.rbac.authorization.k8s.io/taken: ") || !strings.Contains(out, "Exported 4 objects") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		fi, _ := e.Info()
		names = append(names, e.Name())
		if e.Name() != "roles.rbac.authorization.k8s.io_taken.yaml" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
		if len(e.Name()) > 255 {
			t.Errorf("%s: %d bytes", e.Name(), len(e.Name()))
		}
	}
	sort.Strings(names)
	t.Logf("written: %q", names)
	if !slices.Contains(names, "roles.rbac.authorization.k8s.io_straße.44444444.yaml") {
		t.Errorf("files %q: straße, which full case folding joins with STRASSE, wants its uid", names)
	}
	if len(names) != 5 {
		t.Errorf("files %q, want 4 objects and the file that was there", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "roles.rbac.authorization.k8s.io_taken.yaml")); string(b) != "mine\n" {
		t.Errorf("the file that was there: %q", b)
	}
	var longFile string
	for _, n := range names {
		if strings.HasPrefix(n, "roles.rbac.authorization.k8s.io_aaaa") {
			longFile = n
		}
	}
	if !strings.HasSuffix(longFile, ".22222222-0000-0000-0000-000000000000.yaml") {
		t.Errorf("the 253-character name's file: %q", longFile)
	}
	if b, err := os.ReadFile(filepath.Join(dir, longFile)); err != nil || !strings.Contains(string(b), "name: "+long) {
		t.Errorf("the 253-character name's manifest: %v\n%s", err, b)
	}

	// A new DIR is made 0700.
	fresh := filepath.Join(t.TempDir(), "new")
	if code, _, errOut := export(t, recordOf(t, "edit"), fresh); code != 0 {
		t.Fatalf("into a new directory: exit %d %s", code, errOut)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the new directory: %v %v, want 0700", fi.Mode(), err)
	}
}

// TestExportRefusesADirectoryOthersControl: a symbolic link, a directory
// others may write, and another user's directory are refused before
// anything is written.
func TestExportRefusesADirectoryOthersControl(t *testing.T) {
	server := recordOf(t, "edit")
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ dir, want string }{
		"a symbolic link":    {link, "symbolic link is refused"},
		"writable by others": {open, "is writable by others"},
		// Lstat("link/") follows the link: the path is cleaned first.
		"a symbolic link/": {link + "/", "symbolic link is refused"},
		"./link/.":         {"./" + filepath.Base(link) + "/.", "symbolic link is refused"},
		"link/../link/":    {link + "/../link/", "symbolic link is refused"},
	}
	if os.Geteuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		if err := os.Mkdir(foreign, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["another user's"] = struct{ dir, want string }{foreign, "belongs to uid 65534"}
		// A link another user planted on the way (in /tmp, to a
		// directory of root's) leads nowhere: DIR is never made there.
		planted := filepath.Join(base, "planted")
		if err := os.Symlink(real, planted); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(planted, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["under another user's link"] = struct{ dir, want string }{planted + "/out", "is a symbolic link of uid 65534"}
		// ... and through a link of yours that goes through it.
		mine := filepath.Join(base, "mine")
		if err := os.Symlink(planted, mine); err != nil {
			t.Fatal(err)
		}
		cases["through your link to another user's"] = struct{ dir, want string }{mine + "/out", "is a symbolic link of uid 65534"}
	} else {
		cases["another user's"] = struct{ dir, want string }{"/", "belongs to uid 0"}
	}
	t.Chdir(base) // for ./link/.
	for name, c := range cases {
		code, _, errOut := export(t, server, c.dir)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, %q; want %q", name, code, errOut, c.want)
		}
	}
	for _, d := range []string{real, open} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("%s: %d files written", d, len(entries))
		}
	}
	// A link of yours on the way is followed, "../" after it too, and a
	// relative link with "..".
	if err := os.Symlink(filepath.Join("..", filepath.Base(base), "real"), filepath.Join(base, "rel")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{link + "/sub", "link/../real/sub2", "./link/sub3/", "rel/sub4"} {
		if code, _, errOut := export(t, server, dir); code != 0 {
			t.Errorf("-o %s: exit %d %s", dir, code, errOut)
		}
	}
	for _, sub := range []string{"sub", "sub2", "sub3", "sub4"} {
		if fi, err := os.Lstat(filepath.Join(real, sub, "roles.rbac.authorization.k8s.io_edit.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v", sub, err)
		}
	}
}

// TestExportWithProofs: beside each manifest X.yaml, --with-proofs writes
// its proof X.tlog-proof and X.json, the exact logged state the proof
// carries (which verify --proof X.tlog-proof compares: the manifest is
// derived from it); a version stored before the record kept its log gets
// its manifest, no proof, a line on stderr, and does not fail the export.
func TestExportWithProofs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evidence")
	code, out, errOut := export(t, recordOf(t, "edit", "old-view"), dir, "--with-proofs")
	if code != 0 || !strings.Contains(out, "Exported 2 objects") ||
		!strings.Contains(errOut, "no proof of roles.rbac.authorization.k8s.io/old-view: the version was stored before the record kept its tamper-evident log") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"roles.rbac.authorization.k8s.io_edit.json", "roles.rbac.authorization.k8s.io_edit.tlog-proof",
		"roles.rbac.authorization.k8s.io_edit.yaml", "roles.rbac.authorization.k8s.io_old-view.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
	state, err := os.ReadFile(filepath.Join(dir, "roles.rbac.authorization.k8s.io_edit.json"))
	if err != nil || !strings.HasSuffix(string(state), "} logged") || !strings.Contains(string(state), `"name":"edit"`) {
		t.Errorf("the logged state: %q %v", state, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "roles.rbac.authorization.k8s.io_edit.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the logged state's file: %v %v", fi, err)
	}
}
