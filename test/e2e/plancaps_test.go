package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestPlanCapsRefuseBeforeLoading: a caller's plan is bounded: an as-of
// plan covering more objects than --api-max-plan-objects, and an undo plan
// of a user with more changes in its range than an undo reads, are refused
// with what to narrow, and nothing of them is kept.
func TestPlanCapsRefuseBeforeLoading(t *testing.T) {
	// The caps lowered to 3 objects and 1,000 changes: the shipped ones
	// (2,000 and 20,000) behave alike, at a cost a test need not pay.
	w := startRestoreWorldWith(t, 3, 1000)
	ctx := context.Background()
	const ns = "e2e-caps"
	w.namespace(t, ns)
	alice := w.kube(t, "alice")
	for i := range 5 {
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}))(t)
	}
	w.waitChanges(t, ns, "cm-4", 1)
	plans := "/api/v1/clusters/e2e/restore-plans"
	code, body := w.call(t, controlplane.AdminUser, http.MethodPost, plans, map[string]any{"kind": "as-of", "namespaces": []string{ns}, "at": time.Now().UTC()})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "more than 3 objects") || !strings.Contains(string(body), "narrow it") {
		t.Errorf("an as-of plan of 5 objects under a cap of 3: %d %s", code, body)
	}

	// 1,001 changes by mallory of two objects (under the object cap),
	// written straight into the record.
	st, err := store.Open(ctx, store.Options{URL: w.dsn, Secondary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	since := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var b model.Batch
	for i := range 1001 {
		at := since.Add(time.Duration(i) * time.Millisecond)
		name := fmt.Sprintf("bulk-%d", i%2)
		ek := sha256.Sum256([]byte(fmt.Sprintf("undo-cap/%d", i)))
		rv := int64(1_000_000 + i)
		b.Events = append(b.Events, model.Event{Cluster: "e2e", Key: ek[:], StageAt: at, AuditID: fmt.Sprintf("undo-cap-%d", i), Stage: "ResponseComplete",
			Verb: "update", RequestURI: "/api/v1/namespaces/" + ns + "/configmaps", Username: "mallory", APIVersion: "v1",
			Resource: "configmaps", Namespace: ns, Name: name, ObjectUID: "uid-" + name, ResponseCode: 200})
		vk := sha256.Sum256(ek[:])
		b.Versions = append(b.Versions, model.Version{Cluster: "e2e", UID: "uid-" + name, Key: vk[:], ResourceVersion: &rv,
			Origin: model.OriginChange, Verb: "update", ChangedAt: at, EventKey: ek[:], APIVersion: "v1", Kind: "ConfigMap",
			Resource: "configmaps", Namespace: ns, Name: name, Complete: true,
			Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `","uid":"uid-` + name + `"}}`)})
	}
	if err := st.EnsurePartitionsAround(ctx, since); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	code, body = w.call(t, "alice", http.MethodPost, plans, map[string]any{"kind": "undo", "user": "mallory", "since": since})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "more than 1000 changes of mallory") || !strings.Contains(string(body), "narrow it") {
		t.Errorf("an undo plan of 1,001 changes: %d %.300s", code, body)
	}
	var kept int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM options_record_api.restores WHERE username IN ('alice', $1)`, controlplane.AdminUser).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 0 {
		t.Errorf("%d plans were kept; a refused plan keeps nothing", kept)
	}

	// trudy's 1,001 changes in a namespace alice may not read, and one in
	// hers: alice's undo of trudy covers the one, and the others neither
	// refuse it nor show in it (no count, no error of theirs).
	const hidden = "e2e-caps-hidden"
	b = model.Batch{}
	for i := range 1002 {
		at := since.Add(time.Duration(i) * time.Millisecond)
		where, name := hidden, fmt.Sprintf("secret-%d", i%2)
		if i == 1001 {
			where, name = ns, "trudy-visible"
		}
		ek := sha256.Sum256([]byte(fmt.Sprintf("undo-hidden/%d", i)))
		rv := int64(2_000_000 + i)
		b.Events = append(b.Events, model.Event{Cluster: "e2e", Key: ek[:], StageAt: at, AuditID: fmt.Sprintf("undo-hidden-%d", i), Stage: "ResponseComplete",
			Verb: "update", RequestURI: "/api/v1/namespaces/" + where + "/configmaps", Username: "trudy", APIVersion: "v1",
			Resource: "configmaps", Namespace: where, Name: name, ObjectUID: "uid-" + where + "-" + name, ResponseCode: 200})
		vk := sha256.Sum256(ek[:])
		b.Versions = append(b.Versions, model.Version{Cluster: "e2e", UID: "uid-" + where + "-" + name, Key: vk[:], ResourceVersion: &rv,
			Origin: model.OriginChange, Verb: "update", ChangedAt: at, EventKey: ek[:], APIVersion: "v1", Kind: "ConfigMap",
			Resource: "configmaps", Namespace: where, Name: name, Complete: true,
			Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + where + `","uid":"uid-` + where + `-` + name + `"}}`)})
	}
	if _, err := st.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	code, body = w.call(t, "alice", http.MethodPost, plans, map[string]any{"kind": "undo", "user": "trudy", "since": since})
	if code != http.StatusCreated || !strings.Contains(string(body), "trudy-visible") || strings.Contains(string(body), hidden) || strings.Contains(string(body), "more than") {
		t.Errorf("alice's undo of trudy, whose 1,001 other changes she may not read: %d %.500s", code, body)
	}
}
