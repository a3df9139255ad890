package chart

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/options-record/options-record/test/framework/controlplane"
)

const (
	releaseName = "options-record"
	namespace   = "options-record"
	chartPath   = "deploy/charts/options-record"
)

// helmLabels are the labels the chart adds to every object's metadata and
// deploy/ does not: the one documented difference besides the Namespace.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

func repoRoot(t testing.TB) string {
	t.Helper()
	return filepath.Dir(controlplane.RepoFile(t, "go.mod"))
}

func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	c, err := loader.Load(filepath.Join(repoRoot(t), chartPath))
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// rendered is what `helm template` prints: the objects, CRDs included, and
// the NOTES.
type rendered struct {
	objects []*unstructured.Unstructured
	notes   string
}

// renderChart renders the chart as `helm template options-record
// deploy/charts/options-record -n options-record --include-crds` with the
// given values.
func renderChart(t testing.TB, c *chart.Chart, vals map[string]any) rendered {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.IncludeCRDs = true
	install.ReleaseName = releaseName
	install.Namespace = namespace
	rel, err := install.Run(c, vals)
	if err != nil {
		t.Fatalf("helm template with %v: %v", vals, err)
	}
	return rendered{objects: decodeYAML(t, "chart", []byte(rel.Manifest)), notes: rel.Info.Notes}
}

// decodeYAML decodes the objects of a multi-document YAML stream.
func decodeYAML(t testing.TB, what string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// renderKustomize builds deploy/ with the given components added (as an
// operator's overlay would), or, with base, deploy/base and the CRD only. It
// runs on an in-memory copy of deploy/ with demo PostgreSQL credentials of
// this run (what `make postgres-credentials` writes).
func renderKustomize(t testing.TB, base bool, components ...string) []*unstructured.Unstructured {
	t.Helper()
	const mem = "/repo"
	fsys := filesys.MakeFsInMemory()
	src := filepath.Join(repoRoot(t), "deploy")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "charts"+string(filepath.Separator)) || strings.Contains(rel, "credentials") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return fsys.WriteFile(path.Join(mem, "deploy", filepath.ToSlash(rel)), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]string{
		"postgres.env":     "password=p0\ningest-password=p1\nreader-password=p2\napi-password=p3\n",
		"database.env":     "url=postgres://options_record:p1@options-record-postgres:5432/options_record?sslmode=disable\n",
		"database-api.env": "url=postgres://options_record_api:p3@options-record-postgres:5432/options_record?sslmode=disable\nreader-url=postgres://options_record_reader:p2@options-record-postgres:5432/options_record?sslmode=disable\n",
	}
	for name, data := range creds {
		if err := fsys.WriteFile(path.Join(mem, "deploy/components/postgres/credentials", name), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	var k strings.Builder
	k.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if base {
		// deploy/crd is a plain directory: a kustomization of it, in memory.
		if err := fsys.WriteFile(path.Join(mem, "deploy/crd/kustomization.yaml"), []byte("resources: [optionsrecord.io_optionsrecordcontrollers.yaml]\n")); err != nil {
			t.Fatal(err)
		}
		k.WriteString("resources: [../deploy/crd, ../deploy/base]\n")
	} else {
		k.WriteString("resources: [../deploy]\n")
	}
	if len(components) > 0 {
		k.WriteString("components:\n")
		for _, c := range components {
			k.WriteString("  - ../deploy/components/" + c + "\n")
		}
	}
	if err := fsys.WriteFile(path.Join(mem, "overlay", "kustomization.yaml"), []byte(k.String())); err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, path.Join(mem, "overlay"))
	if err != nil {
		t.Fatalf("kustomize build deploy/ with %v: %v", components, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// key names an object: kind, namespace, name.
func key(u *unstructured.Unstructured) string {
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

func keys(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		out = append(out, key(u))
	}
	sort.Strings(out)
	return out
}

// dropHelmLabels removes Helm's labels from every object of the chart,
// failing when one is missing (the chart labels every object it owns), and
// Helm's helm.sh/resource-policy annotation (Secrets the chart keeps after
// uninstall: the digest key, the demo database's passwords).
func dropHelmLabels(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			continue // crds/ is the generated file, as deploy/crd holds it
		}
		labels := u.GetLabels()
		for _, l := range helmLabels {
			if _, ok := labels[l]; !ok {
				t.Errorf("%s: no label %s", key(u), l)
			}
			delete(labels, l)
		}
		u.SetLabels(labels)
		if a := u.GetAnnotations(); a != nil {
			delete(a, "helm.sh/resource-policy")
			if len(a) == 0 {
				a = nil
			}
			u.SetAnnotations(a)
		}
	}
}

// kustomizeHash is the suffix kustomize's generators append to a name.
var kustomizeHash = regexp.MustCompile(`^(.+)-[a-z0-9]{10}$`)

// dropGeneratorHashes renames the Secrets and ConfigMaps of kustomize's
// generators (components/postgres) to the names the chart gives them, in
// the objects and in every reference to them.
func dropGeneratorHashes(objs []*unstructured.Unstructured, chartKeys map[string]bool) {
	renames := map[string]string{}
	for _, u := range objs {
		if u.GetKind() != "Secret" && u.GetKind() != "ConfigMap" {
			continue
		}
		m := kustomizeHash.FindStringSubmatch(u.GetName())
		if m == nil || chartKeys[key(u)] {
			continue
		}
		renames[u.GetName()] = m[1]
		u.SetName(m[1])
	}
	for _, u := range objs {
		u.Object = renameStrings(u.Object, renames).(map[string]any)
	}
}

func renameStrings(v any, renames map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = renameStrings(x, renames)
		}
	case []any:
		for i, x := range v {
			v[i] = renameStrings(x, renames)
		}
	case string:
		if r, ok := renames[v]; ok {
			return r
		}
	}
	return v
}

// maskPasswords replaces the passwords in Secrets (random in the chart,
// the test's in kustomize's) by a placeholder: the keys, the users, hosts,
// databases and options of the URLs still compare.
func maskPasswords(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Secret" {
			continue
		}
		data, _, _ := unstructured.NestedMap(u.Object, "data")
		for k, v := range data {
			raw, err := decodeB64(v)
			if err != nil {
				t.Fatalf("%s: %s: %v", key(u), k, err)
			}
			switch {
			case strings.HasSuffix(k, "password"):
				raw = "PASSWORD"
			case strings.HasSuffix(k, "url"):
				pu, err := url.Parse(raw)
				if err != nil {
					t.Fatalf("%s: %s: %v", key(u), k, err)
				}
				pu.User = url.UserPassword(pu.User.Username(), "PASSWORD")
				raw = pu.String()
			}
			data[k] = raw
		}
		if len(data) > 0 {
			_ = unstructured.SetNestedMap(u.Object, data, "data")
		}
	}
}

// TestChartNotifications: notifications.secretName mounts the Secret and
// passes its config.yaml to the ingest role; without it, neither.
func TestChartNotifications(t *testing.T) {
	c := loadChart(t)
	for _, tt := range []struct {
		vals map[string]any
		want bool
	}{{nil, false}, {map[string]any{"notifications": map[string]any{"secretName": "notify-config"}}, true}} {
		var sts *unstructured.Unstructured
		for _, o := range renderChart(t, c, tt.vals).objects {
			if o.GetKind() == "StatefulSet" {
				sts = o
			}
		}
		if sts == nil {
			t.Fatal("no StatefulSet rendered")
		}
		containers, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		hasArg := false
		for _, a := range args {
			hasArg = hasArg || a == "--notify-config=/etc/options-record/notify/config.yaml"
		}
		volumes, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "volumes")
		hasVolume := false
		for _, v := range volumes {
			name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
			hasVolume = hasVolume || name == "notify-config"
		}
		if hasArg != tt.want || hasVolume != tt.want {
			t.Errorf("values %v: --notify-config %v, Secret volume %v; want %v", tt.vals, hasArg, hasVolume, tt.want)
		}
	}
}

// TestChartTamperLogKey: tamperLog.signingKeySecret mounts the signing key
// into the ingest pods only (no other workload mounts the Secret) and
// passes it with a checkpoint directory on their data volume, or with
// tamperLog.checkpointURL instead of it, whose identity's annotations go
// on the ingest's ServiceAccount only; without a key, no log.
func TestChartTamperLogKey(t *testing.T) {
	c := loadChart(t)
	const dirArg = "--checkpoint-dir=/var/lib/options-record/checkpoints"
	const irsa = "eks.amazonaws.com/role-arn"
	for _, tt := range []struct {
		vals        map[string]any
		want        bool
		checkpoints string
		annotated   bool
	}{
		{nil, false, "", false},
		{map[string]any{"tamperLog": map[string]any{"signingKeySecret": "log-key"}}, true, dirArg, false},
		{map[string]any{"tamperLog": map[string]any{"signingKeySecret": "log-key", "checkpointURL": "s3://cp?region=eu-west-1",
			"serviceAccountAnnotations": map[string]any{irsa: "arn:aws:iam::111122223333:role/checkpoints"}}},
			true, "--checkpoint-url=s3://cp?region=eu-west-1", true},
	} {
		mounted := map[string]bool{}
		annotated := map[string]bool{}
		var args []string
		for _, o := range renderChart(t, c, tt.vals).objects {
			if o.GetKind() == "ServiceAccount" && o.GetAnnotations()[irsa] != "" {
				annotated[o.GetName()] = true
			}
			if o.GetKind() != "StatefulSet" && o.GetKind() != "Deployment" {
				continue
			}
			volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
			for _, v := range volumes {
				if name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName"); name == "log-key" {
					mounted[o.GetKind()+"/"+o.GetName()] = true
				}
			}
			if o.GetKind() == "StatefulSet" {
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				args, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			}
		}
		var checkpoints []string
		for _, a := range args {
			if strings.HasPrefix(a, "--checkpoint-") {
				checkpoints = append(checkpoints, a)
			}
		}
		hasArgs := slices.Contains(args, "--log-signing-key-file=/etc/options-record/log-signing/key") &&
			len(checkpoints) == 1 && checkpoints[0] == tt.checkpoints
		want := map[string]bool{}
		if tt.want {
			want["StatefulSet/options-record"] = true
		}
		if hasArgs != tt.want || !maps.Equal(mounted, want) {
			t.Errorf("values %v: flags %v (%q), the Secret mounted by %v; want %v and %v", tt.vals, hasArgs, checkpoints, mounted, tt.want, want)
		}
		wantAnnotated := map[string]bool{}
		if tt.annotated {
			wantAnnotated["options-record"] = true
		}
		if !maps.Equal(annotated, wantAnnotated) {
			t.Errorf("values %v: ServiceAccounts annotated %v, want %v", tt.vals, annotated, wantAnnotated)
		}
	}
}
