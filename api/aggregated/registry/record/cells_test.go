package record

import (
	"context"
	"strconv"
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

// TestChangeUserCell: kubectl get changes' USER names the garbage
// collector's and the namespace controller's service accounts by their
// words (escape.Deleter, the deletions' rule); no user name reads as one
// of them or as <none> (a name that begins with "<" is quoted); a
// baseline has no user; -o wide's USERNAME keeps the full name.
func TestChangeUserCell(t *testing.T) {
	t.Parallel()
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	for in, want := range map[string]string{
		gc: "<garbage-collector>",
		"system:serviceaccount:kube-system:namespace-controller": "<namespace-controller>",
		"system:serviceaccount:other:generic-garbage-collector":  "system:serviceaccount:other:generic-garbage-collector",
		"<garbage-collector>": `"<garbage-collector>"`,
		"<none>":              `"<none>"`,
		`"<none>"`:            `"\"<none>\""`,
		" <none>":             `" <none>"`,
		"mallory (as alice)":  `"mallory (as alice)"`, // the plugin's rule: a name is no impersonation
		"bob":                 "bob",
		"":                    "",
	} {
		rec := recordv1alpha1.ChangeRecord{Object: recordv1alpha1.ObjectReference{Resource: "configmaps", Name: "app"}, Verb: "delete"}
		if in != "" {
			rec.Actor = &recordv1alpha1.Actor{Username: in}
		} else {
			rec.Verb = "baseline"
		}
		c := &recordv1alpha1.Change{ObjectMeta: metav1.ObjectMeta{Name: "u.k"}, ChangeRecord: rec}
		table, err := (&changeStorage{}).ConvertToTable(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		cells := table.Rows[0].Cells
		if got := cells[3]; got != want {
			t.Errorf("User cell of %q = %s, want %s", in, got, want)
		}
		full := in // a name that begins with "<", `"` or a space is quoted there too
		if strings.HasPrefix(in, "<") || strings.HasPrefix(in, `"`) || strings.HasPrefix(in, " ") {
			full = strconv.Quote(in)
		}
		if got := cells[len(cells)-1]; got != full || table.ColumnDefinitions[len(cells)-1].Name != "Username" {
			t.Errorf("-o wide: %s = %s, want the full name %s", table.ColumnDefinitions[len(cells)-1].Name, got, full)
		}
	}
}

// TestDeletionNameCells: kubectl get deletions' As, Initiated-By and -o
// wide's Deleter (the full name) quote a name that begins with "<", as
// User does: a user named <none> reads as no empty cell there either.
func TestDeletionNameCells(t *testing.T) {
	t.Parallel()
	d := &recordv1alpha1.Deletion{ObjectMeta: metav1.ObjectMeta{Name: "u.k"}, DeletionRecord: recordv1alpha1.DeletionRecord{
		Object: recordv1alpha1.ObjectReference{Resource: "configmaps", Name: "app"}, DeletedAt: metav1.NewMicroTime(time.Now()),
		Actor: recordv1alpha1.Actor{Username: "<none>", ImpersonatedUser: "<garbage-collector>"}, InitiatedBy: "<none>"}}
	table, err := (&deletionStorage{}).ConvertToTable(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"User": `"<none>"`, "As": `"<garbage-collector>"`, "Initiated-By": `"<none>"`, "Deleter": `"<none>"`}
	for i, col := range table.ColumnDefinitions {
		if w, ok := want[col.Name]; ok && table.Rows[0].Cells[i] != w {
			t.Errorf("%s = %v, want %s", col.Name, table.Rows[0].Cells[i], w)
		}
	}
}
