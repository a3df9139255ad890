package filter_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/webhook")

func webhookOptions() filter.WebhookOptions {
	port := int32(8444)
	return filter.WebhookOptions{
		Options: filter.Options{SinkNamespace: "options-record"},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "options-record", Name: "options-record-admission",
				Path: ptr(filter.WebhookPath), Port: &port},
			CABundle: []byte("-----BEGIN CERTIFICATE-----\n"),
		},
	}
}

func ptr[T any](v T) *T { return &v }

// TestAdmissionWebhookGolden compares the generated configuration of each
// rules file in testdata/webhook with its golden file (-update rewrites
// them), and checks that it is deterministic: the objects in reverse order
// and twice over give the same configuration.
func TestAdmissionWebhookGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/webhook/*.rules.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rules files: %v", err)
	}
	files = append(files, "testdata/policy-rules.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			objs, err := filter.LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(filter.AdmissionWebhook(objs, webhookOptions()))
			if err != nil {
				t.Fatal(err)
			}
			rev := slices.Clone(objs)
			slices.Reverse(rev)
			again, _ := yaml.Marshal(filter.AdmissionWebhook(append(rev, objs...), webhookOptions()))
			if d := cmp.Diff(string(got), string(again)); d != "" {
				t.Errorf("reordered and repeated objects change the configuration (-once +twice):\n%s", d)
			}
			golden := strings.Replace(filepath.Join("testdata/webhook", filepath.Base(f)), ".yaml", ".golden.yaml", 1)
			golden = strings.Replace(golden, ".rules.golden", ".golden", 1)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s differs (-want +got):\n%s", golden, d)
			}
		})
	}
}

// TestAdmissionWebhookCoversTheRules evaluates the generated configuration
// with the apiserver's own rule matcher and the namespace selector: every
// update, patch and delete a rule keeps (outside the sink's namespace) is
// reviewed; creates, reads and the sink's namespace never are.
func TestAdmissionWebhookCoversTheRules(t *testing.T) {
	files, _ := filepath.Glob("testdata/webhook/*.rules.yaml")
	files = append(files, "testdata/policy-rules.yaml")
	namespaces := []string{"", "prod", "staging", "team-a", "tenant", "kube-system", "other", "options-record"}
	resources := [][3]string{
		{"", "configmaps", ""}, {"", "secrets", ""}, {"apps", "deployments", ""}, {"apps", "deployments", "scale"},
		{"", "namespaces", ""}, {"coordination.k8s.io", "leases", ""}, {"", "events", ""}, {"events.k8s.io", "events", ""},
		{"", "pods", "status"}, {"batch", "jobs", ""}, {"rbac.authorization.k8s.io", "clusterroles", ""}, {"example.com", "widgets", ""},
	}
	verbs := []string{"create", "update", "patch", "delete", "deletecollection", "get", "list"}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			objs, err := filter.LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(f)
			opts := webhookOptions()
			rs, _ := filter.Compile(objs, opts.Options)
			w := filter.AdmissionWebhook(objs, opts).Webhooks[0]
			checked := 0
			for _, n := range namespaces {
				for _, r := range resources {
					ns := n
					clusterScoped := r[1] == "namespaces" || r[1] == "clusterroles"
					if clusterScoped != (n == "") {
						continue
					}
					name := "x"
					if r[1] == "namespaces" {
						name, ns = "prod", "prod"
					}
					for _, v := range verbs {
						ev := &auditv1.Event{
							Stage: auditv1.StageResponseComplete, Verb: v, RequestURI: "/x", Level: auditv1.LevelRequestResponse,
							User:           authnv1.UserInfo{Username: "alice"},
							ObjectRef:      &auditv1.ObjectReference{APIGroup: r[0], APIVersion: "v1", Resource: r[1], Subresource: r[2], Namespace: n, Name: name},
							ResponseStatus: &metav1.Status{Code: 200},
						}
						if r[1] == "namespaces" {
							ev.ObjectRef.Namespace = ""
						}
						// A subresource is reviewed when a rule names it.
						kept := rs.Match(ev).Keep && (r[2] == "" || bytes.Contains(raw, []byte(r[1]+"/"+r[2])))
						reviewed := reviews(w, v, r, ns, name)
						switch {
						case kept && (v == "update" || v == "patch" || strings.HasPrefix(v, "delete")) && ns != "options-record" && !reviewed:
							t.Errorf("%s %s/%s/%s in %q is kept by the rules but not reviewed", v, r[0], r[1], r[2], ns)
						case reviewed && (v == "create" || v == "get" || v == "list"):
							t.Errorf("%s %s/%s in %q is reviewed", v, r[0], r[1], ns)
						case reviewed && ns == "options-record":
							t.Errorf("%s %s/%s in the sink's namespace is reviewed", v, r[0], r[1])
						}
						checked++
					}
				}
			}
			t.Logf("checked %d requests", checked)
		})
	}
}

// reviews reports whether webhook w gets the review of verb on resource r
// (group, resource, subresource) named name in namespace ns: a rule
// matches, the namespace selector matches, and no match condition leaves
// the kind out (each condition excludes one group and resource).
func reviews(w admissionregistrationv1.ValidatingWebhook, verb string, r [3]string, ns, name string) bool {
	op := map[string]admission.Operation{"create": admission.Create, "update": admission.Update, "patch": admission.Update,
		"delete": admission.Delete, "deletecollection": admission.Delete, "get": admission.Connect, "list": admission.Connect}[verb]
	attrs := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Group: r[0], Version: "v1", Kind: "X"}, ns, name,
		schema.GroupVersionResource{Group: r[0], Version: "v1", Resource: r[1]}, r[2], op, nil, false, &user.DefaultInfo{Name: "alice"})
	matched := false
	for _, rule := range w.Rules {
		m := rules.Matcher{Rule: rule, Attr: attrs}
		matched = matched || m.Matches()
	}
	if !matched {
		return false
	}
	if ns != "" {
		sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			panic(err)
		}
		if !sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}) {
			return false
		}
	}
	for _, c := range w.MatchConditions {
		if c.Expression == fmt.Sprintf("!(request.resource.group == '%s' && request.resource.resource == '%s')", r[0], r[1]) {
			return false
		}
	}
	return true
}

// TestAdmissionWebhookIsBounded: a thousand controllers, each with its own
// namespace and resources, give a configuration of bounded size that still
// reviews what they select.
func TestAdmissionWebhookIsBounded(t *testing.T) {
	var objs []v1alpha1.OptionsRecordController
	for i := range 1000 {
		o := v1alpha1.OptionsRecordController{}
		o.Namespace, o.Name = "options-record", fmt.Sprintf("r%d", i)
		o.Spec.Namespaces = []string{fmt.Sprintf("ns-%d", i)}
		o.Spec.Resources = []v1alpha1.ResourceSelector{{Group: fmt.Sprintf("g%d.example.com", i%500), Resources: []string{fmt.Sprintf("things%d", i)}}}
		objs = append(objs, o)
	}
	c := filter.AdmissionWebhook(objs, webhookOptions())
	data, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 32<<10 {
		t.Errorf("configuration of %d bytes from %d controllers:\n%s", len(data), len(objs), data)
	}
	w := c.Webhooks[0]
	if !reviews(w, "delete", [3]string{"g7.example.com", "things7", ""}, "ns-7", "x") {
		t.Errorf("a selected delete is not reviewed:\n%s", data)
	}
	if reviews(w, "delete", [3]string{"g7.example.com", "things7", ""}, "options-record", "x") {
		t.Errorf("the sink's namespace is reviewed:\n%s", data)
	}
	if !bytes.Contains(data, []byte("leases")) {
		t.Errorf("selecting every resource without leaving out leases:\n%s", data)
	}
}
