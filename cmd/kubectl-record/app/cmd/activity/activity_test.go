package activity

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// TestActivityCellsAreEscaped: a refused request's subresource is whatever
// its sender wrote (tabs, backspaces, direction overrides): the activity
// table shows it quoted, in its own column.
func TestActivityCellsAreEscaped(t *testing.T) {
	hostile := "a\tsecrets\tkube-system\u202e\b\b"
	at := record.AttemptRecord{AttemptedAt: metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)), Verb: "patch", Subresource: hostile,
		Object: record.ObjectReference{Resource: "configmaps", Namespace: "prod", Name: "x"}}
	for _, wide := range []bool{false, true} {
		var out bytes.Buffer
		if err := format.PrintTable(&out, columns, tableRows([]act{attemptAct(at, "1795428000123456."+strings.Repeat("3f9a2c1b", 8))}), false, wide); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\t\b\u202e") || !strings.Contains(out.String(), strconv.QuoteToGraphic(hostile)) {
			t.Errorf("activity table:\n%q", out.String())
		}
	}
}

// TestActivityShowsShortNames: each row ends with the short name of the
// change or attempt (kubectl get change NAME and kubectl get attempt NAME
// take it), and a row fits 120 columns.
func TestActivityShowsShortNames(t *testing.T) {
	at := metav1.NewMicroTime(time.Now().Add(-2 * time.Minute))
	obj := record.ObjectReference{Resource: "configmaps", Namespace: "shop", Name: "app-config"}
	acts := []act{
		attemptAct(record.AttemptRecord{AttemptedAt: at, Verb: "delete", Object: obj, Result: record.AttemptResult{Code: 403, Reason: "Forbidden"},
			Actor: record.Actor{Username: "mallory", UserAgent: "kubectl/v1.34.0 (linux/amd64) kubernetes/abcdef0"}}, "1795428000123456."+strings.Repeat("3f9a2c1b", 8)),
		changeAct(record.ChangeRecord{ChangedAt: at, Verb: "update", Object: obj}, "5e0c9f1a-7d4b-4c6f-8e21-aa04c0ffee00."+strings.Repeat("7e21aa04", 8)),
	}
	var out bytes.Buffer
	if err := format.PrintTable(&out, columns, tableRows(acts), false, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], " app-config-3f9a2c1b") || !strings.HasSuffix(lines[2], " app-config-7e21aa04") {
		t.Errorf("activity table:\n%s", out.String())
	}
	for _, l := range lines {
		if len([]rune(l)) > 120 {
			t.Errorf("a line of %d columns:\n%s", len([]rune(l)), out.String())
		}
	}
}

// TestActivityAsCellQuotesWords: -o wide's AS of a caller who impersonated
// a user named <none> shows that name quoted, not as the empty cell of a
// caller who impersonated no one.
func TestActivityAsCellQuotesWords(t *testing.T) {
	at := metav1.NewMicroTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	obj := record.ObjectReference{Resource: "configmaps", Namespace: "shop", Name: "app-config"}
	acts := []act{
		changeAct(record.ChangeRecord{ChangedAt: at, Verb: "update", Object: obj, Actor: &record.Actor{Username: "bob", ImpersonatedUser: "<none>"}},
			"5e0c9f1a-7d4b-4c6f-8e21-aa04c0ffee00."+strings.Repeat("7e21aa04", 8)),
		attemptAct(record.AttemptRecord{AttemptedAt: at, Verb: "delete", Object: obj, Result: record.AttemptResult{Code: 403, Reason: "Forbidden"},
			Actor: record.Actor{Username: "bob", ImpersonatedUser: "<none>", UserAgent: "<none>"}}, "1795428000123456."+strings.Repeat("3f9a2c1b", 8)),
		changeAct(record.ChangeRecord{ChangedAt: at, Verb: "update", Object: obj, Actor: &record.Actor{Username: "bob"}},
			"5e0c9f1a-7d4b-4c6f-8e21-aa04c0ffee00."+strings.Repeat("7e21aa05", 8)),
	}
	var out bytes.Buffer
	if err := format.PrintTable(&out, columns, tableRows(acts), false, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[1], `   "<none>"   <none>`) || !strings.HasSuffix(lines[2], `   "<none>"   "<none>"`) ||
		!strings.HasSuffix(lines[3], `   <none>     <none>`) {
		t.Errorf("AS (and USER-AGENT), the last columns of -o wide:\n%s", out.String())
	}
}
