package history

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// TestHistoryTable: the versions of an object across two incarnations
// (testdata/history.golden): a cascade's delete by the garbage collector
// or the namespace controller fits 120 columns by the controller's word
// (format.DeleterCell, the rule of the deletions' tables), a user named
// as that word (or as <none>, <baseline>, or acting as one) is quoted, and
// -o wide keeps the full user name (USER), by the same rule.
func TestHistoryTable(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { format.Now = f }(format.Now)
	format.Now = func() time.Time { return base }
	var recs []record.ChangeRecord
	data, err := os.ReadFile(filepath.Join("testdata", "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	metas := make([]metav1.ObjectMeta, len(recs))
	for i := range recs {
		metas[i] = metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("%s.%08x%s", recs[i].Object.UID, 0x3f9a2c10+i, strings.Repeat("0", 56))}
	}
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	for _, wide := range []bool{false, true} {
		var out bytes.Buffer
		if err := format.PrintTable(&out, columns, tableRows(recs, metas), false, wide); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if len(lines) != len(recs)+1 {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), len(recs)+1, out.String())
		}
		if wide {
			if !strings.Contains(lines[1], " "+gc+" ") {
				t.Errorf("-o wide has no full user name of the garbage collector:\n%s", lines[1])
			}
		} else {
			for _, l := range lines {
				if n := len([]rune(l)); n > 120 {
					t.Errorf("a row of %d columns, want at most 120:\n%s", n, l)
				}
			}
			if !strings.Contains(lines[1], " <garbage-collector> ") || !strings.Contains(lines[6], " <namespace-controller> ") {
				t.Errorf("a cascade's delete does not name the controller by its word:\n%s", out.String())
			}
		}
		// BY, and -o wide's USER too: a user named as a word (or acting as
		// one) is quoted in each.
		n := 1
		if wide {
			n = 2
		}
		for i, want := range map[int]string{2: ` "<garbage-collector>" `, 3: ` "<none>" (as alice) `, 4: ` carol (as "<none>") `, 7: ` "<baseline>" `} {
			if strings.Count(lines[i], want) != n {
				t.Errorf("a user named <garbage-collector>, <none> or <baseline> reads as that word (want %s in %d columns):\n%s", want, n, lines[i])
			}
		}
		name := "history.golden"
		if wide {
			name = "history-wide.golden"
		}
		cmdtesting.Golden(t, name, out.Bytes())
	}
}
