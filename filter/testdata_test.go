package filter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

// TestTestdataEvents runs real-shaped audit events (testdata/events, written
// after what a real kube-apiserver sends: docs/semantics.md) through the rules of
// testdata/rules.yaml.
func TestTestdataEvents(t *testing.T) {
	t.Parallel()
	objs, err := LoadFile(filepath.Join("testdata", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set, statuses := Compile(objs, Options{})
	wantStatus := map[string]string{
		"options-record/prod-apps":    v1alpha1.ReasonSynced,
		"options-record/cluster-rbac": v1alpha1.ReasonSynced,
		"team-a/everything":           v1alpha1.ReasonSynced,
		"team-b/greedy":               v1alpha1.ReasonNamespaceOutOfScope,
	}
	gotStatus := map[string]string{}
	for _, st := range statuses {
		gotStatus[st.Namespace+"/"+st.Name] = st.Reason
	}
	if diff := cmp.Diff(wantStatus, gotStatus); diff != "" {
		t.Fatalf("statuses mismatch (-want +got):\n%s", diff)
	}

	const (
		prodApps = "options-record/prod-apps"
		rbac     = "options-record/cluster-rbac"
		teamA    = "team-a/everything"
	)
	quarter := 2160 * time.Hour
	tests := map[string]Decision{
		"patch-configmap-data.json":                             kept(prodApps),
		"delete-configmap.json":                                 kept(prodApps),
		"delete-configmap-dryrun.json":                          dropped(DropDryRun),
		"create-deployment-dryrun.json":                         dropped(DropDryRun),
		"patch-deployment-scale.json":                           kept(prodApps),
		"update-deployment-status.json":                         dropped(DropStatusOnly),
		"patch-pod-status-kubelet.json":                         dropped(DropStatusOnly),
		"update-lease-operator.json":                            dropped(DropHighChurn),
		"create-token-kubelet.json":                             dropped(DropNotPersisted),
		"delete-deployment-impersonated.json":                   kept(teamA),
		"delete-deployment-ci.json":                             dropped(DropNoRule),
		"deletecollection-configmaps-namespace-controller.json": kept(teamA),
		"delete-namespace.json":                                 {Keep: true, Rules: []string{rbac, teamA}, Retention: quarter},
		"delete-secret-forbidden.json":                          kept(prodApps),
		"get-secret.json":                                       dropped(DropReadOnly),
		"requestreceived-create.json":                           dropped(DropStage),
		"patch-clusterrole.json":                                {Keep: true, Rules: []string{rbac}, Retention: quarter},
		"create-configmap-team-b.json":                          dropped(DropNoRule),
	}
	files, err := filepath.Glob(filepath.Join("testdata", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("testdata/events has %d files, the test expects %d", len(files), len(tests))
	}
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			t.Parallel()
			want, ok := tests[base]
			if !ok {
				t.Fatalf("no expected decision for %s", base)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var ev auditv1.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				t.Fatalf("decode %s: %v", base, err)
			}
			got := set.Match(&ev)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Match(%s) mismatch (-want +got):\n%s", base, diff)
			}
		})
	}
}
