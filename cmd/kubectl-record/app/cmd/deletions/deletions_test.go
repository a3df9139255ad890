package deletions

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
	}
}
