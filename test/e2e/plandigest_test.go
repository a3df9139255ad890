package e2e

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
)

// TestPlanDigestPinsWhatWasReviewed: a plan's real run executes what its
// dry run showed, or nothing. Between the dry run and the real run the
// record changes as a holder of the ingest credential can change it (the
// state a step restores rewritten in object_versions, which ingest owns),
// then the plan's own row: each time the real run carrying the reviewed
// digest is refused (409), nothing is written and the plan stays planned.
// Put back, the same digest runs.
func TestPlanDigestPinsWhatWasReviewed(t *testing.T) {
	w := startRestoreWorld(t)
	ctx := context.Background()
	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	ns := "e2e-rs-one"
	w.namespace(t, ns)
	ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinned"},
		Data: map[string]string{"v": "alice"}}, metav1.CreateOptions{}))(t)
	w.waitChanges(t, ns, "pinned", 1)
	since := time.Now().UTC()
	ok(bob.CoreV1().ConfigMaps(ns).Patch(ctx, "pinned", types.MergePatchType, []byte(`{"data":{"v":"bob"}}`), metav1.PatchOptions{}))(t)
	w.waitChanges(t, ns, "pinned", 2)

	var plan restore.Plan
	w.postJSON(t, "alice", "/api/v1/clusters/e2e/restore-plans",
		restore.PlanRequest{Kind: restore.KindUndo, User: "bob", Since: &since, Namespaces: []string{ns}}, http.StatusCreated, &plan)
	if len(plan.Steps) != 1 || plan.Steps[0].Action != restore.ActionUpdate || plan.Steps[0].StateDigest == "" || plan.Steps[0].Source == nil {
		t.Fatalf("undo plan: %+v", plan.Steps)
	}
	var dry restore.Plan
	w.postJSON(t, "alice", plan.Execute, restore.ExecuteRequest{DryRun: true, Digest: plan.Digest}, http.StatusOK, &dry)
	if dry.Digest != plan.Digest {
		t.Fatalf("the dry run's digest %s is not the plan's %s", dry.Digest, plan.Digest)
	}
	src := plan.Steps[0].Source
	key, err := hex.DecodeString(src.VersionKey)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string) {
		t.Helper()
		code, body := w.call(t, "alice", http.MethodPost, plan.Execute, restore.ExecuteRequest{Digest: dry.Digest})
		if code != http.StatusConflict || !strings.Contains(string(body), "nothing") {
			t.Errorf("the real run after %s: %d %s; want 409, nothing written", what, code, body)
		}
		if cm := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "pinned", metav1.GetOptions{}))(t); cm.Data["v"] != "bob" {
			t.Errorf("after %s the refused run wrote pinned: %v", what, cm.Data)
		}
		if n := w.count(t, `SELECT count(*) FROM options_record_api.restores WHERE id = '`+plan.ID+`' AND state = 'planned'`); n != 1 {
			t.Errorf("after %s the plan is no longer planned", what)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.db.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}

	// The record changes: the version the step restores now says mallory.
	exec(`UPDATE object_versions SET object = replace(object::text, '"alice"', '"mallory"')::json WHERE uid = $1 AND version_key = $2`, src.UID, key)
	refused("a rewrite of the recorded state it restores")
	exec(`UPDATE object_versions SET object = replace(object::text, '"mallory"', '"alice"')::json WHERE uid = $1 AND version_key = $2`, src.UID, key)

	// The plan's row changes (its steps, between review and run).
	var steps string
	if err := w.db.QueryRow(ctx, `SELECT plan::text FROM options_record_api.restores WHERE id = $1`, plan.ID).Scan(&steps); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE options_record_api.restores SET plan = replace(plan::text, '"update"', '"create"')::jsonb WHERE id = $1`, plan.ID)
	refused("a rewrite of the plan's steps")
	exec(`UPDATE options_record_api.restores SET plan = $2::jsonb WHERE id = $1`, plan.ID, steps)

	// A digest other than the plan's, and none at all.
	if code, body := w.call(t, "alice", http.MethodPost, plan.Execute, restore.ExecuteRequest{Digest: "sha256:" + strings.Repeat("0", 64)}); code != http.StatusConflict {
		t.Errorf("a run with another digest: %d %s", code, body)
	}
	if code, body := w.call(t, "alice", http.MethodPost, plan.Execute, nil); code != http.StatusBadRequest || !strings.Contains(string(body), "digest is required") {
		t.Errorf("a run without a digest: %d %s", code, body)
	}

	// As reviewed again: it runs.
	var done restore.Plan
	w.postJSON(t, "alice", plan.Execute, restore.ExecuteRequest{Digest: dry.Digest}, http.StatusOK, &done)
	if cm := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "pinned", metav1.GetOptions{}))(t); cm.Data["v"] != "alice" {
		t.Errorf("pinned after the run: %v", cm.Data)
	}
}

// TestVersionDigestPinsWhatWasReviewed: the restore of one version
// restores the state its dry run showed, or nothing. The dry run answers
// the digest of the recorded state; the version is then rewritten in
// object_versions as a holder of the ingest credential can; the real run
// carrying the dry run's digest is refused (409) and the cluster is
// unchanged. Put back, the same digest restores.
func TestVersionDigestPinsWhatWasReviewed(t *testing.T) {
	w := startRestoreWorld(t)
	ctx := context.Background()
	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	ns := "e2e-rs-one"
	w.namespace(t, ns)
	ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinned-version"},
		Data: map[string]string{"v": "alice"}}, metav1.CreateOptions{}))(t)
	w.waitChanges(t, ns, "pinned-version", 1)
	ok(bob.CoreV1().ConfigMaps(ns).Patch(ctx, "pinned-version", types.MergePatchType, []byte(`{"data":{"v":"bob"}}`), metav1.PatchOptions{}))(t)
	w.waitChanges(t, ns, "pinned-version", 2)
	var hist history.Page[history.Version]
	w.getJSON(t, "alice", "/api/v1/clusters/e2e/history?resource=configmaps&namespace="+ns+"&name=pinned-version", &hist)
	hist.Items = changesOnly(hist.Items)
	src := hist.Items[0] // alice's create: v=alice
	target := src.Links.Restore

	var dry restore.RestoreResult
	w.postJSON(t, "alice", target, restore.RestoreRequest{DryRun: true}, http.StatusOK, &dry)
	if dry.Action != restore.ActionUpdate || !strings.HasPrefix(dry.StateDigest, "sha256:") {
		t.Fatalf("the dry run: action %s, stateDigest %q", dry.Action, dry.StateDigest)
	}
	key, err := hex.DecodeString(src.VersionKey)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.db.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The record changes: the version the dry run showed now says mallory.
	exec(`UPDATE object_versions SET object = replace(object::text, '"alice"', '"mallory"')::json WHERE uid = $1 AND version_key = $2`, src.UID, key)
	code, body := w.call(t, "alice", http.MethodPost, target, restore.RestoreRequest{StateDigest: dry.StateDigest})
	if code != http.StatusConflict || !strings.Contains(string(body), "nothing was written") {
		t.Errorf("the real run after a rewrite of the recorded state: %d %s; want 409, nothing written", code, body)
	}
	if cm := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "pinned-version", metav1.GetOptions{}))(t); cm.Data["v"] != "bob" {
		t.Errorf("the refused run wrote pinned-version: %v", cm.Data)
	}
	// A dry run now shows the rewritten state under another digest.
	var again restore.RestoreResult
	w.postJSON(t, "alice", target, restore.RestoreRequest{DryRun: true}, http.StatusOK, &again)
	if again.StateDigest == dry.StateDigest {
		t.Errorf("the rewritten state has the reviewed digest %s", again.StateDigest)
	}
	exec(`UPDATE object_versions SET object = replace(object::text, '"mallory"', '"alice"')::json WHERE uid = $1 AND version_key = $2`, src.UID, key)

	// As reviewed again: it restores, and says what it restored.
	var done restore.RestoreResult
	w.postJSON(t, "alice", target, restore.RestoreRequest{StateDigest: dry.StateDigest}, http.StatusOK, &done)
	if done.StateDigest != dry.StateDigest || done.Action != restore.ActionUpdate {
		t.Errorf("the real run: %+v", done)
	}
	if cm := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "pinned-version", metav1.GetOptions{}))(t); cm.Data["v"] != "alice" {
		t.Errorf("pinned-version after the restore: %v", cm.Data)
	}
}
