package record

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	recordv1alpha1 "github.com/options-record/options-record/api/record/v1alpha1"
)

// TestTableCellsCannotForgeTerminalOutput: recorded strings reach kubectl's
// table output; one with a line break or a terminal escape is quoted.
func TestTableCellsCannotForgeTerminalOutput(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"bob":                  "bob",
		"système:ä":            "système:ä",
		"bob\nNAME   RESOURCE": `"bob\nNAME   RESOURCE"`,
		"\x1b[2J\x1b[Hmallory": `"\x1b[2J\x1b[Hmallory"`,
		"eve\u2028carol":       `"eve\u2028carol"`,
		"tab\there":            `"tab\there"`,
		"no\u00a0break":        `"no\u00a0break"`,
		"système\u3164":        `"système\u3164"`, // one rule with the plugin: é stays é
	} {
		d := &recordv1alpha1.Deletion{ObjectMeta: metav1.ObjectMeta{Name: "u.k"}, DeletionRecord: recordv1alpha1.DeletionRecord{
			Object: recordv1alpha1.ObjectReference{Resource: "configmaps", Name: "app"}, Actor: recordv1alpha1.Actor{Username: in}}}
		table, err := (&deletionStorage{}).ConvertToTable(context.Background(), d, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := table.Rows[0].Cells[2]; got != want {
			t.Errorf("User cell of %q = %s, want %s", in, got, want)
		}
	}
	d := &recordv1alpha1.Deletion{ObjectMeta: metav1.ObjectMeta{Name: "u.k"}, DeletionRecord: recordv1alpha1.DeletionRecord{
		Object: recordv1alpha1.ObjectReference{Resource: "configmaps", Name: "app"}, DeletedAt: metav1.NewMicroTime(time.Now()),
		Actor: recordv1alpha1.Actor{Username: "oidc:\x1b]0;owned\x07mallory", ImpersonatedUser: "x\ny"}}}
	table, err := (&deletionStorage{}).ConvertToTable(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range table.Rows[0].Cells {
		if s, ok := c.(string); ok && strings.ContainsAny(s, "\x1b\x07\n") {
			t.Errorf("a raw control character reaches the table: %q", s)
		}
	}
}
