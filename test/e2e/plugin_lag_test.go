package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestPluginNotesALateSource: through the kube-apiserver's aggregation, a
// list of the record carries how late each source of the cluster is, and
// kubectl record notes on stderr a source later than --lag-warning (here a
// Firehose feed twelve minutes behind), never the webhook that has just
// delivered; standard output is the same with the note and without it. A
// reader of one namespace only gets the list without the cluster's times.
func TestPluginNotesALateSource(t *testing.T) {
	w := startWorldWith(t, worldOptions{aggregated: true,
		files: []string{"testdata/restore-rbac.yaml", "testdata/aggregated-rbac.yaml"}})
	bin := buildPlugin(t)
	registerAggregated(t, w)
	admin := w.cp.WriteKubeconfig(t, controlplane.AdminUser)
	const ns = "e2e-lag"
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "namespace", ns)
	kubectlOK(t, w, controlplane.AdminUser, nil, "create", "configmap", "-n", ns, "late")
	kubectlOK(t, w, controlplane.AdminUser, nil, "delete", "configmap", "-n", ns, "late")
	var first pluginRun
	eventually(t, time.Minute, "the deletion in kubectl record deletions", func() error {
		first = plugin(t, bin, admin, nil, "deletions", "-n", ns)
		if first.code != 0 || !strings.Contains(first.out, "late") {
			return fmt.Errorf("exit %d: %s%s", first.code, first.out, first.errOut)
		}
		return nil
	})
	// The webhook has delivered just now (its progress is written with
	// its first batch): no note.
	if strings.Contains(first.errOut, "note:") {
		t.Errorf("a fresh webhook gave a note:\n%s", first.errOut)
	}
	// A Firehose feed of the same cluster twelve minutes behind (as the
	// ingest writes it: migration 00023's table).
	if _, err := w.db.Exec(context.Background(), `INSERT INTO source_progress (cluster, source, newest_event_at, delivered_at)
		VALUES ('e2e', 'firehose', now() - interval '12 minutes 30 seconds', now())`); err != nil {
		t.Fatal(err)
	}
	r := plugin(t, bin, admin, nil, "deletions", "-n", ns)
	want := "note: the newest event from firehose for cluster e2e is 12m old; newer changes may not be recorded yet\n"
	if r.code != 0 || !strings.HasSuffix(r.errOut, want) || strings.Contains(r.errOut, "webhook") {
		t.Errorf("exit %d, stderr %q; want it to end with %q", r.code, r.errOut, want)
	}
	if withoutAges(r.out) != withoutAges(first.out) {
		t.Errorf("stdout changed with the note:\n%s\nwant\n%s", r.out, first.out)
	}
	if r := plugin(t, bin, admin, nil, "deletions", "-n", ns, "--lag-warning", "15m"); r.code != 0 || strings.Contains(r.errOut, "note:") {
		t.Errorf("--lag-warning 15m: exit %d, stderr %q; want no note", r.code, r.errOut)
	}

	// A reader of this namespace only (carol: the record's reader role and view,
	// bound here): the sources' times are the whole cluster's, not theirs.
	// The list is the same, without the header, so without a note.
	kubectlOK(t, w, controlplane.AdminUser, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-lag-record-reader}
rules:
  - apiGroups: [record.optionsrecord.io]
    resources: [deletions, changes, attempts]
    verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lag-reader-record, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-lag-record-reader}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lag-reader-view, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: carol}]
`), "apply", "-f", "-")
	reader := w.cp.WriteKubeconfig(t, "carol")
	eventually(t, time.Minute, "the namespace reader's list", func() error {
		r := plugin(t, bin, reader, nil, "deletions", "-n", ns)
		if r.code != 0 || !strings.Contains(r.out, "late") {
			return fmt.Errorf("exit %d: %s%s", r.code, r.out, r.errOut)
		}
		if strings.Contains(r.errOut, "note:") {
			t.Errorf("a reader of %s only was told the cluster's lag: %q", ns, r.errOut)
		}
		return nil
	})
}

// ages are the relative times of a table (the DELETED column): "0s" in one
// run is "1s" in the next, a second later.
var ages = regexp.MustCompile(`\b\d+[smhdy](\d+[smhd])?\b`)

// withoutAges is a table with its ages replaced, and the runs of spaces
// that align its columns (which an age's width moves) made one.
func withoutAges(table string) string {
	lines := strings.Split(ages.ReplaceAllString(table, "AGE"), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
