package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestPrintersLeaveNoControlToTheTerminal: a recorded user agent holding a
// C1 CSI (U+009B), a direction override, a zero-width space and a tag
// character beyond U+FFFF reaches no terminal raw. -o json escapes them
// always, as JSON \u escapes that decode to the recorded string; on a
// terminal -o yaml and -o jsonpath show Go escapes (yaml with a note);
// to a pipe -o yaml keeps every string as recorded. Readable non-ASCII
// text stays as it is.
func TestPrintersLeaveNoControlToTheTerminal(t *testing.T) {
	const agent = "naïve 日本 a\u009b2Jb \u202eexe.txt zero\u200bwidth tag\U000e0041 del\u007f"
	const hostile = "\u009b\u202e\u200b\U000e0041\u007f"
	list := &record.ChangeList{Items: []record.Change{{ObjectMeta: metav1.ObjectMeta{Name: "u-1.key", Namespace: "prod"},
		ChangeRecord: record.ChangeRecord{Verb: "update", Actor: &record.Actor{Username: "mallory", UserAgent: agent}}}}}
	print := func(format string, terminal bool) string {
		t.Helper()
		was := isTerminal
		isTerminal = func(io.Writer) bool { return terminal }
		defer func() { isTerminal = was }()
		cmd := &cobra.Command{}
		o := newOutput(cmd)
		if err := cmd.Flags().Set("output", format); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := o.print(&out, list); err != nil {
			t.Fatalf("-o %s: %v", format, err)
		}
		return out.String()
	}
	type doc struct {
		Items []struct {
			Actor struct {
				UserAgent string `json:"userAgent"`
			} `json:"actor"`
		} `json:"items"`
	}
	for _, terminal := range []bool{false, true} {
		out := print("json", terminal)
		var got doc
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Items) != 1 || got.Items[0].Actor.UserAgent != agent {
			t.Errorf("-o json (terminal %v) does not decode to the recorded agent: %v %+v", terminal, err, got)
		}
		if strings.ContainsAny(out, hostile) || !strings.Contains(out, "naïve 日本") || !strings.Contains(out, `\u009b2Jb \u202eexe`) {
			t.Errorf("-o json (terminal %v):\n%s", terminal, out)
		}
	}
	out := print("yaml", true)
	if strings.ContainsAny(out, hostile) || !strings.HasPrefix(out, "# On this terminal") || !strings.Contains(out, `\u202eexe.txt`) || !strings.Contains(out, "naïve 日本") {
		t.Errorf("-o yaml on a terminal:\n%s", out)
	}
	var got doc
	if err := yaml.Unmarshal([]byte(print("yaml", false)), &got); err != nil || len(got.Items) != 1 || got.Items[0].Actor.UserAgent != agent {
		t.Errorf("-o yaml to a pipe does not keep the recorded agent: %v %+v", err, got)
	}
	if out := print("jsonpath={.items[*].actor.userAgent}", true); strings.ContainsAny(out, hostile) || !strings.Contains(out, `a\u009b2Jb`) {
		t.Errorf("-o jsonpath on a terminal: %q", out)
	}
}

// TestTheCommandsErrorReachesStderrEscaped: an error quoting what the
// server answered (which may quote a recorded string) is written by the
// command itself, through Main as the binary runs it, with every control
// and direction character escaped.
func TestTheCommandsErrorReachesStderrEscaped(t *testing.T) {
	const hostile = "deployments \"web\x1b]0;owned\x07\u009b2J\u202etxt.exe\" is forbidden\r\n\x1b[2Kall clear"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: hostile})
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := Main([]string{"deletions", "-n", "shop", "--record-server", srv.URL, "--record-token", "t0ken"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	got := errOut.String()
	if code != 3 || strings.ContainsAny(strings.TrimSuffix(got, "\n"), "\x1b\x07\r\n\u009b\u202e") ||
		!strings.Contains(got, `web\x1b]0;owned\a\u009b2J\u202etxt.exe`) || !strings.HasPrefix(got, "error: you may not") {
		t.Errorf("exit %d, stderr %q", code, got)
	}
}
