package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/escape"
	"github.com/options-record/options-record/api/history/diff"
	record "github.com/options-record/options-record/api/record/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		args           []string
		typ, name, err string
	}{
		{nil, "", "", ""},
		{[]string{"cm"}, "cm", "", ""},
		{[]string{"cm/app-config"}, "cm", "app-config", ""},
		{[]string{"deploy", "web"}, "deploy", "web", ""},
		{[]string{"deployment.apps/web"}, "deployment.apps", "web", ""},
		{[]string{"cm/a/b"}, "", "", "want TYPE/NAME"},
		{[]string{"cm/a", "b"}, "", "", "want TYPE/NAME or TYPE NAME"},
		{[]string{"/a"}, "", "", "no type"},
		{[]string{"a", "b", "c"}, "", "", "3 arguments"},
	} {
		typ, name, err := parseTarget(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !isUsage(err) {
				t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || typ != c.typ || name != c.name {
			t.Errorf("%q: %q %q %v, want %q %q", c.args, typ, name, err, c.typ, c.name)
		}
	}
}

// TestCellsAreOneLineOfText: recorded strings cannot break a table or
// drive the terminal.
func TestCellsAreOneLineOfText(t *testing.T) {
	for in, want := range map[string]string{
		"app-config":            "app-config",
		"":                      "<none>",
		"a\nb":                  `"a\nb"`,
		"tab\there":             `"tab\there"`,
		"\x1b[31mred":           `"\x1b[31mred"`,
		"evil\u202etxt.exe":     `"evil\u202etxt.exe"`,
		"naïve-日本":              "naïve-日本",
		"<script>x</script>":    "<script>x</script>", // a terminal shows markup as text
		"carriage\rreturn":      `"carriage\rreturn"`,
		"nul\x00byte":           `"nul\x00byte"`,
		"zero\u200bwidth space": `"zero\u200bwidth space"`,
		"no\u00a0break":         `"no\u00a0break"`, // issue 31: sql quoted it, the plugin did not
		"hangul\u3164filler":    `"hangul\u3164filler"`,
	} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestDeletionsTable: the table of deletions, cascades under the first
// deletion of theirs, hostile values escaped (testdata/deletions.golden).
func TestDeletionsTable(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return base }
	var items []record.DeletionRecord
	data, err := os.ReadFile(filepath.Join("testdata", "deletions.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &items); err != nil {
		t.Fatal(err)
	}
	metas := make([]metav1.ObjectMeta, len(items))
	for i := range items {
		metas[i] = metav1.ObjectMeta{Namespace: items[i].Object.Namespace, Name: items[i].Object.UID + ".key"}
	}
	for _, wide := range []bool{false, true} {
		var out bytes.Buffer
		if err := printTable(&out, deletionColumns, deletionRows(items, metas), wide, wide); err != nil {
			t.Fatal(err)
		}
		name := "deletions.golden"
		if wide {
			name = "deletions-wide-all-namespaces.golden"
		}
		golden(t, name, out.Bytes())
	}
}

// TestDiffOutput: the keyed diff of a Deployment whose container was
// inserted in the middle, and a change whose values hold control
// characters, as the terminal shows them (testdata/diff*.golden).
func TestDiffOutput(t *testing.T) {
	load := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "api", "history", "diff", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	var out bytes.Buffer
	changes := diff.Diff(load("deployment-before.yaml"), load("deployment-after.yaml"), diff.Options{})
	if err := writeDiff(&out, "deployments.apps/web", "v1 (update by bob, 2m ago)", "live (resourceVersion 57)", changes, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "diff-deployment.golden", out.Bytes())

	out.Reset()
	hostile := diff.Diff(map[string]any{"data": map[string]any{"motd": "hello"}},
		map[string]any{"data": map[string]any{"motd": "line1\nline2\x1b[2J", "evil\u202e": "x\ry"}}, diff.Options{})
	if err := writeDiff(&out, "configmaps/a\nb", "from", "to\x1b]0;title\x07", hostile, true); err != nil {
		t.Fatal(err)
	}
	golden(t, "diff-hostile.golden", out.Bytes())
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.ContainsAny(strings.NewReplacer("\x1b[31m", "", "\x1b[32m", "", "\x1b[36m", "", "\x1b[0m", "").Replace(l), "\x1b\r\x07") {
			t.Errorf("a control character reaches the terminal: %q", l)
		}
	}
}

// TestManifestFileNames: a recorded name cannot leave the export's
// directory, hide a file or carry control characters into a file name.
func TestManifestFileNames(t *testing.T) {
	for _, c := range []struct {
		obj  record.ObjectReference
		want string
	}{
		{record.ObjectReference{Resource: "configmaps", Name: "app-config"}, "configmaps_app-config.yaml"},
		{record.ObjectReference{APIGroup: "apps", Resource: "deployments", Name: "web"}, "deployments.apps_web.yaml"},
		{record.ObjectReference{APIGroup: "rbac.authorization.k8s.io", Resource: "roles", Name: "system:viewer"}, "roles.rbac.authorization.k8s.io_system:viewer.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "../../etc/passwd"}, "configmaps_..%2F..%2Fetc%2Fpasswd.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: ".."}, "configmaps_...yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "a\nb"}, "configmaps_a%0Ab.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: `a\b`}, "configmaps_a%5Cb.yaml"},
		{record.ObjectReference{APIGroup: "rbac.authorization.k8s.io", Resource: "roles", Name: "x\u202elmay.exe"}, "roles.rbac.authorization.k8s.io_x%E2%80%AElmay.exe.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "50%\u200b"}, "configmaps_50%25%E2%80%8B.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "naïve-日本"}, "configmaps_naïve-日本.yaml"},
		{record.ObjectReference{Resource: "configmaps", Name: "no\u00a0break\u3164"}, "configmaps_no%C2%A0break%E3%85%A4.yaml"},
		{record.ObjectReference{Resource: "", Name: "x"}, ""},
		{record.ObjectReference{Resource: "configmaps", Name: ""}, ""},
	} {
		got, err := manifestFile(c.obj)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%+v: %q %v, want %q", c.obj, got, err, c.want)
		}
	}
}

// TestErrorsSayWhatToDo: the answers of the record API become errors that
// say what to do, with the exit code of their kind (testdata/errors.golden).
func TestErrorsSayWhatToDo(t *testing.T) {
	gr := schema.GroupResource{Group: record.GroupName, Resource: "deletions"}
	var out bytes.Buffer
	for _, c := range []struct {
		name string
		err  error
	}{
		{"the API is not installed", apierrors.NewGenericServerResponse(404, "list", gr, "", "", 0, false)},
		{"an object not found", apierrors.NewNotFound(gr, "5e0c.8c3b")},
		{"RBAC", apierrors.NewForbidden(gr, "", errors.New(`User "eve" cannot list resource "deletions" in API group "record.optionsrecord.io" in the namespace "shop"`))},
		{"no credentials", apierrors.NewUnauthorized("Unauthorized")},
		{"the API does not answer", apierrors.NewServiceUnavailable("the server is currently unable to handle the request")},
		{"a bad request", apierrors.NewBadRequest("field label nope not supported")},
		{"not an API answer", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
	} {
		err := explain(c.err, "list deletions in namespace shop")
		code := 1
		var ce *codedError
		if errors.As(err, &ce) {
			code = ce.code
		}
		fmt.Fprintf(&out, "%s: exit %d\n  %v\n", c.name, code, err)
	}
	golden(t, "errors.golden", out.Bytes())
}

// TestEscapeTextLeavesNoControlToTheTerminal: C1 controls (U+009B is a
// CSI on some terminals), bidirectional overrides and zero-width
// characters, which JSON leaves raw, are escaped; readable text is not.
func TestEscapeTextLeavesNoControlToTheTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, naïve 日本":  "plain text, naïve 日本",
		"a\u009b2Jb":            `a\u009b2Jb`,
		"evil\u202etxt":         `evil\u202etxt`,
		"zero\u200bwidth":       `zero\u200bwidth`,
		"tab\tnew\nline\x1b[0m": `tab\tnew\nline\x1b[0m`,
		"no\u00a0break":         `no\u00a0break`,
		"bad\xffutf8":           `bad\xffutf8`,
	} {
		if got := escape.Line(in); got != want {
			t.Errorf("escape.Line(%q) = %s, want %s", in, got, want)
		}
	}
	for _, l := range valueLines(map[string]any{"k": "x\u009by\u202ez"}) {
		if strings.ContainsAny(l, "\u009b\u202e") {
			t.Errorf("a diff line carries a control character: %q", l)
		}
	}
	for _, l := range valueLines("x\u009by") {
		if strings.ContainsRune(l, '\u009b') {
			t.Errorf("a scalar diff line carries U+009B: %q", l)
		}
	}
}

// TestImpersonationNeedsTheAPIServer: --as with --record-server is refused
// before any request, not dropped (the request would run as the token's
// owner).
func TestImpersonationNeedsTheAPIServer(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: shop}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, as := range [][]string{{"--as", "alice"}, {"--as-group", "admins"}, {"--as-uid", "1234"}} {
		var out, errOut bytes.Buffer
		args := append([]string{"deletions", "--record-server", srv.URL, "--record-token", "t0ken", "--kubeconfig", kubeconfig}, as...)
		code := Main(args, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code != 2 || !strings.Contains(errOut.String(), "kube-apiserver") {
			t.Errorf("%v: exit %d, %q; want a usage error", as, code, errOut.String())
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the record server", n)
	}
}

// TestActivityCellsAreEscaped: a refused request's subresource is whatever
// its sender wrote (tabs, backspaces, direction overrides): the activity
// table shows it quoted, in its own column.
func TestActivityCellsAreEscaped(t *testing.T) {
	hostile := "a\tsecrets\tkube-system\u202e\b\b"
	at := record.AttemptRecord{AttemptedAt: metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)), Verb: "patch", Subresource: hostile,
		Object: record.ObjectReference{Resource: "configmaps", Namespace: "prod", Name: "x"}}
	for _, wide := range []bool{false, true} {
		var out bytes.Buffer
		if err := printTable(&out, activityColumns, activityRows([]act{attemptAct(at)}), false, wide); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\t\b\u202e") || !strings.Contains(out.String(), strconv.QuoteToGraphic(hostile)) {
			t.Errorf("activity table:\n%q", out.String())
		}
	}
}

// TestYAMLKeepsEveryRecordedString: -o yaml prints strings YAML does not
// take raw (C1 controls, NEL, DEL), on which kubectl's YAML printer fails
// or which it folds, and they read back as recorded; typed as served.
func TestYAMLKeepsEveryRecordedString(t *testing.T) {
	agent := "a\u0080b\u0085c\u007fd\u2028e"
	ch := &record.Change{ObjectMeta: metav1.ObjectMeta{Name: "u-1.key", Namespace: "prod"},
		ChangeRecord: record.ChangeRecord{Verb: "update", Actor: &record.Actor{Username: "mallory", UserAgent: agent}}}
	for _, obj := range []runtime.Object{ch, &record.ChangeList{Items: []record.Change{*ch}}} {
		cmd := &cobra.Command{}
		o := newOutput(cmd)
		if err := cmd.Flags().Set("output", "yaml"); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := o.print(&out, obj); err != nil {
			t.Fatalf("%T -o yaml: %v", obj, err)
		}
		var got struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Actor      struct {
				UserAgent string `json:"userAgent"`
			} `json:"actor"`
			Items []struct {
				Kind  string `json:"kind"`
				Actor struct {
					UserAgent string `json:"userAgent"`
				} `json:"actor"`
			} `json:"items"`
		}
		if err := yaml.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%T: %v\n%s", obj, err, out.String())
		}
		switch {
		case got.Kind == "Change":
			if got.Actor.UserAgent != agent || got.APIVersion != record.SchemeGroupVersion.String() {
				t.Errorf("change: %+v\n%s", got, out.String())
			}
		case got.Kind == "List" && len(got.Items) == 1:
			if got.Items[0].Actor.UserAgent != agent || got.Items[0].Kind != "Change" {
				t.Errorf("list: %+v\n%s", got, out.String())
			}
		default:
			t.Errorf("%T: %s", obj, out.String())
		}
	}
}

// TestExportFileNamesDifferInMoreThanCase: Roles "Edit" and "edit" would be
// one file on a case-insensitive file system; the second gets its uid.
func TestExportFileNamesDifferInMoreThanCase(t *testing.T) {
	var e exportOptions
	a := e.claim("roles.rbac.authorization.k8s.io_Edit.yaml", "1111aaaa-0000")
	b := e.claim("roles.rbac.authorization.k8s.io_edit.yaml", "2222bbbb-0000")
	c := e.claim("roles.rbac.authorization.k8s.io_view.yaml", "3333cccc-0000")
	if a != "roles.rbac.authorization.k8s.io_Edit.yaml" || b != "roles.rbac.authorization.k8s.io_edit.2222bbbb.yaml" || c != "roles.rbac.authorization.k8s.io_view.yaml" {
		t.Errorf("file names %q %q %q", a, b, c)
	}
	// A name composed (é) and decomposed (e and U+0301) is one file on
	// macOS; and an object may be named as a twin's file would be.
	d := e.claim("roles.rbac.authorization.k8s.io_caf\u00e9.yaml", "4444dddd-0000")
	f := e.claim("roles.rbac.authorization.k8s.io_cafe\u0301.yaml", "5555eeee-0000")
	g := e.claim("roles.rbac.authorization.k8s.io_edit.2222bbbb.yaml", "2222bbbb-0000")
	if f == d || !strings.Contains(f, "5555eeee") || g == b {
		t.Errorf("file names %q %q, %q after %q", d, f, g, b)
	}
}
