package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// The shipped component of the observing webhook.
const observerComponent = "deploy/components/admission-observer/"

// TestObserverInstalledAsShipped installs the observing webhook as
// docs/deploying.md says, on the real kube-apiserver with EKS's audit
// policy: the component's ValidatingWebhookConfiguration (no rules), its
// RBAC and guard, and the sink with --admission-addr and
// --admission-webhook-config-name, which fills the rules from the
// OptionsRecordControllers. Then alice changes a ConfigMap, a Secret and a
// custom resource, bob deletes them, and the kubectl-record plugin names
// bob, shows the state before (the Secret's values as digests) and
// restores it; a new rule's namespace makes the sink widen the
// configuration, and a deletion there keeps its state too. The sink never
// watches.
func TestObserverInstalledAsShipped(t *testing.T) {
	const ns, nsMore = "e2e-install", "e2e-install-more"
	w := startWorldWith(t, worldOptions{
		policy: eksPolicy,
		rules:  "testdata/observe-install-rules.yaml",
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml",
			controlplane.RepoFile(t, observerComponent+"rbac.yaml"), "testdata/observe-install-rbac.yaml"},
		aggregated: true,
		admission:  true,
		// The name the component's statefulset-patch.yaml passes.
		admissionWebhookConfigName: "options-record-observer",
	})
	ctx := context.Background()
	vwcs := w.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations()

	// The component's guard, for the e2e sink's user (the component names
	// the ingest ServiceAccount).
	guard, err := os.ReadFile(controlplane.RepoFile(t, observerComponent+"guard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	guard = []byte(strings.ReplaceAll(string(guard), "system:serviceaccount:options-record:options-record", sinkUser))
	if !strings.Contains(string(guard), sinkUser) {
		t.Fatal("guard.yaml no longer names the ingest ServiceAccount")
	}
	kubectlOK(t, w, controlplane.AdminUser, guard, "apply", "-f", "-")

	// The component's configuration, as installed without cert-manager on
	// an apiserver outside the cluster network: caBundle and a URL patched
	// in, nothing else.
	raw, err := os.ReadFile(controlplane.RepoFile(t, observerComponent+"validatingwebhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(raw, &vwc); err != nil {
		t.Fatal(err)
	}
	if len(vwc.Webhooks) != 1 || len(vwc.Webhooks[0].Rules) != 0 || vwc.Name != "options-record-observer" ||
		vwc.Webhooks[0].ClientConfig.Service == nil || vwc.Webhooks[0].ClientConfig.Service.Path == nil {
		t.Fatalf("the shipped configuration: %d webhooks, name %s; want one, without rules, reached by a Service's path", len(vwc.Webhooks), vwc.Name)
	}
	url := "https://" + w.admissionAddr + *vwc.Webhooks[0].ClientConfig.Service.Path
	vwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.caPEM}
	rendered, err := yaml.Marshal(&vwc)
	if err != nil {
		t.Fatal(err)
	}
	kubectlOK(t, w, controlplane.AdminUser, rendered, "apply", "-f", "-")

	// The sink fills the rules: the rule's namespace and resources.
	var filled *admissionregistrationv1.ValidatingWebhookConfiguration
	eventually(t, time.Minute, "the sink fills the configuration's rules", func() error {
		filled = ok(vwcs.Get(ctx, vwc.Name, metav1.GetOptions{}))(t)
		if len(filled.Webhooks) != 1 || len(filled.Webhooks[0].Rules) == 0 {
			return fmt.Errorf("no rules yet")
		}
		return nil
	})
	if got := selectedNamespaces(filled); !slices.Equal(got, []string{ns}) {
		t.Errorf("namespaces selected: %v, want [%s]", got, ns)
	}
	if got := selectedResources(filled); !slices.Equal(got, []string{"/configmaps", "/secrets", "e2e.example.com/widgets"}) {
		t.Errorf("resources selected: %v", got)
	}
	if h := filled.Webhooks[0]; !reflect.DeepEqual(h.ClientConfig, vwc.Webhooks[0].ClientConfig) || *h.TimeoutSeconds != *vwc.Webhooks[0].TimeoutSeconds {
		t.Errorf("the sink changed how its webhook is reached: %+v timeout %d", h.ClientConfig, *h.TimeoutSeconds)
	}

	// Applying the manifests again (client-side, then server-side) keeps
	// the sink's rules.
	for _, apply := range [][]string{{"apply", "-f", "-"}, {"apply", "--server-side", "-f", "-"}} {
		kubectlOK(t, w, controlplane.AdminUser, rendered, apply...)
		if got := selectedResources(ok(vwcs.Get(ctx, vwc.Name, metav1.GetOptions{}))(t)); !slices.Equal(got, selectedResources(filled)) {
			t.Errorf("after kubectl %s the webhook selects %v, want %v", strings.Join(apply, " "), got, selectedResources(filled))
		}
	}
	// The guard refuses an update by the sink that would make the webhook
	// fail writes or send reviews elsewhere (a dry run: nothing changes
	// before the guard is in force).
	sinkVWCs := w.kube(t, sinkUser).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	for what, change := range map[string]func(*admissionregistrationv1.ValidatingWebhook){
		"failurePolicy Fail": func(h *admissionregistrationv1.ValidatingWebhook) {
			h.FailurePolicy = ptr(admissionregistrationv1.Fail)
		},
		"another URL": func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.URL = ptr("https://127.0.0.1:1/observe")
		},
	} {
		eventually(t, 30*time.Second, "the guard refuses the sink's update to "+what, func() error {
			c := ok(vwcs.Get(ctx, vwc.Name, metav1.GetOptions{}))(t)
			change(&c.Webhooks[0])
			_, err := sinkVWCs.Update(ctx, c, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil || !strings.Contains(err.Error(), "options-record-observer-guard") {
				return fmt.Errorf("the sink's update: %v", err)
			}
			return nil
		})
	}

	// The users, the custom resource, and the plugin's rights in ns.
	w.namespace(t, ns)
	w.allowWidgets(t)
	registerAggregated(t, w)
	kubectlOK(t, w, controlplane.AdminUser, []byte(strings.ReplaceAll(aggRBAC, "e2e-agg-shop", ns)), "apply", "-f", "-")
	w.probeObserver(t, ns, true)

	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	aliceDyn := dynamic.NewForConfigOrDie(w.config("alice")).Resource(widgets).Namespace(ns)
	bobDyn := dynamic.NewForConfigOrDie(w.config("bob")).Resource(widgets).Namespace(ns)
	made := observedChanges(t, ns, w.config("alice"), w.config("alice"))
	cm, widget := made.cm, made.widget
	ok(0, bob.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}))(t)
	ok(0, bob.CoreV1().Secrets(ns).Delete(ctx, "token", metav1.DeleteOptions{}))(t)
	ok(0, bobDyn.Delete(ctx, "gear", metav1.DeleteOptions{}))(t)

	bin := buildPlugin(t)
	aliceConfig := w.cp.WriteKubeconfig(t, "alice")
	// kubectl record deletions names bob, with the state before each.
	var deletions pluginRun
	eventually(t, time.Minute, "bob's three deletions, with their states, in kubectl record deletions", func() error {
		deletions = plugin(t, bin, aliceConfig, nil, "deletions", "-n", ns)
		for _, want := range []string{"configmaps settings bob", "secrets token bob", "widgets.e2e.example.com gear bob"} {
			if !slices.ContainsFunc(strings.Split(deletions.out, "\n"), func(l string) bool {
				return strings.HasPrefix(strings.Join(strings.Fields(l), " "), want)
			}) {
				return fmt.Errorf("no row %q: exit %d\n%s%s", want, deletions.code, deletions.out, deletions.errOut)
			}
		}
		if n := w.count(t, `SELECT count(*) FROM deletions WHERE namespace = '`+ns+`' AND username = 'bob' AND NOT state_unknown`); n != 3 {
			return fmt.Errorf("%d of bob's deletions with their state", n)
		}
		return nil
	})
	t.Logf("kubectl record deletions -n %s:\n%s", ns, deletions.out)
	// The state before each: the plugin names the deletion, kubectl gets it
	// (a get of one deletion carries its lastState; a list does not).
	lastState := func(target string) map[string]any {
		t.Helper()
		r := plugin(t, bin, aliceConfig, nil, "deletions", target, "-n", ns, "-o", "name")
		names := strings.Fields(r.out)
		if r.code != 0 || len(names) != 1 {
			t.Fatalf("deletions %s -o name: exit %d\n%s%s", target, r.code, r.out, r.errOut)
		}
		var d struct {
			Actor     struct{ Username string } `json:"actor"`
			LastState map[string]any            `json:"lastState"`
		}
		if err := json.Unmarshal([]byte(kubectlOK(t, w, "alice", nil, "get", names[0], "-n", ns, "-o", "json")), &d); err != nil || d.Actor.Username != "bob" {
			t.Fatalf("kubectl get %s: %v, deleted by %q", names[0], err, d.Actor.Username)
		}
		return d.LastState
	}
	if got := lastState("cm/settings")["data"]; !reflect.DeepEqual(got, map[string]any{"level": "two"}) {
		t.Errorf("the ConfigMap's state before bob's deletion: %v", got)
	}
	if got := lastState("widgets/gear")["spec"]; !reflect.DeepEqual(got, map[string]any{"teeth": float64(24)}) {
		t.Errorf("the widget's state before bob's deletion: %v", got)
	}
	secState := lastState("secrets/token")
	if data, _ := secState["data"].(map[string]any); data == nil || !strings.HasPrefix(fmt.Sprint(data["password"]), "hmac-sha256-v2:") {
		t.Errorf("the Secret's state before bob's deletion: %v; want its value as a digest", secState)
	}
	if n := w.count(t, `SELECT count(*) FROM object_versions WHERE namespace = '`+ns+`' AND object::text LIKE '%hunter2%'`); n != 0 {
		t.Errorf("the Secret's values are in the record (%d versions)", n)
	}

	// kubectl record restore brings each back as it was; a Secret held as
	// digests is refused, saying why.
	for _, target := range []string{"cm/settings", "widgets/gear"} {
		if r := plugin(t, bin, aliceConfig, nil, "restore", target, "-n", ns, "--yes"); r.code != 0 || !strings.Contains(r.out, "Restored ") {
			t.Fatalf("kubectl record restore %s: exit %d\n%s%s", target, r.code, r.out, r.errOut)
		}
	}
	if got := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}))(t); !reflect.DeepEqual(got.Data, cm.Data) {
		t.Errorf("restored ConfigMap data %v, want %v", got.Data, cm.Data)
	}
	if got := ok(aliceDyn.Get(ctx, "gear", metav1.GetOptions{}))(t); !reflect.DeepEqual(got.Object["spec"], widget.Object["spec"]) {
		t.Errorf("restored widget spec %v, want %v", got.Object["spec"], widget.Object["spec"])
	}
	r := plugin(t, bin, aliceConfig, nil, "restore", "secrets/token", "-n", ns, "--yes")
	t.Logf("kubectl record restore secrets/token: exit %d %s", r.code, r.errOut)
	if _, err := alice.CoreV1().Secrets(ns).Get(ctx, "token", metav1.GetOptions{}); r.code == 0 || err == nil || !strings.Contains(r.errOut, "digests") {
		t.Errorf("kubectl record restore secrets/token: exit %d, %v, %q; want it refused, saying its values are digests", r.code, err, r.errOut)
	}

	t.Run("a new rule's namespace is reviewed once the sink widens the configuration", func(t *testing.T) {
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"install-more","namespace":"options-record"},
			"spec":{"namespaces":["`+nsMore+`"],"resources":[{"group":"","resources":["configmaps"]}]}}`), "")
		eventually(t, time.Minute, "the sink adds "+nsMore+" to the configuration", func() error {
			got := selectedNamespaces(ok(vwcs.Get(ctx, vwc.Name, metav1.GetOptions{}))(t))
			if !slices.Equal(got, []string{ns, nsMore}) {
				return fmt.Errorf("namespaces selected: %v", got)
			}
			return nil
		})
		w.namespace(t, nsMore)
		w.probeObserver(t, nsMore, true)
		ok(alice.CoreV1().ConfigMaps(nsMore).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
			Data: map[string]string{"level": "more"}}, metav1.CreateOptions{}))(t)
		ok(0, bob.CoreV1().ConfigMaps(nsMore).Delete(ctx, "extra", metav1.DeleteOptions{}))(t)
		eventually(t, time.Minute, "bob's deletion of extra, with its state", func() error {
			var unknown bool
			var level string
			if err := w.db.QueryRow(ctx, `SELECT state_unknown, coalesce(prior_object->'data'->>'level', '') FROM deletions
				WHERE namespace = $1 AND name = 'extra' AND username = 'bob'`, nsMore).Scan(&unknown, &level); err != nil {
				return err
			}
			if unknown || level != "more" {
				return fmt.Errorf("state unknown %v, level %q", unknown, level)
			}
			return nil
		})
	})

	t.Run("the sink never watches, and reads and writes only its configuration", func(t *testing.T) {
		verbs := sinkRequests(t, w.auditLog)
		t.Logf("the sink's requests seen by the apiserver: %v", verbs)
		if verbs["watch"] > 0 {
			t.Errorf("the sink issued %d watches", verbs["watch"])
		}
		if verbs["get validatingwebhookconfigurations"] == 0 || verbs["update validatingwebhookconfigurations"] < 2 {
			t.Errorf("the audit log shows no GET, or fewer than two UPDATEs, of the configuration by the sink (is it logged?)")
		}
	})
}

// selectedNamespaces are the names the webhook's namespace selector
// admits (kubernetes.io/metadata.name In), sorted.
func selectedNamespaces(c *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
	var out []string
	if sel := c.Webhooks[0].NamespaceSelector; sel != nil {
		for _, e := range sel.MatchExpressions {
			if e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpIn {
				out = append(out, e.Values...)
			}
		}
	}
	slices.Sort(out)
	return out
}

// selectedResources are the group/resource pairs of the webhook's rules,
// sorted.
func selectedResources(c *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
	var out []string
	for _, r := range c.Webhooks[0].Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, g+"/"+res)
			}
		}
	}
	slices.Sort(out)
	return out
}

// sinkRequests counts the sink's requests in the apiserver's audit log by
// verb, and by "verb resource": every stage of a watch (an open one has
// only ResponseStarted), the ResponseComplete stage of the others; dry
// runs left out.
func sinkRequests(t *testing.T, auditLog string) map[string]int {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verbs := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb, Stage, RequestURI string
			User                    struct{ Username string }
			ObjectRef               *struct{ Resource string }
		}
		// (The test's own dry runs as the sink are not the sink's.)
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != sinkUser || strings.Contains(ev.RequestURI, "dryRun=") {
			continue
		}
		if ev.Stage == "ResponseComplete" || ev.Verb == "watch" {
			verbs[ev.Verb]++
			if ev.ObjectRef != nil {
				verbs[ev.Verb+" "+ev.ObjectRef.Resource]++
			}
		}
	}
	return verbs
}
