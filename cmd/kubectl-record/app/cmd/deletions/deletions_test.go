package deletions

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	record "github.com/options-record/options-record/api/record/v1alpha1"
	"github.com/options-record/options-record/cmd/kubectl-record/app/cmdtesting"
	"github.com/options-record/options-record/cmd/kubectl-record/app/format"
)

// TestDeletionsTable: the table of deletions, cascades under the first
// deletion of theirs, hostile values escaped (testdata/deletions.golden).
func TestDeletionsTable(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { format.Now = f }(format.Now)
	format.Now = func() time.Time { return base }
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
		if err := format.PrintTable(&out, columns, tableRows(items, metas), wide, wide); err != nil {
			t.Fatal(err)
		}
		name := "deletions.golden"
		if wide {
			name = "deletions-wide-all-namespaces.golden"
		}
		cmdtesting.Golden(t, name, out.Bytes())
		if wide {
			// The full names follow the same rule: a user named <none>
			// (or as a controller's word) reads as no empty cell and no
			// controller.
			for _, l := range strings.Split(out.String(), "\n") {
				for obj, want := range map[string]string{"spoof ": ` "<garbage-collector>" `, "spoof-as ": ` "<none>" (as "<none>") `,
					"spoofer ": ` "<none>" `} {
					if strings.Contains(l, obj) && strings.Count(l, want) != 2 {
						t.Errorf("want %s in both the narrow and the wide column:\n%s", want, l)
					}
				}
			}
			continue
		}
		// The controllers' deletions fit 120 columns by their word; a
		// user named as that word is quoted.
		for _, l := range strings.Split(out.String(), "\n") {
			if n := len([]rune(l)); n > 120 && !strings.Contains(l, `"eve\nroot"`) {
				t.Errorf("a row of %d columns, want at most 120:\n%s", n, l)
			}
			if strings.Contains(l, "spoof ") && !strings.Contains(l, ` "<garbage-collector>" `) {
				t.Errorf("a user named <garbage-collector> reads as the garbage collector:\n%s", l)
			}
		}
	}
}
