package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/options-record/options-record/test/framework/browser"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// startUI runs kubectl record ui as the user of kubeconfig and returns the
// URL it prints.
func startUI(t *testing.T, bin, kubeconfig, ns string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kubectl-record"), append([]string{"ui", "--no-browser", "-n", ns}, extra...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+t.TempDir())
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl record ui: %v %s", err, errOut.String())
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("no URL in %q", line)
	}
	return strings.Fields(line[i:])[0]
}

// TestTimelineInABrowser: kubectl record ui, driven in Debian's chromium
// against the real control plane and a real record: the timeline, a
// filter by user kept in the URL, an object's history with the changed
// key in the diff, a restore with its dry-run preview that brings the
// object back in the apiserver; a user without rights sees nothing of the
// namespace; an object whose annotations and user agent carry markup is
// shown as text and runs nothing.
func TestTimelineInABrowser(t *testing.T) {
	w := startWorldWith(t, worldOptions{aggregated: true,
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	bin := buildPlugin(t)
	registerAggregated(t, w)
	const ns = "e2e-agg-shop"
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", ns)
	kubectlOK(t, w, controlplane.AdminUser, []byte(aggRBAC), "apply", "-f", "-")
	shots := os.Getenv("OPTIONS_RECORD_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}

	kubectlOK(t, w, "bob", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-config"},"data":{"mode":"test"}}`), "create", "-n", ns, "-f", "-")
	kubectlOK(t, w, "bob", nil, "patch", "-n", ns, "configmap", "app-config", "--type=merge", "-p", `{"data":{"mode":"live"}}`)
	// Hostile content: markup in an annotation and in the user agent.
	cfg := w.cp.UserConfig("bob")
	cfg.UserAgent = `<script>alert("ua")</script><img src=x onerror=alert(2)>` + "rtl\u202eexe"
	evil := kubernetes.NewForConfigOrDie(cfg)
	if _, err := evil.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "xss",
		Annotations: map[string]string{"note": `<img src=x onerror=alert(1)><script>alert(3)</script>`}}, Data: map[string]string{"k": "v"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := evil.CoreV1().ConfigMaps(ns).Patch(context.Background(), "xss", "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"note":"<b onmouseover=alert(4)>bold</b>","rtl":"txt.\u202eexe"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectlOK(t, w, "bob", nil, "delete", "-n", ns, "configmap", "app-config")
	alice := w.cp.WriteKubeconfig(t, "alice")
	eventually(t, time.Minute, "the deletion in the record", func() error {
		r := plugin(t, bin, alice, nil, "history", "cm/app-config", "-n", ns, "-o", "name")
		if strings.Count(r.out, "\n") < 3 {
			return fmt.Errorf("exit %d %q %s", r.code, r.out, r.errOut)
		}
		return nil
	})

	url := startUI(t, bin, alice, ns)
	ctx, dialogs := browser.Start(t, 1366, 768)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	browser.Do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(css(`.lane[data-object*="app-config"]`)))
	rendered := browser.Attr(t, ctx, "body", "data-rendered")
	lanes := browser.Eval[[]string](t, ctx, `[...document.querySelectorAll(".lane")].map(l => l.dataset.object)`)
	status := browser.Text(t, ctx, "#status")
	// Render time is logged here, measured by the ui package's benchmark.
	t.Logf("first render of %d lanes: %s ms; lanes %v", len(lanes), rendered, lanes)
	browser.Screenshot(t, ctx, shots, "timeline")
	if _, err := strconv.Atoi(rendered); err != nil || !strings.Contains(status, fmt.Sprintf("on %d objects", len(lanes))) {
		t.Errorf("the first render: %q ms, status %q, %d lanes", rendered, status, len(lanes))
	}

	t.Run("recorded markup is text, and runs nothing", func(t *testing.T) {
		imgs := browser.Eval[int](t, ctx, `document.querySelectorAll("img").length`)
		scripts := browser.Eval[int](t, ctx, `document.querySelectorAll("script").length`)
		title := browser.Attr(t, ctx, `.lane[data-object*="xss"] .mark`, "title")
		browser.Do(t, ctx, chromedp.Click(css(`.lane[data-object*="xss"] .label`)), chromedp.WaitVisible(css(`#versions tbody tr`)),
			chromedp.Click(css(`#show-diff`)), chromedp.WaitVisible(css(`#diff tr[data-path]`)))
		diffText := browser.Text(t, ctx, "#diff")
		after := browser.Eval[int](t, ctx, `document.querySelectorAll("img, b, script:not([src='app.js'])").length`)
		browser.Screenshot(t, ctx, shots, "hostile-diff")
		if imgs != 0 || scripts != 1 || after != 0 || dialogs.Load() != 0 {
			t.Errorf("markup ran: %d img, %d script, %d after the diff, %d dialogs", imgs, scripts, after, dialogs.Load())
		}
		if !strings.Contains(title, `<script>alert("ua")</script>`) {
			t.Errorf("the user agent, as text in the mark's title: %q", title)
		}
		if !strings.Contains(diffText, "<img src=x onerror=alert(1)>") || !strings.Contains(diffText, "<b onmouseover=alert(4)>bold</b>") {
			t.Errorf("the annotation, as text in the diff:\n%s", diffText)
		}
		// A direction override would show the rest of its line reversed:
		// the diff quotes values, the page escapes what it writes.
		if !strings.Contains(diffText, `txt.\u202eexe`) || strings.Contains(diffText, "\u202e") {
			t.Errorf("the direction override, escaped in the diff:\n%s", diffText)
		}
		if !strings.Contains(title, `rtl\u{202e}exe`) || strings.Contains(title, "\u202e") {
			t.Errorf("the direction override in the user agent, escaped in the mark's title: %q", title)
		}
	})

	t.Run("a filter by user is kept in the URL", func(t *testing.T) {
		browser.Do(t, ctx, chromedp.SetValue(css(`#f-user`), "alice"), chromedp.Click(css(`#f-apply`)))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("0 events")`,
			chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("alice's (empty) timeline: %v; status %q", err, browser.Text(t, ctx, "#status"))
		}
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(loc, "user=alice") || !strings.Contains(loc, "namespace="+ns) {
			t.Errorf("the filters are not in the URL: %s", loc)
		}
		browser.Do(t, ctx, chromedp.Navigate(strings.Replace(loc, "user=alice", "user=bob", 1)), chromedp.WaitVisible(css(`.lane[data-object*="app-config"]`)))
		if lanes := browser.Eval[[]string](t, ctx, `[...document.querySelectorAll(".lane")].map(l => l.dataset.object)`); len(lanes) != 2 {
			t.Errorf("bob's objects: %v, want app-config and xss", lanes)
		}
		// A colleague opens the shared link on their own machine.
		shared := startUI(t, bin, w.cp.WriteKubeconfig(t, "alice"), "default", "--link", strings.Replace(loc, "user=alice", "user=bob", 1))
		cctx, _ := browser.Start(t, 1366, 768)
		browser.Do(t, cctx, chromedp.Navigate(shared), chromedp.WaitVisible(css(`.lane[data-object*="app-config"]`)))
		if lanes := browser.Eval[[]string](t, cctx, `[...document.querySelectorAll(".lane")].map(l => l.dataset.object)`); len(lanes) != 2 {
			t.Errorf("the shared link's view: %v, want bob's two objects in %s", lanes, ns)
		}
		// A narrow window keeps every control.
		nctx, _ := browser.Start(t, 600, 900)
		narrow := startUI(t, bin, w.cp.WriteKubeconfig(t, "alice"), ns)
		browser.Do(t, nctx, chromedp.Navigate(narrow), chromedp.WaitVisible(css(`.lane`)), chromedp.WaitVisible(css(`#f-apply`)))
		browser.Screenshot(t, nctx, shots, "narrow")
	})

	t.Run("history, diff, and a restore with its dry-run preview", func(t *testing.T) {
		browser.Do(t, ctx, chromedp.Click(css(`.lane[data-object*="app-config"] .label`)), chromedp.WaitVisible(css(`#versions tbody tr`)))
		if rows := browser.Eval[int](t, ctx, `document.querySelectorAll("#versions tbody tr").length`); rows != 3 {
			t.Fatalf("versions of app-config: %d rows, want delete, patch, create", rows)
		}
		// Each version shows its short name.
		if names := browser.Eval[string](t, ctx, `[...document.querySelectorAll("#versions tbody tr td:last-child")].map(td => td.textContent).join(" ")`); !regexp.MustCompile(`^app-config-[0-9a-f]{8} app-config-[0-9a-f]{8} app-config-[0-9a-f]{8}$`).MatchString(names) {
			t.Errorf("the versions' short names: %q", names)
		}
		// From the create to the patch: the changed key.
		browser.Do(t, ctx, chromedp.Click(css(`#versions tbody tr:nth-child(3) input[name=from]`)),
			chromedp.Click(css(`#versions tbody tr:nth-child(2) input[name=to]`)),
			chromedp.Click(css(`#show-diff`)), chromedp.WaitVisible(css(`#diff tr[data-path="/data/mode"]`)))
		diffText := browser.Text(t, ctx, `#diff tr[data-path="/data/mode"]`)
		browser.Screenshot(t, ctx, shots, "diff")
		if !strings.Contains(diffText, `"test"`) || !strings.Contains(diffText, `"live"`) {
			t.Errorf("the diff of /data/mode: %q", diffText)
		}
		// Restore the patch's state: the dry run first, then the confirmation.
		browser.Do(t, ctx, chromedp.Click(css(`#restore`)), chromedp.WaitVisible(css(`#restore-panel`)))
		preview := browser.Text(t, ctx, "#restore-preview")
		browser.Screenshot(t, ctx, shots, "restore-preview")
		if !strings.Contains(preview, "Succeeded, create") {
			t.Fatalf("the dry run: %q", preview)
		}
		if _, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err == nil {
			t.Fatal("the dry run restored the object")
		}
		// The confirmation restores what the preview showed, or nothing: the
		// record rewritten in between (as the ingest credential can) is
		// refused and nothing is written.
		rewrite := func(from, to string) {
			t.Helper()
			if _, err := w.db.Exec(context.Background(), `UPDATE object_versions SET object = replace(object::text, $1, $2)::json
				WHERE namespace = $3 AND name = 'app-config'`, from, to, ns); err != nil {
				t.Fatal(err)
			}
		}
		rewrite(`"live"`, `"evil"`)
		browser.Do(t, ctx, chromedp.Click(css(`#restore-confirm`)), chromedp.WaitVisible(css(`#error`)))
		if msg := browser.Text(t, ctx, "#error"); !strings.Contains(msg, "not the one you reviewed") {
			t.Errorf("the confirmation after a rewrite of the record: %q", msg)
		}
		if _, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err == nil {
			t.Fatal("the confirmation restored a state the preview did not show")
		}
		rewrite(`"evil"`, `"live"`)
		browser.Do(t, ctx, chromedp.Click(css(`#restore-confirm`)), chromedp.WaitVisible(css(`#restore-outcome`)))
		if outcome := browser.Text(t, ctx, "#restore-outcome"); !strings.Contains(outcome, "Succeeded") {
			t.Fatalf("the restore: %q", outcome)
		}
		cm, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{})
		if err != nil || cm.Data["mode"] != "live" {
			t.Errorf("app-config after the restore: %v %v", err, cm)
		}
		if got := impersonatedWrites(t, w, "configmaps", ns, "app-config"); len(got) == 0 || !strings.HasSuffix(got[len(got)-1], " as alice") {
			t.Errorf("the restore's write impersonated %v, want alice", got)
		}
	})

	t.Run("a plan is a reviewable list before it runs", func(t *testing.T) {
		kubectlOK(t, w, "bob", nil, "patch", "-n", ns, "configmap", "app-config", "--type=merge", "-p", `{"data":{"mode":"broken"}}`)
		browser.Do(t, ctx, chromedp.SetValue(css(`#p-kind`), "undo"), chromedp.SetValue(css(`#p-user`), "bob"),
			chromedp.SetValue(css(`#p-time`), "1m"))
		var steps string
		eventually(t, time.Minute, "an undo plan with the update", func() error {
			browser.Do(t, ctx, chromedp.Click(css(`#plan-form button[type=submit]`)))
			time.Sleep(300 * time.Millisecond)
			steps = browser.Text(t, ctx, "#plan-result")
			if !strings.Contains(steps, "update") || !strings.Contains(steps, "app-config") {
				return fmt.Errorf("plan: %q", steps)
			}
			return nil
		})
		browser.Screenshot(t, ctx, shots, "plan")
		if cm, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err != nil || cm.Data["mode"] != "broken" {
			t.Errorf("planning changed the cluster: %v %v", err, cm)
		}
		// Executing it: the dry run is listed first, and only the
		// confirmation writes.
		browser.Do(t, ctx, chromedp.Click(css(`#plan-run`)), chromedp.WaitVisible(css(`#plan-confirm`)))
		if dry := browser.Text(t, ctx, "#plan-result"); !strings.Contains(dry, "Dry run: Succeeded") {
			t.Fatalf("the plan's dry run: %q", dry)
		}
		if cm, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err != nil || cm.Data["mode"] != "broken" {
			t.Errorf("the dry run changed the cluster: %v %v", err, cm)
		}
		browser.Do(t, ctx, chromedp.Click(css(`#plan-confirm`)), chromedp.WaitVisible(css(`#plan-executed`)))
		if done := browser.Text(t, ctx, "#plan-executed"); !strings.Contains(done, "Executed: Succeeded") {
			t.Errorf("the plan: %q", done)
		}
		if cm, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "app-config", metav1.GetOptions{}); err != nil || cm.Data["mode"] != "live" {
			t.Errorf("app-config after the undo plan: %v %v", err, cm)
		}
		if _, err := w.kube(t, controlplane.AdminUser).CoreV1().ConfigMaps(ns).Get(context.Background(), "xss", metav1.GetOptions{}); err == nil {
			t.Error("xss, which bob created, is still there after the undo plan")
		}
	})

	t.Run("a value holding a selector selects only itself", func(t *testing.T) {
		// The plugin escapes the value: no user is named so, nothing shows;
		// unescaped it would have been a second actor.username (bob).
		if r := plugin(t, bin, alice, nil, "deletions", "-n", ns, "--user", "x,actor.username=bob", "-o", "name"); r.code != 0 || r.out != "" {
			t.Errorf("deletions by the user \"x,actor.username=bob\": exit %d %q %s", r.code, r.out, r.errOut)
		}
		if r := plugin(t, bin, alice, nil, "deletions", "-n", ns, "--user", "bob", "-o", "name"); r.code != 0 || r.out == "" {
			t.Errorf("deletions by bob: exit %d %q %s", r.code, r.out, r.errOut)
		}
		// Through the kube-apiserver, a field given twice is refused.
		_, errOut, err := w.cp.Kubectl(t, "alice", nil, "get", "deletions", "-n", ns, "--field-selector", "actor.username=x,actor.username=bob")
		if err == nil || !strings.Contains(errOut, "actor.username is given more than once") {
			t.Errorf("a repeated field: %v %s", err, errOut)
		}
	})

	t.Run("a user without rights sees nothing of the namespace", func(t *testing.T) {
		eveURL := startUI(t, bin, w.cp.WriteKubeconfig(t, "eve"), ns)
		ectx, _ := browser.Start(t, 1366, 768)
		browser.Do(t, ectx, chromedp.Navigate(eveURL), chromedp.WaitVisible(css(`#error`)))
		errText := browser.Text(t, ectx, "#error")
		lanes := browser.Eval[int](t, ectx, `document.querySelectorAll(".lane").length`)
		browser.Screenshot(t, ectx, shots, "no-rights")
		if lanes != 0 || !strings.Contains(errText, "you may not list changes in namespace "+ns) || strings.Contains(errText, "app-config") {
			t.Errorf("eve: %d lanes, error %q", lanes, errText)
		}
	})
}
