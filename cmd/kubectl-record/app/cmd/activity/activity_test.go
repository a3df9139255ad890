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
		if err := format.PrintTable(&out, columns, tableRows([]act{attemptAct(at)}), false, wide); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\t\b\u202e") || !strings.Contains(out.String(), strconv.QuoteToGraphic(hostile)) {
			t.Errorf("activity table:\n%q", out.String())
		}
	}
}
