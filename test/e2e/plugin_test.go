package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// buildPlugin builds cmd/kubectl-record into a directory of its own, which
// can be put on kubectl's PATH.
func buildPlugin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-record"), "github.com/options-record/options-record/cmd/kubectl-record")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-record: %v\n%s", err, out)
	}
	return dir
}

// pluginRun is one run of the plugin binary.
type pluginRun struct {
	out, errOut string
	code        int
}

// plugin runs the kubectl-record binary of dir with a kubeconfig, as a user
// would type it.
func plugin(t *testing.T, dir, kubeconfig string, stdin []byte, args ...string) pluginRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "kubectl-record"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(filepath.Dir(kubeconfig), "plugin-cache-"+filepath.Base(kubeconfig)))
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := pluginRun{out: out.String(), errOut: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("kubectl-record %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// TestPluginIncident: the kubectl-record binary, run as a subprocess by a
// token user and by a client-certificate user with the kubeconfigs they
// have, through an incident: who deleted the ConfigMap, its history, its
// manifest, a restore (dry run shown, refused without a terminal, then
// --yes), and the object back as it was before the deletion. Users without
// the rights get a clear refusal and a non-zero exit code.
func TestPluginIncident(t *testing.T) {
	w := startWorldWith(t, worldOptions{aggregated: true, recordDirect: true,
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	bin := buildPlugin(t)
	// Before the APIService exists: the plugin says the API is missing.
	if r := plugin(t, bin, w.cp.WriteKubeconfig(t, "alice"), nil, "deletions", "-n", "default"); r.code != 4 || !strings.Contains(r.errOut, "is not installed in this cluster") {
		t.Errorf("without the aggregated API: exit %d %s%s", r.code, r.out, r.errOut)
	}
	registerAggregated(t, w)
	const ns = "e2e-agg-shop"
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", ns)
	kubectlOK(t, w, controlplane.AdminUser, []byte(aggRBAC), "apply", "-f", "-")
	alice := w.cp.WriteKubeconfig(t, "alice")                                                                          // a token
	carol := w.cp.WriteKubeconfigAuth(t, "agg-carol", w.cp.ClientCertAuth(t, "agg-carol", []string{"cert-operators"})) // a client certificate
	eve := w.cp.WriteKubeconfig(t, "eve")

	// bob creates the ConfigMap, changes it, and deletes it.
	kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config","labels":{"app":"shop"}},"data":{"db":"postgres://shop","mode":"test"}}`),
		"create", "-n", ns, "-f", "-")
	kubectlOK(t, w, "bob", nil, "patch", "-n", ns, "configmap", "app-config", "--type=merge", "-p", `{"data":{"mode":"live"}}`)
	kubectlOK(t, w, "bob", nil, "delete", "-n", ns, "configmap", "app-config")

	var deletions pluginRun
	eventually(t, time.Minute, "the deletion in kubectl record deletions", func() error {
		deletions = plugin(t, bin, carol, nil, "deletions", "-n", ns)
		if deletions.code != 0 || !strings.Contains(deletions.out, "app-config") {
			return fmt.Errorf("exit %d: %s%s", deletions.code, deletions.out, deletions.errOut)
		}
		return nil
	})
	t.Logf("kubectl record deletions -n %s (client certificate):\n%s", ns, deletions.out)

	t.Run("deletions names who deleted what", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(deletions.out), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "RESOURCE OBJECT DELETED-BY DELETED INITIATED-BY" {
			t.Fatalf("want a header and one row:\n%s", deletions.out)
		}
		if row := strings.Fields(lines[1]); row[0] != "configmaps" || row[1] != "app-config" || row[2] != "bob" || row[4] != "<none>" {
			t.Errorf("row %v", row)
		}
		// A type as kubectl knows it, short names included, and -o of kubectl's printers.
		r := plugin(t, bin, alice, nil, "deletions", "cm/app-config", "-n", ns, "-o", "name")
		if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.out), "deletion.record.optionsrecord.io/") {
			t.Errorf("-o name: exit %d %q %s", r.code, r.out, r.errOut)
		}
		if r := plugin(t, bin, alice, nil, "deletions", "secrets", "-n", ns); r.code != 0 || strings.Contains(r.out, "app-config") {
			t.Errorf("deletions of secrets: exit %d %q %s", r.code, r.out, r.errOut)
		}
		if r := plugin(t, bin, alice, nil, "deletions", "nosuchtype", "-n", ns); r.code != 4 || !strings.Contains(r.errOut, `doesn't have a resource type "nosuchtype"`) {
			t.Errorf("an unknown type: exit %d %s", r.code, r.errOut)
		}
	})

	// The incident runs on the short names the tables show: no long name
	// is copied from here on.
	var versions []string // newest first: delete, patch, create
	t.Run("history shows every version", func(t *testing.T) {
		r := plugin(t, bin, alice, nil, "history", "configmap", "app-config", "-n", ns)
		t.Logf("kubectl record history configmap app-config:\n%s", r.out)
		var verbs []string
		for _, l := range strings.Split(strings.TrimSpace(r.out), "\n")[1:] {
			if f := strings.Fields(l); len(f) == 6 {
				verbs = append(verbs, f[1]) // CHANGED VERB BY UID RESTORABLE VERSION
				versions = append(versions, f[5])
			}
		}
		if r.code != 0 || strings.Join(verbs, " ") != "delete patch create" {
			t.Errorf("exit %d, verbs %v:\n%s%s", r.code, verbs, r.out, r.errOut)
		}
		for _, v := range versions {
			if !regexp.MustCompile(`^app-config-[0-9a-f]{8}$`).MatchString(v) {
				t.Errorf("VERSION %q: want the short name app-config-<8 hex digits>:\n%s", v, r.out)
			}
		}
		// Completion offers them, newest first.
		c := plugin(t, bin, alice, nil, "__complete", "diff", "cm/app-config", "-n", ns, "--from", "")
		var offered []string
		for _, l := range strings.Split(c.out, "\n") {
			if n, _, ok := strings.Cut(l, "\t"); ok && strings.HasPrefix(n, "app-config-") {
				offered = append(offered, n)
			}
		}
		if c.code != 0 || strings.Join(offered, " ") != strings.Join(versions, " ") {
			t.Errorf("completion of --from offered %v, want %v:\n%s%s", offered, versions, c.out, c.errOut)
		}
	})

	t.Run("history --proof without a log writes nothing and says so", func(t *testing.T) {
		// This sink keeps no tamper-evident log (no --log-signing-key-file).
		kubectlOK(t, w, controlplane.AdminUser, []byte(proofRBAC), "apply", "-f", "-")
		dir := filepath.Join(t.TempDir(), "proofs")
		var r pluginRun
		eventually(t, 30*time.Second, "alice may get changes/proof", func() error {
			if r = plugin(t, bin, alice, nil, "history", "cm/app-config", "-n", ns, "--proof", dir); r.code == 3 {
				return fmt.Errorf("exit %d %s", r.code, r.errOut)
			}
			return nil
		})
		if r.code != 4 || !strings.Contains(r.errOut, "no proofs: the record keeps no tamper-evident log") || strings.Contains(r.errOut, "wrote") {
			t.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the proof directory was made: %v", err)
		}
	})

	t.Run("diff shows what a change changed, and what a restore would", func(t *testing.T) {
		if len(versions) != 3 {
			t.Fatalf("versions from history: %v", versions)
		}
		// --to by a unique prefix of the short name's digits.
		r := plugin(t, bin, carol, nil, "diff", "cm/app-config", "-n", ns, "--from", versions[2], "--to", versions[1][:len(versions[1])-3])
		t.Logf("kubectl record diff cm/app-config --from <create> --to <patch>:\n%s", r.out)
		if r.code != 0 || !strings.Contains(r.out, "@@ /data/mode (replace) @@\n-\"test\"\n+\"live\"\n") || strings.Contains(r.out, "resourceVersion") {
			t.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
		// The newest change is the deletion: the whole object goes.
		if r := plugin(t, bin, carol, nil, "diff", "cm/app-config", "-n", ns); r.code != 0 || !strings.Contains(r.out, "@@ / (remove) @@") {
			t.Errorf("the newest change: exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
	})

	t.Run("diff matches a Deployment's containers by name", func(t *testing.T) {
		deploy := func(containers string) []byte {
			return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,
				"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[` + containers + `]}}}}`)
		}
		app, metrics := `{"name":"app","image":"shop/web:1.4"}`, `{"name":"metrics","image":"prom/exporter:0.9"}`
		kubectlOK(t, w, "bob", deploy(app+","+metrics), "apply", "--server-side", "-n", ns, "-f", "-")
		kubectlOK(t, w, "bob", deploy(app+`,{"name":"proxy","image":"envoyproxy/envoy:v1.30"},`+metrics), "apply", "--server-side", "-n", ns, "-f", "-")
		// bob's two versions (the controllers change the Deployment too).
		var versions []string
		eventually(t, time.Minute, "bob's second apply in the record", func() error {
			r := plugin(t, bin, alice, nil, "history", "deploy/web", "-n", ns, "--user", "bob", "-o", "jsonpath={.items[*].metadata.name}")
			if versions = strings.Fields(r.out); r.code != 0 || len(versions) != 2 {
				return fmt.Errorf("exit %d %q %s", r.code, r.out, r.errOut)
			}
			return nil
		})
		r := plugin(t, bin, alice, nil, "diff", "deploy", "web", "-n", ns, "--from", versions[1], "--to", versions[0])
		t.Logf("kubectl record diff deploy web --from <bob's first> --to <bob's second>:\n%s", r.out)
		if r.code != 0 || strings.Count(r.out, "@@ /spec/template/spec/containers") != 1 || !strings.Contains(r.out, "@@ /spec/template/spec/containers/1 (add) @@") ||
			!strings.Contains(r.out, "+name: proxy") || !strings.Contains(r.out, "+image: envoyproxy/envoy:v1.30") {
			t.Errorf("want one insertion, of the proxy container: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
	})

	t.Run("manifest is the state before the deletion, clean", func(t *testing.T) {
		r := plugin(t, bin, carol, nil, "manifest", "cm/app-config", "-n", ns)
		var m struct {
			Metadata map[string]any    `json:"metadata"`
			Data     map[string]string `json:"data"`
			Status   any               `json:"status"`
		}
		if err := yaml.Unmarshal([]byte(r.out), &m); r.code != 0 || err != nil {
			t.Fatalf("exit %d %v:\n%s%s", r.code, err, r.out, r.errOut)
		}
		if m.Data["mode"] != "live" || m.Metadata["uid"] != nil || m.Metadata["resourceVersion"] != nil || m.Metadata["managedFields"] != nil {
			t.Errorf("manifest:\n%s", r.out)
		}
		// kubectl accepts it as it is.
		if out, errOut, err := w.cp.KubectlConfig(t, alice, []byte(r.out), "apply", "--dry-run=server", "-n", ns, "-f", "-"); err != nil {
			t.Errorf("kubectl apply --dry-run=server: %v %s%s", err, out, errOut)
		}
	})

	t.Run("restore shows the dry run, asks, and puts the object back as the caller", func(t *testing.T) {
		// The certificate user may view, not restore.
		if r := plugin(t, bin, carol, nil, "restore", "cm/app-config", "-n", ns, "--yes"); r.code != 3 || !strings.Contains(r.errOut, "you may not create restores") {
			t.Errorf("carol: exit %d %s%s", r.code, r.out, r.errOut)
		}
		// Without a terminal and without --yes: the dry run, then no restore.
		r := plugin(t, bin, alice, nil, "restore", "cm/app-config", "-n", ns)
		if r.code != 2 || !strings.Contains(r.out, "Dry run: restoring configmaps/app-config in namespace "+ns) ||
			!strings.Contains(r.out, "action: create") || !strings.Contains(r.errOut, "pass --yes") {
			t.Errorf("without --yes: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if _, _, err := w.cp.Kubectl(t, controlplane.AdminUser, nil, "get", "configmap", "app-config", "-n", ns); err == nil {
			t.Fatal("restored without a confirmation")
		}
		// The version bob's patch made, by the short name history showed.
		r = plugin(t, bin, alice, nil, "restore", "cm/app-config", "-n", ns, "--version", versions[1], "--yes")
		t.Logf("kubectl record restore cm/app-config --version %s --yes:\n%s%s", versions[1], r.out, r.errOut)
		if r.code != 0 || !strings.Contains(r.out, "Restored configmaps/app-config") || !strings.Contains(r.out, "to version "+versions[1]+" (patch by bob") {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		// The real run carried the digest of the state its dry run showed.
		if d := regexp.MustCompile(`recorded state: (sha256:[0-9a-f]{64})`).FindStringSubmatch(r.out); d == nil {
			t.Errorf("the plugin showed no digest of the recorded state:\n%s", r.out)
		} else if got := carriedStateDigests(t, w, "app-config"); !slices.Contains(got, d[1]) {
			t.Errorf("no real restore of app-config carried the dry run's digest %s: %q", d[1], got)
		}
		cm, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
		if err != nil || cm.Data["mode"] != "live" || cm.Data["db"] != "postgres://shop" || cm.Labels["app"] != "shop" {
			t.Fatalf("after the restore: %v %+v", err, cm)
		}
		// Restored as alice, by impersonation: the apiserver's audit log says so.
		if got := impersonatedWrites(t, w, "configmaps", ns, "app-config"); len(got) == 0 || !strings.HasSuffix(got[len(got)-1], " as alice") {
			t.Errorf("the restore's write impersonated %v, want alice", got)
		}
		// The restore made a new incarnation (a new uid). Until the record
		// has its create, a second restore is refused: the live object is
		// not the one the record knows last.
		if r := plugin(t, bin, alice, nil, "restore", "cm/app-config", "-n", ns, "--yes"); r.code == 0 {
			if !strings.Contains(r.out, "nothing to do") {
				t.Errorf("again: exit 0 but not 'nothing to do':\n%s%s", r.out, r.errOut)
			}
		} else if r.code != 5 || !strings.Contains(r.errOut, "--force") {
			t.Errorf("again, before the record has the restore: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		eventually(t, time.Minute, "the restore's create in the history, as alice", func() error {
			r := plugin(t, bin, alice, nil, "history", "cm/app-config", "-n", ns, "-o", "wide")
			if first := strings.SplitN(r.out, "\n", 3); len(first) < 2 || !strings.Contains(first[1], "create") || !strings.Contains(first[1], "(as alice)") {
				return fmt.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
			}
			return nil
		})
		// Now the live object holds the newest recorded state.
		if r := plugin(t, bin, alice, nil, "restore", "cm/app-config", "-n", ns, "--yes"); r.code != 0 || !strings.Contains(r.out, "nothing to do") {
			t.Errorf("again: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
	})

	var beforeBob string // a time between the restore and bob's next changes
	t.Run("plans: undo one user, then go back to a time", func(t *testing.T) {
		kube := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns)
		// A second boundary: plan times have a second's precision.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
		before := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
		beforeBob = before
		time.Sleep(1100 * time.Millisecond)
		kubectlOK(t, w, "bob", nil, "patch", "-n", ns, "configmap", "app-config", "--type=merge", "-p", `{"data":{"mode":"broken"}}`)
		kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"junk"},"data":{"x":"y"}}`), "create", "-n", ns, "-f", "-")
		var r pluginRun
		eventually(t, time.Minute, "an undo plan of bob's two changes", func() error {
			r = plugin(t, bin, alice, nil, "plan", "undo", "--user", "bob", "--since", before, "-n", ns, "--resources", "cm")
			if r.code != 0 || !strings.Contains(r.out, "1 update") || !strings.Contains(r.out, "1 delete") {
				return fmt.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
			}
			return nil
		})
		t.Logf("kubectl record plan undo --user bob:\n%s", r.out)
		m := regexp.MustCompile(`plan execute (\S+) -n`).FindStringSubmatch(r.out)
		if m == nil {
			t.Fatalf("no plan name in:\n%s", r.out)
		}
		if r := plugin(t, bin, alice, nil, "plan", "execute", m[1], "-n", ns); r.code != 2 || !strings.Contains(r.out, "Dry run of plan") {
			t.Errorf("execute without --yes: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if r := plugin(t, bin, carol, nil, "plan", "show", m[1], "-n", ns); r.code == 0 {
			t.Errorf("carol read alice's plan:\n%s", r.out)
		}
		r = plugin(t, bin, alice, nil, "plan", "execute", m[1], "-n", ns, "--yes")
		t.Logf("kubectl record plan execute --yes:\n%s%s", r.out, r.errOut)
		if r.code != 0 || !strings.Contains(r.out, "Plan "+m[1]+": Succeeded") {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		// The real run carried the dry run's digest (the server refuses a
		// real run without one): the plugin showed it, and the runs of the
		// plan ran the steps it digests.
		if d := regexp.MustCompile(`digest (sha256:[0-9a-f]{64})`).FindStringSubmatch(r.out); d == nil {
			t.Errorf("the plugin showed no digest of the dry run:\n%s", r.out)
		} else if got := kubectlOK(t, w, "alice", nil, "get", "restores", "-n", ns, "-o", "jsonpath={.items[*].status.planDigest}"); !strings.Contains(got, d[1]) {
			t.Errorf("no Restore of plan %s carries the digest %s: %q", m[1], d[1], got)
		}
		// Generated names are valid whoever the user is: a ServiceAccount,
		// an e-mail user (no --name given).
		for _, u := range []string{"system:serviceaccount:" + ns + ":deployer", "Bob@Example.com"} {
			if r := plugin(t, bin, alice, nil, "plan", "undo", "--user", u, "--since", before, "-n", ns, "--resources", "cm"); r.code != 0 || !strings.Contains(r.out, "nothing to do") {
				t.Errorf("plan undo --user %s: exit %d\n%s%s", u, r.code, r.out, r.errOut)
			}
		}
		if cm, err := kube.Get(context.Background(), "app-config", metav1.GetOptions{}); err != nil || cm.Data["mode"] != "live" {
			t.Errorf("app-config after the undo: %v %v", err, cm.Data)
		}
		if _, err := kube.Get(context.Background(), "junk", metav1.GetOptions{}); err == nil {
			t.Error("junk is still there after the undo")
		}

		// As of a time: bob breaks it again; the namespace goes back.
		time.Sleep(1100 * time.Millisecond)
		at := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
		time.Sleep(1100 * time.Millisecond)
		kubectlOK(t, w, "bob", nil, "patch", "-n", ns, "configmap", "app-config", "--type=merge", "-p", `{"data":{"mode":"broken-again"}}`)
		attempt := 0
		eventually(t, time.Minute, "an as-of plan with the update", func() error {
			attempt++ // a plan's name is taken once created
			r = plugin(t, bin, alice, nil, "plan", "as-of", at, "-n", ns, "--resources", "configmaps", "--name", fmt.Sprintf("before-bob-%d", attempt))
			if r.code != 0 || !strings.Contains(r.out, "1 update") {
				return fmt.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
			}
			return nil
		})
		t.Logf("kubectl record plan as-of:\n%s", r.out)
		if r := plugin(t, bin, alice, nil, "plan", "execute", fmt.Sprintf("before-bob-%d", attempt), "-n", ns, "--yes"); r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if cm, err := kube.Get(context.Background(), "app-config", metav1.GetOptions{}); err != nil || cm.Data["mode"] != "live" {
			t.Errorf("app-config after the as-of plan: %v %v", err, cm.Data)
		}
	})

	t.Run("export writes the namespace as it was for kubectl apply", func(t *testing.T) {
		if beforeBob == "" {
			t.Fatal("no time from the plans step")
		}
		dir := filepath.Join(t.TempDir(), "shop")
		r := plugin(t, bin, alice, nil, "export", "-n", ns, "--as-of", beforeBob, "-o", dir)
		t.Logf("kubectl record export --as-of %s:\n%s%s", beforeBob, r.out, r.errOut)
		if r.code != 0 || !strings.Contains(r.out, "Exported") {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		var names []string
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
		t.Logf("files: %v", names)
		data, err := os.ReadFile(filepath.Join(dir, "configmaps_app-config.yaml"))
		var cm struct {
			Data     map[string]string `json:"data"`
			Metadata map[string]any    `json:"metadata"`
		}
		if err != nil || yaml.Unmarshal(data, &cm) != nil || cm.Data["mode"] != "live" || cm.Metadata["uid"] != nil {
			t.Errorf("app-config as of %s: %v\n%s", beforeBob, err, data)
		}
		if _, err := os.Stat(filepath.Join(dir, "configmaps_junk.yaml")); err == nil {
			t.Error("junk, created after that time, was exported")
		}
		if _, err := os.Stat(filepath.Join(dir, "deployments.apps_web.yaml")); err != nil {
			t.Errorf("the Deployment: %v", err)
		}
		// kubectl applies the directory as it is.
		if out, errOut, err := w.cp.KubectlConfig(t, alice, nil, "apply", "--dry-run=server", "-n", ns, "-f", dir); err != nil {
			t.Errorf("kubectl apply --dry-run=server -f %s: %v\n%s%s", dir, err, out, errOut)
		}
		// Never over an existing file; never for a user without rights.
		if r := plugin(t, bin, alice, nil, "export", "-n", ns, "--as-of", beforeBob, "-o", dir); r.code == 0 || !strings.Contains(r.errOut, "never overwrites") {
			t.Errorf("export into the same directory again: exit %d %s", r.code, r.errOut)
		}
		if r := plugin(t, bin, eve, nil, "export", "-n", ns, "-o", filepath.Join(t.TempDir(), "eve")); r.code != 3 {
			t.Errorf("eve: exit %d %s%s", r.code, r.out, r.errOut)
		}
	})

	t.Run("activity lists what one user did, refusals included", func(t *testing.T) {
		if _, _, err := w.cp.KubectlConfig(t, carol, nil, "delete", "configmap", "app-config", "-n", ns); err == nil {
			t.Fatal("carol, a viewer, deleted the ConfigMap")
		}
		eventually(t, time.Minute, "carol's refused delete in her activity", func() error {
			r := plugin(t, bin, alice, nil, "activity", "--user", "agg-carol", "-n", ns)
			if r.code != 0 || !strings.Contains(r.out, "refused 403 Forbidden") || !strings.Contains(r.out, "app-config") {
				return fmt.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
			}
			return nil
		})
		r := plugin(t, bin, alice, nil, "activity", "--user", "bob", "-n", ns, "-o", "wide")
		t.Logf("kubectl record activity --user bob -o wide:\n%s", r.out)
		for _, want := range []string{"create", "patch", "delete", "app-config", "junk", "done"} {
			if r.code != 0 || !strings.Contains(r.out, want) {
				t.Errorf("bob's activity lacks %q: exit %d\n%s%s", want, r.code, r.out, r.errOut)
			}
		}
	})

	t.Run("completion offers the names the record holds", func(t *testing.T) {
		// As a shell calls it: the words typed so far, the last one being
		// completed (kubectl_complete-record passes kubectl's the same way).
		complete := func(words ...string) string {
			cmd := exec.Command(filepath.Join(bin, "kubectl-record"), append([]string{"__complete"}, words...)...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+alice, "KUBECACHEDIR="+t.TempDir())
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("__complete %v: %v", words, err)
			}
			return string(out)
		}
		if out := complete("history", "-n", ns, "cm/"); !strings.Contains(out, "cm/app-config\n") || !strings.Contains(out, "cm/junk\n") {
			t.Errorf("history -n %s cm/<TAB>:\n%s", ns, out)
		}
		if out := complete("restore", "-n", ns, "configmaps", "a"); !strings.Contains(out, "app-config\n") || strings.Contains(out, "junk") {
			t.Errorf("restore -n %s configmaps a<TAB>:\n%s", ns, out)
		}
		r := plugin(t, bin, alice, nil, "completion", "bash")
		if r.code != 0 || !strings.Contains(r.out, "__start_kubectl-record") {
			t.Errorf("completion bash: exit %d %.200s", r.code, r.out)
		}
	})

	t.Run("a client-certificate user restores too", func(t *testing.T) {
		// dave authenticates with a client certificate and holds the
		// restorer role and edit in the namespace.
		kubectlOK(t, w, controlplane.AdminUser, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-restores, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-record-restorer}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: agg-dave}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-reads, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-record-reader}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: agg-dave}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-edits, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: agg-dave}]
`), "apply", "-f", "-")
		dave := w.cp.WriteKubeconfigAuth(t, "agg-dave", w.cp.ClientCertAuth(t, "agg-dave", nil))
		kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"tier":"gold"}}`), "create", "-n", ns, "-f", "-")
		kubectlOK(t, w, "bob", nil, "delete", "-n", ns, "configmap", "settings")
		eventually(t, time.Minute, "the deletion of settings, for dave", func() error {
			r := plugin(t, bin, dave, nil, "deletions", "cm/settings", "-n", ns)
			if r.code != 0 || !strings.Contains(r.out, "settings") {
				return fmt.Errorf("exit %d %s%s", r.code, r.out, r.errOut)
			}
			return nil
		})
		if r := plugin(t, bin, dave, nil, "restore", "cm/settings", "-n", ns, "--yes"); r.code != 0 || !strings.Contains(r.out, "Restored configmaps/settings") {
			t.Fatalf("dave's restore: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		cm, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil || cm.Data["tier"] != "gold" {
			t.Errorf("settings after dave's restore: %v %v", err, cm)
		}
		if got := impersonatedWrites(t, w, "configmaps", ns, "settings"); len(got) == 0 || !strings.HasSuffix(got[len(got)-1], " as agg-dave") {
			t.Errorf("the restore's write impersonated %v, want agg-dave", got)
		}
	})

	t.Run("a user without rights is refused, with a non-zero exit code", func(t *testing.T) {
		r := plugin(t, bin, eve, nil, "deletions", "-n", ns)
		if r.code != 3 || !strings.Contains(r.errOut, "you may not list deletions in namespace "+ns) || strings.Contains(r.out, "app-config") {
			t.Errorf("eve: exit %d %q %s", r.code, r.out, r.errOut)
		}
	})

	t.Run("the record served directly to a bearer token", func(t *testing.T) {
		ca := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(ca, w.caPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		direct := func(kubeconfig string, args ...string) pluginRun {
			return plugin(t, bin, kubeconfig, nil, append([]string{"--record-server", "https://" + w.recordAddr,
				"--record-certificate-authority", ca}, args...)...)
		}
		// alice's kubeconfig holds her token: it is used for the record too.
		r := direct(alice, "deletions", "-n", ns)
		if r.code != 0 || !strings.Contains(r.out, "settings") {
			t.Errorf("alice, directly: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if r := direct(alice, "history", "cm/app-config", "-n", ns, "-o", "name"); r.code != 0 || !strings.Contains(r.out, "change.record.optionsrecord.io/") {
			t.Errorf("history, directly: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		// RBAC decides as through the kube-apiserver; a bad token is refused.
		if r := direct(eve, "deletions", "-n", ns); r.code != 3 || strings.Contains(r.out, "settings") {
			t.Errorf("eve, directly: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if r := direct(alice, "--record-token", "not-a-token", "deletions", "-n", ns); r.code != 3 || !strings.Contains(r.errOut, "not authenticated") {
			t.Errorf("a bad token: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		// The kubeconfig of a certificate user has no token: say so.
		if r := direct(carol, "deletions", "-n", ns); r.code != 2 || !strings.Contains(r.errOut, "needs a bearer token") {
			t.Errorf("a certificate user, directly: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		// A ServiceAccount's token carries extras (its credential id): a
		// restore through the direct door impersonates them too, so the
		// cluster's RBAC, admission and audit log see the whole identity.
		kubectlOK(t, w, controlplane.AdminUser, []byte(`apiVersion: v1
kind: ServiceAccount
metadata: {name: restorer, namespace: `+ns+`}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sa-restores, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-record-restorer}
subjects: [{kind: ServiceAccount, name: restorer, namespace: `+ns+`}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sa-reads, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: options-record-e2e-record-reader}
subjects: [{kind: ServiceAccount, name: restorer, namespace: `+ns+`}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sa-edits, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: restorer, namespace: `+ns+`}]
`), "apply", "-f", "-")
		tok, err := w.kube(t, controlplane.AdminUser).CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), "restorer",
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"sa-restored"},"data":{"k":"v"}}`), "create", "-n", ns, "-f", "-")
		kubectlOK(t, w, "bob", nil, "delete", "-n", ns, "configmap", "sa-restored")
		eventually(t, time.Minute, "the deletion of sa-restored, for the ServiceAccount", func() error {
			if r := direct(alice, "--record-token", tok.Status.Token, "deletions", "cm/sa-restored", "-n", ns); r.code != 0 || !strings.Contains(r.out, "sa-restored") {
				return fmt.Errorf("exit %d %s%s", r.code, r.out, r.errOut)
			}
			return nil
		})
		if r := direct(alice, "--record-token", tok.Status.Token, "restore", "cm/sa-restored", "-n", ns, "--yes"); r.code != 0 {
			t.Fatalf("the ServiceAccount's restore, directly: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		sa := "system:serviceaccount:" + ns + ":restorer"
		eventually(t, 30*time.Second, "the impersonated create of sa-restored in the audit log", func() error {
			data, err := os.ReadFile(w.auditLog)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(data), "\n") {
				var ev struct {
					Verb, Stage      string
					ImpersonatedUser *struct {
						Username, UID string
						Extra         map[string][]string
					}
					ObjectRef *struct{ Resource, Namespace, Name string }
				}
				if json.Unmarshal([]byte(line), &ev) != nil || ev.Verb != "create" || ev.Stage != "ResponseComplete" || ev.ImpersonatedUser == nil ||
					ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != ns || !strings.Contains(line, `"sa-restored"`) {
					continue
				}
				iu := ev.ImpersonatedUser
				if iu.Username != sa || iu.UID == "" || len(iu.Extra["authentication.kubernetes.io/credential-id"]) == 0 {
					t.Errorf("the direct door's restore impersonated %+v; want %s with its uid and its credential-id extra", iu, sa)
				}
				return nil
			}
			return errors.New("not logged yet")
		})
	})

	t.Run("kubectl runs it as a plugin", func(t *testing.T) {
		// kubectl passes no flags of its own to a plugin: the kubeconfig
		// comes from KUBECONFIG, as a user's shell has it.
		cmd := exec.Command(w.cp.KubectlPath(), "record", "deletions", "-n", ns, "-o", "name")
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+alice,
			"KUBECACHEDIR="+t.TempDir())
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), "deletion.record.optionsrecord.io/") {
			t.Errorf("kubectl record deletions: %v %q", err, out)
		}
	})
}

// carriedStateDigests are the stateDigest each real (not dry-run) restore
// of a ConfigMap named name carried in its request, as the restores table
// recorded it ("" for none).
func carriedStateDigests(t *testing.T, w *world, name string) []string {
	t.Helper()
	rows, err := w.db.Query(context.Background(), `SELECT coalesce(request->'options'->>'stateDigest', '') FROM options_record_api.restores
		WHERE kind = 'version' AND NOT dry_run AND plan->0->'object'->>'resource' = 'configmaps' AND plan->0->'object'->>'name' = $1`, name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
