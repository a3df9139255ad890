package shipcheck

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
	"github.com/options-record/options-record/test/shipcheck/kindcreds"
)

// memRoot is where the repository's shipped trees are copied in the
// in-memory file system the renders run on.
const memRoot = "/repo"

// variant is one kustomization an operator can apply.
type variant struct {
	name    string // e.g. "deploy", "deploy/base", "deploy+components/postgres", "kind-config"
	objects []*unstructured.Unstructured
}

// repoRoot returns the repository's root directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	return filepath.Dir(controlplane.RepoFile(t, "go.mod"))
}

// components lists the kustomize components under deploy/components.
func components(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(repoRoot(t), "deploy", "components"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, "components/"+e.Name())
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("no components under deploy/components")
	}
	return out
}

// renderAll renders every shipped kustomization: deploy/ (the default
// install), deploy/base (the sink without the restore API), deploy/ with each
// component it does not already hold (as an operator's overlay would), with
// all of them at once, and kind-config/ with freshly generated credentials. It runs on an
// in-memory copy of deploy/ and kind-config/, so nothing is written to the
// work tree.
func renderAll(t testing.TB) []variant {
	t.Helper()
	root := repoRoot(t)
	fsys := filesys.MakeFsInMemory()
	for _, dir := range []string{"deploy", "kind-config"} {
		copyTree(t, fsys, filepath.Join(root, dir), path.Join(memRoot, dir))
	}
	tmpl, err := os.ReadFile(filepath.Join(root, controlplane.WebhookKubeconfigTemplatePath))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := kindcreds.Generate(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range creds {
		writeMem(t, fsys, path.Join(memRoot, "kind-config", "credentials", name), data)
	}
	// What `make postgres-credentials` writes, with a password of this run.
	for name, data := range postgresCredentials(t) {
		writeMem(t, fsys, path.Join(memRoot, "deploy", "components", "postgres", "credentials", name), data)
	}

	comps := optionalComponents(t)
	builds := map[string]string{
		"deploy":      path.Join(memRoot, "deploy"),
		"deploy/base": path.Join(memRoot, "deploy", "base"),
		"kind-config": path.Join(memRoot, "kind-config"),
	}
	overlay := func(name string, comps ...string) {
		dir := path.Join(memRoot, "overlays", strings.NewReplacer("/", "-", "+", "-").Replace(name))
		var b strings.Builder
		b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../deploy]\ncomponents:\n")
		for _, c := range comps {
			b.WriteString("  - ../../deploy/" + c + "\n")
		}
		writeMem(t, fsys, path.Join(dir, "kustomization.yaml"), []byte(b.String()))
		builds[name] = dir
	}
	for _, c := range comps {
		overlay("deploy+"+c, c)
	}
	overlay("deploy+all-components", comps...)

	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	var out []variant
	for name, dir := range builds {
		rm, err := k.Run(fsys, dir)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", name, err)
		}
		v := variant{name: name}
		for _, r := range rm.Resources() {
			m, err := r.Map()
			if err != nil {
				t.Fatalf("%s: %s: %v", name, r.CurId(), err)
			}
			v.objects = append(v.objects, &unstructured.Unstructured{Object: m})
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// optionalComponents are the components deploy/kustomization.yaml does not
// list itself.
func optionalComponents(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Components []string `json:"components"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range components(t) {
		if !slices.Contains(k.Components, c) {
			out = append(out, c)
		}
	}
	return out
}

func copyTree(t testing.TB, fsys filesys.FileSystem, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if d.Name() == "credentials" { // a local kind- or postgres-credentials run; the test makes its own
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeMem(t, fsys, path.Join(to, filepath.ToSlash(rel)), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeMem(t testing.TB, fsys filesys.FileSystem, p string, data []byte) {
	t.Helper()
	if err := fsys.MkdirAll(path.Dir(p)); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile(p, data); err != nil {
		t.Fatal(err)
	}
}

// find returns the objects of a kind (and name, if not empty).
func find(objs []*unstructured.Unstructured, kind, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			out = append(out, o)
		}
	}
	return out
}

func TestRenderEveryKustomization(t *testing.T) {
	t.Parallel()
	vs := renderAll(t)
	want := map[string]bool{"deploy": true, "deploy/base": true, "kind-config": true, "deploy+all-components": true}
	for _, c := range optionalComponents(t) {
		want["deploy+"+c] = true
	}
	for _, v := range vs {
		delete(want, v.name)
		t.Logf("%s: %d objects", v.name, len(v.objects))
		if len(v.objects) == 0 {
			t.Errorf("%s renders nothing", v.name)
		}
	}
	for name := range want {
		t.Errorf("variant %s was not rendered", name)
	}
}

// postgresCredentials runs the script of `make postgres-credentials` into a
// temporary directory and returns the files it wrote.
func postgresCredentials(t testing.TB) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "hack", "ship", "postgres-credentials.sh"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("postgres-credentials: %v\n%s", err, out)
	}
	out := map[string][]byte{}
	for _, name := range []string{"postgres.env", "database.env", "database-api.env"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}
