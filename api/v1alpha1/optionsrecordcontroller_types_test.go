package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/v1alpha1"
)

// designExample is the example OptionsRecordController docs/rules.md opens
// with (the same fields; the comments differ).
const designExample = `
apiVersion: optionsrecord.io/v1alpha1
kind: OptionsRecordController
metadata: {name: prod-apps, namespace: options-record}
spec:
  namespaces: ["prod", "payments-*"]        # globs; empty = all (only honoured in the sink's own namespace)
  excludeNamespaces: ["kube-system"]
  resources:                                 # empty = all resources
    - {group: apps, resources: [deployments, statefulsets]}
    - {group: "", resources: [configmaps, secrets, services]}
  verbs: [create, update, patch, delete, deletecollection]   # default: all mutating verbs
  users: []                                  # globs; empty = everyone
  excludeUsers: ["system:kube-scheduler"]
  userGroups: []
  excludeUserGroups: []
  ignoreStatusOnlyChanges: true              # default true: drop changes that touch only status,
                                             # managedFields, resourceVersion, generation-neutral noise
  recordSecretData: false                    # default false: Secret data/stringData stored as digests
  retention: 720h                            # how long versions and events are kept
status:
  observedGeneration: 3
  conditions: [{type: Ready, status: "True", reason: Synced}]
  recordedEvents: 1234
  lastRecordedTime: "2026-11-21T10:00:00Z"
`

func TestDesignExample(t *testing.T) {
	t.Parallel()
	var got v1alpha1.OptionsRecordController
	if err := yaml.UnmarshalStrict([]byte(designExample), &got); err != nil {
		t.Fatalf("the documented example does not decode strictly: %v", err)
	}
	yes := true
	want := v1alpha1.OptionsRecordControllerSpec{
		Namespaces:        []string{"prod", "payments-*"},
		ExcludeNamespaces: []string{"kube-system"},
		Resources: []v1alpha1.ResourceSelector{
			{Group: "apps", Resources: []string{"deployments", "statefulsets"}},
			{Group: "", Resources: []string{"configmaps", "secrets", "services"}},
		},
		Verbs:                   v1alpha1.MutatingVerbs,
		Users:                   []string{},
		ExcludeUsers:            []string{"system:kube-scheduler"},
		UserGroups:              []string{},
		ExcludeUserGroups:       []string{},
		IgnoreStatusOnlyChanges: &yes,
		Retention:               &metav1.Duration{Duration: v1alpha1.DefaultRetention},
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec mismatch (-want +got):\n%s", diff)
	}
	if got.Status.RecordedEvents != 1234 || got.Status.ObservedGeneration != 3 ||
		got.Status.LastRecordedTime == nil || !got.Status.LastRecordedTime.Equal(&metav1.Time{Time: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}) {
		t.Errorf("status decoded as %+v", got.Status)
	}

	copied := got.DeepCopy()
	copied.Spec.Resources[0].Resources[0] = "changed"
	*copied.Spec.IgnoreStatusOnlyChanges = false
	if got.Spec.Resources[0].Resources[0] != "deployments" || !*got.Spec.IgnoreStatusOnlyChanges {
		t.Error("DeepCopy shares memory with the original")
	}
}

func TestScheme(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&v1alpha1.OptionsRecordController{}, &v1alpha1.OptionsRecordControllerList{}} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != v1alpha1.GroupVersion {
			t.Errorf("ObjectKinds(%T) = %v, %v", obj, gvks, err)
		}
	}
	if got := v1alpha1.GroupVersionResource.String(); got != "optionsrecord.io/v1alpha1, Resource=optionsrecordcontrollers" {
		t.Errorf("GroupVersionResource = %s", got)
	}
	if got := v1alpha1.GroupVersionKind.String(); got != "optionsrecord.io/v1alpha1, Kind=OptionsRecordController" {
		t.Errorf("GroupVersionKind = %s", got)
	}
}

// TestGeneratedCRD checks the documented facts of the rule type (docs/rules.md) in the CRD that
// controller-gen generates from the markers (make generate).
func TestGeneratedCRD(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crd", "optionsrecord.io_optionsrecordcontrollers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group string
			Names struct {
				Kind, ListKind, Plural, Singular string
				ShortNames                       []string
			}
			Scope    string
			Versions []struct {
				Name                     string
				Served, Storage          bool
				Subresources             map[string]any
				AdditionalPrinterColumns []struct{ Name, Type, JSONPath string }
			}
		}
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec
	if s.Group != v1alpha1.GroupName || s.Names.Kind != v1alpha1.Kind || s.Names.ListKind != v1alpha1.ListKind ||
		s.Names.Plural != v1alpha1.Resource || !cmp.Equal(s.Names.ShortNames, []string{v1alpha1.ShortName}) || s.Scope != "Namespaced" {
		t.Errorf("CRD names: group %q, names %+v, scope %q", s.Group, s.Names, s.Scope)
	}
	if len(s.Versions) != 1 {
		t.Fatalf("CRD has %d versions, want 1", len(s.Versions))
	}
	v := s.Versions[0]
	if v.Name != v1alpha1.Version || !v.Served || !v.Storage {
		t.Errorf("version %q served=%v storage=%v", v.Name, v.Served, v.Storage)
	}
	if _, ok := v.Subresources["status"]; !ok {
		t.Error("no status subresource")
	}
	var columns []string
	for _, c := range v.AdditionalPrinterColumns {
		columns = append(columns, c.Name)
	}
	if diff := cmp.Diff([]string{"Ready", "Recorded", "Age"}, columns); diff != "" {
		t.Errorf("printer columns mismatch (-want +got):\n%s", diff)
	}
}
