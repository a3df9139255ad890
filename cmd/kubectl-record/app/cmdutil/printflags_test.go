package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		o := NewPrintFlags(cmd)
		if err := cmd.Flags().Set("output", format); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := o.Print(&out, list); err != nil {
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

// TestYAMLKeepsEveryRecordedString: -o yaml prints strings YAML does not
// take raw (C1 controls, NEL, DEL), on which kubectl's YAML printer fails
// or which it folds, and they read back as recorded; typed as served.
func TestYAMLKeepsEveryRecordedString(t *testing.T) {
	agent := "a\u0080b\u0085c\u007fd\u2028e"
	ch := &record.Change{ObjectMeta: metav1.ObjectMeta{Name: "u-1.key", Namespace: "prod"},
		ChangeRecord: record.ChangeRecord{Verb: "update", Actor: &record.Actor{Username: "mallory", UserAgent: agent}}}
	for _, obj := range []runtime.Object{ch, &record.ChangeList{Items: []record.Change{*ch}}} {
		cmd := &cobra.Command{}
		o := NewPrintFlags(cmd)
		if err := cmd.Flags().Set("output", "yaml"); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := o.Print(&out, obj); err != nil {
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
