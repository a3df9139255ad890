package chart

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func decodeB64(v any) (string, error) {
	s, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// pairing is a set of the chart's values and the kustomization of deploy/
// that must render the same objects.
type pairing struct {
	name   string
	values map[string]any
	// base: deploy/base and the CRD (no restore API); else deploy/.
	base       bool
	components []string
	// noNamespace: the chart leaves the namespace to Helm
	// (namespace.create false), so deploy/'s Namespace has no counterpart.
	noNamespace bool
}

func pairings() []pairing {
	on := map[string]any{"enabled": true}
	certManager := map[string]any{"source": "certManager"}
	return []pairing{
		{name: "defaults", noNamespace: true},
		{name: "namespace.create", values: map[string]any{"namespace": map[string]any{"create": true}}},
		{name: "restoreAPI off", base: true, noNamespace: true,
			values: map[string]any{"restoreAPI": map[string]any{"enabled": false}}},
		{name: "tls from cert-manager", components: []string{"cert-manager"}, noNamespace: true,
			values: map[string]any{"tls": certManager}},
		{name: "baseline secrets", components: []string{"baseline-secrets"}, noNamespace: true,
			values: map[string]any{"baselineSecrets": on}},
		// The APIService's caBundle comes from cert-manager's CA injector in
		// deploy/ (its annotation is there with or without cert-manager);
		// the chart annotates it only with tls.source certManager.
		{name: "aggregated API", components: []string{"cert-manager", "aggregated-api"}, noNamespace: true,
			values: map[string]any{"tls": certManager, "aggregatedAPI": on}},
		// The observing webhook's caBundle, as the APIService's.
		{name: "admission observer", components: []string{"cert-manager", "admission-observer"}, noNamespace: true,
			values: map[string]any{"tls": certManager, "admissionObserver": on}},
		{name: "notifications", components: []string{"notifications"}, noNamespace: true,
			values: map[string]any{"notifications": map[string]any{"secretName": "options-record-notify"}}},
		{name: "tamper log", components: []string{"tamper-log"}, noNamespace: true,
			values: map[string]any{"tamperLog": map[string]any{"signingKeySecret": "options-record-log-signing-key"}}},
		{name: "demo postgres", components: []string{"postgres"}, noNamespace: true,
			values: map[string]any{"postgres": on}},
		// notifications first: its flag comes right after the base's in the
		// chart, before the observing webhook's.
		{name: "everything", components: []string{"notifications", "tamper-log", "admission-observer", "aggregated-api", "baseline-secrets", "cert-manager", "postgres"},
			values: map[string]any{"namespace": map[string]any{"create": true}, "tls": certManager,
				"admissionObserver": on, "aggregatedAPI": on, "baselineSecrets": on, "postgres": on,
				"notifications": map[string]any{"secretName": "options-record-notify"},
				"tamperLog":     map[string]any{"signingKeySecret": "options-record-log-signing-key"}}},
	}
}

// TestChartMatchesKustomize renders the chart and deploy/ for each pairing
// and compares them object by object: the same kinds, names and namespaces,
// and each object equal but for Helm's labels (and, for the demo
// PostgreSQL, kustomize's generator hashes and the random passwords).
func TestChartMatchesKustomize(t *testing.T) {
	c := loadChart(t)
	for _, p := range pairings() {
		t.Run(p.name, func(t *testing.T) {
			got := renderChart(t, c, p.values).objects
			want := renderKustomize(t, p.base, p.components...)
			if p.noNamespace {
				want = without(want, "Namespace")
			}
			dropHelmLabels(t, got)
			chartKeys := map[string]bool{}
			for _, u := range got {
				chartKeys[key(u)] = true
			}
			dropGeneratorHashes(want, chartKeys)
			maskPasswords(t, got)
			maskPasswords(t, want)
			canonical(t, got)
			canonical(t, want)
			compareObjects(t, got, want)
		})
	}
}

// canonical round-trips each object through JSON, so that numbers compare
// alike whichever decoder read them.
func canonical(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		data, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		u.Object = m
	}
}

func without(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() != kind {
			out = append(out, u)
		}
	}
	return out
}

// compareObjects fails on any object of one side missing from the other,
// and on any difference between two objects of the same key.
func compareObjects(t *testing.T, got, want []*unstructured.Unstructured) {
	t.Helper()
	if d := cmp.Diff(keys(want), keys(got)); d != "" {
		t.Errorf("objects (-kustomize +chart):\n%s", d)
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, u := range want {
		byKey[key(u)] = u
	}
	for _, u := range got {
		w, ok := byKey[key(u)]
		if !ok {
			continue
		}
		if d := cmp.Diff(w.Object, u.Object); d != "" {
			t.Errorf("%s differs (-kustomize +chart):\n%s", key(u), d)
		}
	}
}

// TestChartLint runs Helm's linter (`helm lint`) with the default values
// and with every switch on; an error or a warning fails.
func TestChartLint(t *testing.T) {
	dir := filepath.Join(repoRoot(t), chartPath)
	for _, p := range append(pairings(), pairing{name: "generated secrets", values: generatedValues()},
		pairing{name: "scheduled verify", values: verifyValues(map[string]any{"verifierKey": verifierKey})}) {
		l := lint.All(dir, p.values, namespace, false)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: helm lint: %s", p.name, m)
			}
		}
	}
}

// TestChartFilesAreDeploys checks that the files the chart carries (a chart
// cannot read outside its directory) are deploy/'s, byte for byte.
func TestChartFilesAreDeploys(t *testing.T) {
	root := repoRoot(t)
	for copy, orig := range map[string]string{
		"crds/optionsrecord.io_optionsrecordcontrollers.yaml": "deploy/crd/optionsrecord.io_optionsrecordcontrollers.yaml",
		"files/audit-policy.yaml":                             "deploy/audit/policy.yaml",
		"files/roles.sql":                                     "deploy/components/postgres/roles.sql",
		"files/10-roles.sh":                                   "deploy/components/postgres/10-roles.sh",
	} {
		a, err := os.ReadFile(filepath.Join(root, chartPath, copy))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, orig))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s/%s is not a copy of %s: cp %s %s/%s", chartPath, copy, orig, orig, chartPath, copy)
		}
	}
}

// generatedValues has the chart make every Secret itself.
func generatedValues() map[string]any {
	return map[string]any{
		"tls":           map[string]any{"source": "generate", "ipAddresses": []any{"10.96.0.31"}},
		"webhook":       map[string]any{"service": map[string]any{"clusterIP": "10.96.0.30"}},
		"webhookToken":  map[string]any{"generate": true},
		"secretDigest":  map[string]any{"generate": true},
		"aggregatedAPI": map[string]any{"enabled": true},
		"postgres":      map[string]any{"enabled": true},
		// Installed for real: it reviews nothing until a sink writes rules.
		"admissionObserver": map[string]any{"enabled": true},
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

func hasAll(s string, parts ...string) (missing []string) {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			missing = append(missing, p)
		}
	}
	return missing
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	return unstructured.NestedString(obj, fields...)
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChartRefusesWhatCannotWork: values that would install something
// broken fail the render with a message saying why.
func TestChartRefusesWhatCannotWork(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		values map[string]any
		says   string
	}{
		{map[string]any{"tls": map[string]any{"source": "selfSigned"}}, "tls.source must be"},
		{map[string]any{"aggregatedAPI": map[string]any{"enabled": true}, "restoreAPI": map[string]any{"enabled": false}}, "needs restoreAPI.enabled"},
		{map[string]any{"postgres": map[string]any{"enabled": true}, "database": map[string]any{"ingest": map[string]any{"url": "postgres://x"}}}, "leave database.*.url empty"},
		{map[string]any{"database": map[string]any{"api": map[string]any{"url": "postgres://x"}}}, "two logins"},
		{map[string]any{"managedClusters": map[string]any{"gke": map[string]any{"audience": "https://sink.example/gke/pubsub"}}}, "managedClusters.gke.serviceAccount"},
	} {
		install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
		install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, releaseName, namespace
		_, err := install.Run(c, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("values %v: got error %v, want one saying %q", tc.values, err, tc.says)
		}
	}
}

// TestChartGKEPushFlags: the managedClusters.gke values become the ingest's
// --gke-pubsub-* flags, and none is passed without an audience.
func TestChartGKEPushFlags(t *testing.T) {
	c := loadChart(t)
	args := func(vals map[string]any) string {
		t.Helper()
		sts := find(renderChart(t, c, vals).objects, "StatefulSet", "options-record")
		if sts == nil {
			t.Fatal("no ingest StatefulSet")
		}
		containers, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
		a, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		return strings.Join(a, " ")
	}
	if got := args(nil); strings.Contains(got, "--gke-pubsub") {
		t.Errorf("default values pass %s", got)
	}
	got := args(map[string]any{"managedClusters": map[string]any{"gke": map[string]any{"audience": "https://sink.example/gke/pubsub",
		"serviceAccount": "push@p.iam.gserviceaccount.com", "cluster": "prod"}}})
	if missing := hasAll(got, "--gke-pubsub-audience=https://sink.example/gke/pubsub",
		"--gke-pubsub-service-account=push@p.iam.gserviceaccount.com", "--gke-pubsub-cluster=prod"); len(missing) > 0 {
		t.Errorf("args %s lack %v", got, missing)
	}
}
