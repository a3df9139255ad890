package cmdutil

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestVersionCompletionsEscapeTheVerb: a completion is one line, the name
// and its description split by one tab (cobra's protocol), so a recorded
// verb holding a tab or a newline must not reach it as itself: it would
// add a candidate, or a description, of its writer's choice.
func TestVersionCompletionsEscapeTheVerb(t *testing.T) {
	t.Parallel()
	long := "5e0c-uid." + strings.Repeat("3f", 32)
	at := metav1.NewMicroTime(time.Now())
	recs := []record.ChangeRecord{
		{Verb: "update\tevil\nrm-rf-3f3f3f3f\tx\x1b[31m", ChangedAt: at, Object: record.ObjectReference{Name: "app-config"}},
		{Verb: "patch", ChangedAt: at, Object: record.ObjectReference{Name: "app-config"}},
	}
	metas := []metav1.ObjectMeta{{Name: long}, {Name: long}}
	out := versionCompletions(recs, metas, "app-")
	if len(out) != 2 {
		t.Fatalf("completions = %q, want 2", out)
	}
	for _, c := range out {
		if strings.Count(c, "\t") != 1 || strings.ContainsAny(c, "\n\x1b") || !strings.HasPrefix(c, "app-config-3f3f3f3f\t") {
			t.Errorf("completion %q: want one line, app-config-3f3f3f3f, one tab, a description with nothing hidden", c)
		}
	}
	if !strings.Contains(out[0], `\t`) || !strings.HasPrefix(out[1], "app-config-3f3f3f3f\tpatch ") {
		t.Errorf("completions %q: want the verbs as escaped cells", out)
	}
}
