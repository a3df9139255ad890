package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/cmd/options-record/app/certs"
	"github.com/options-record/options-record/test/framework/controlplane"
)

var widgets = schema.GroupVersionResource{Group: "e2e.example.com", Version: "v1", Resource: "widgets"}

const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.e2e.example.com"},
"spec":{"group":"e2e.example.com","scope":"Namespaced",
 "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
 "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
   "properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`

// registerObserver creates (or points elsewhere) the observing webhook's
// ValidatingWebhookConfiguration, built by hand as an operator would:
// UPDATE and DELETE of ConfigMaps, Secrets and widgets in namespaces.
func (w *world) registerObserver(t *testing.T, url string, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	ignore, none, timeout := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, int32(5)
	scope := admissionregistrationv1.NamespacedScope
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "options-record-observe"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "observe.optionsrecord.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"", "e2e.example.com"}, APIVersions: []string{"*"},
					Resources: []string{"configmaps", "secrets", "widgets"}, Scope: &scope},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces}}},
			FailurePolicy: &ignore, SideEffects: &none, TimeoutSeconds: &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}}}
	cur, err := w.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, vwc.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ok(w.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}))(t)
	case err != nil:
		t.Fatal(err)
	default:
		vwc.ResourceVersion = cur.ResourceVersion
		ok(w.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{}))(t)
	}
}

// probeObserver updates a probe ConfigMap of ns until the webhook's
// answer is as wanted: reviewed (the sink counted it by the time the
// update returned: admission is synchronous) or not.
func (w *world) probeObserver(t *testing.T, ns string, reviewed bool) {
	t.Helper()
	ctx := context.Background()
	cms := w.admin.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	series := `options_record_observations_received_total{cluster="e2e"}`
	i := 0
	eventually(t, 30*time.Second, fmt.Sprintf("the observing webhook reviewed=%v", reviewed), func() error {
		before := w.metric(t, series)
		i++
		cm := ok(cms.Get(ctx, "probe", metav1.GetOptions{}))(t)
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if got := w.metric(t, series) > before; got != reviewed {
			return fmt.Errorf("reviewed %v", got)
		}
		return nil
	})
}

// eksPolicy is EKS's published audit policy (ConfigMaps, Secrets and
// custom resources at Metadata: no bodies), for worldOptions.policy.
func eksPolicy(t *testing.T, _ string) string {
	p, err := filepath.Abs("../fixtures/eks-audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// observedObjects are what alice made in the tests of admission
// observations (observedChanges): the states bob's deletions must keep.
type observedObjects struct {
	cm     *corev1.ConfigMap
	widget *unstructured.Unstructured
}

// allowWidgets serves the widget CRD and lets alice and bob do anything
// with widgets.
func (w *world) allowWidgets(t *testing.T) {
	t.Helper()
	w.apply.create(t, []byte(widgetCRD), "")
	for _, u := range []string{"alice", "bob"} {
		w.allow(t, "", "e2e-widgets-"+u, u, rbacv1.PolicyRule{APIGroups: []string{"e2e.example.com"}, Resources: []string{"widgets"}, Verbs: []string{"*"}})
	}
}

// observedChanges: alice creates (through create, her client of one
// apiserver) and changes (through update, of the same or another) a
// ConfigMap settings, a Secret token and a widget gear in ns; the tests
// of admission observations share them.
func observedChanges(t *testing.T, ns string, create, update *rest.Config) observedObjects {
	t.Helper()
	ctx := context.Background()
	c, u := kubernetes.NewForConfigOrDie(create), kubernetes.NewForConfigOrDie(update)
	cdyn := dynamic.NewForConfigOrDie(create).Resource(widgets).Namespace(ns)
	udyn := dynamic.NewForConfigOrDie(update).Resource(widgets).Namespace(ns)
	cm := ok(c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"level": "one"}}, metav1.CreateOptions{}))(t)
	cm.Data["level"] = "two"
	cm = ok(u.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}))(t)
	sec := ok(c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"},
		StringData: map[string]string{"password": "hunter2-one"}}, metav1.CreateOptions{}))(t)
	sec.Data = map[string][]byte{"password": []byte("hunter2-two")}
	ok(u.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{}))(t)
	var widget *unstructured.Unstructured
	eventually(t, 30*time.Second, "the widget CRD served", func() error {
		var err error
		widget, err = cdyn.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "gear"}, "spec": map[string]any{"teeth": int64(12)}}}, metav1.CreateOptions{})
		return err
	})
	widget.Object["spec"] = map[string]any{"teeth": int64(24)}
	widget = ok(udyn.Update(ctx, widget, metav1.UpdateOptions{}))(t)
	return observedObjects{cm: cm, widget: widget}
}

// TestObservedStatesOnEKSPolicy: with EKS's audit policy (ConfigMaps,
// Secrets and custom resources at Metadata: no bodies) and the observing
// webhook registered, deletions keep the state before them, exactly as the
// admission review showed it and the audit event confirmed it.
func TestObservedStatesOnEKSPolicy(t *testing.T) {
	base := startWorldWith(t, worldOptions{
		policy:    eksPolicy,
		files:     []string{"testdata/restore-rbac.yaml"},
		api:       true,
		admission: true,
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(base.caPEM)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	w := &restoreWorld{world: base, apiURL: base.apiURL, client: client}
	ctx := context.Background()
	const ns, nsGone = "e2e-observe", "e2e-observe-ns"
	w.namespace(t, ns)
	w.namespace(t, nsGone)
	w.allowWidgets(t)
	w.registerObserver(t, "https://"+w.admissionAddr+"/observe", ns, nsGone)
	w.probeObserver(t, ns, true)

	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	aliceDyn := dynamic.NewForConfigOrDie(w.config("alice")).Resource(widgets).Namespace(ns)
	bobDyn := dynamic.NewForConfigOrDie(w.config("bob")).Resource(widgets).Namespace(ns)

	// alice creates and changes a ConfigMap, a Secret and a widget.
	made := observedChanges(t, ns, w.config("alice"), w.config("alice"))
	cm, widget := made.cm, made.widget

	// A forged review, posted straight to the endpoint as anyone could:
	// answered (allowed, as every review) but never a state.
	forged := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged-1",
		"kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},
		"name":"settings","namespace":%q,"operation":"DELETE","userInfo":{"username":"mallory"},
		"oldObject":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":%q,"uid":%q,"resourceVersion":"1"},
		"data":{"level":"forged-state"}}}}`, ns, ns, cm.UID)
	resp, err := client.Post("https://"+w.admissionAddr+"/observe", "application/json", strings.NewReader(forged))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("forged review: %s; want it answered like any other", resp.Status)
	}

	// bob deletes them.
	ok(0, bob.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}))(t)
	ok(0, bob.CoreV1().Secrets(ns).Delete(ctx, "token", metav1.DeleteOptions{}))(t)
	ok(0, bobDyn.Delete(ctx, "gear", metav1.DeleteOptions{}))(t)

	for _, c := range []struct{ resource, name, want string }{
		{"configmaps", "settings", `"level":"two"`}, {"widgets", "gear", `"teeth":24`}, {"secrets", "token", `"password"`},
	} {
		eventually(t, 60*time.Second, "the state before bob's deletion of "+c.name, func() error {
			var unknown bool
			var prior string
			err := w.db.QueryRow(ctx, `SELECT state_unknown, coalesce(prior_object::text, '') FROM deletions
				WHERE namespace = $1 AND resource = $2 AND name = $3 AND username = 'bob'`, ns, c.resource, c.name).Scan(&unknown, &prior)
			if err != nil {
				return err
			}
			if unknown || !strings.Contains(strings.ReplaceAll(prior, " ", ""), c.want) {
				return fmt.Errorf("state unknown %v, state before %s; want %s", unknown, prior, c.want)
			}
			return nil
		})
	}
	// The Secret's values are digests, as on every other path.
	if n := w.count(t, `SELECT count(*) FROM object_versions WHERE namespace = '`+ns+`' AND object::text LIKE '%hunter2%'`); n != 0 {
		t.Errorf("the Secret's values are in the record (%d versions)", n)
	}
	// The forged review never became a state.
	if n := w.count(t, `SELECT count(*) FROM object_versions WHERE object::text LIKE '%forged-state%'`); n != 0 {
		t.Errorf("the forged review became %d versions", n)
	}
	// A restore brings back the state the review showed.
	del := w.deletion(t, ns, "configmaps", "settings")
	var res restore.RestoreResult
	w.postJSON(t, "alice", del.RestoreFrom.Restore, nil, http.StatusOK, &res)
	if got := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}))(t); !reflect.DeepEqual(got.Data, cm.Data) {
		t.Errorf("restored ConfigMap data %v, want %v", got.Data, cm.Data)
	}
	wdel := w.deletion(t, ns, "widgets", "gear")
	w.postJSON(t, "alice", wdel.RestoreFrom.Restore, nil, http.StatusOK, &res)
	if got := ok(aliceDyn.Get(ctx, "gear", metav1.GetOptions{}))(t); !reflect.DeepEqual(got.Object["spec"], widget.Object["spec"]) {
		t.Errorf("restored widget spec %v, want %v", got.Object["spec"], widget.Object["spec"])
	}

	t.Run("a namespace deletion keeps its ConfigMaps' states and initiator", func(t *testing.T) {
		for _, name := range []string{"one", "two"} {
			ok(alice.CoreV1().ConfigMaps(nsGone).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
				Data: map[string]string{"k": "v-" + name}}, metav1.CreateOptions{}))(t)
		}
		present := ok(w.admin.CoreV1().ConfigMaps(nsGone).List(ctx, metav1.ListOptions{}))(t)
		w.deleteNamespace(t, nsGone)
		for _, name := range []string{"one", "two"} {
			eventually(t, 60*time.Second, "the namespace's deletion of "+name, func() error {
				var by string
				var unknown bool
				var prior string
				err := w.db.QueryRow(ctx, `SELECT coalesce(initiated_by, ''), state_unknown, coalesce(prior_object::text, '') FROM deletions
					WHERE namespace = $1 AND resource = 'configmaps' AND name = $2`, nsGone, name).Scan(&by, &unknown, &prior)
				if err != nil {
					return err
				}
				if by != controlplane.AdminUser || unknown || !strings.Contains(prior, "v-"+name) {
					return fmt.Errorf("initiated by %q, state unknown %v, state %s", by, unknown, prior)
				}
				return nil
			})
		}
		// Observed on the real apiserver: the namespace controller's one
		// deletecollection is reviewed once per ConfigMap, and its audit
		// event carries one annotation per object, keyed by the object,
		// prefixed with the webhook's name.
		var verb, ann string
		err := w.db.QueryRow(ctx, `SELECT verb, annotations::text FROM events WHERE namespace = $1 AND resource = 'configmaps'
			AND verb IN ('delete', 'deletecollection') AND username <> 'bob' ORDER BY stage_at LIMIT 1`, nsGone).Scan(&verb, &ann)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the namespace controller's %s of configmaps: annotations %s", verb, ann)
		if n := strings.Count(ann, `"observe.optionsrecord.io/observation-`); verb != "deletecollection" || n != len(present.Items) {
			t.Errorf("%s with %d observation annotations; want a deletecollection with %d (one per ConfigMap)", verb, n, len(present.Items))
		}
	})

	t.Run("with the webhook stopped writes succeed and the state is unknown", func(t *testing.T) {
		// A server that takes connections and drops them: the webhook down.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		w.registerObserver(t, "https://"+ln.Addr().String()+"/observe", ns)
		w.probeObserver(t, ns, false)
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unseen"},
			Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}))(t)
		if err := bob.CoreV1().ConfigMaps(ns).Delete(ctx, "unseen", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("a delete with the webhook down: %v", err)
		}
		eventually(t, 60*time.Second, "bob's deletion of unseen", func() error {
			var unknown bool
			if err := w.db.QueryRow(ctx, `SELECT state_unknown FROM deletions WHERE namespace = $1 AND name = 'unseen' AND username = 'bob'`, ns).Scan(&unknown); err != nil {
				return err
			}
			if !unknown {
				return fmt.Errorf("state known")
			}
			return nil
		})
	})
	// Forged and unconfirmed observations wait for their expiry, unread.
	var forgedLeft int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM observations WHERE object::text LIKE '%forged-state%'`).Scan(&forgedLeft); err != nil || forgedLeft != 1 {
		t.Errorf("forged observations pending: %d, %v; want 1, until it expires", forgedLeft, err)
	}
}

// TestObservedStatesWithBodies: with the shipped policy (bodies at
// RequestResponse) and the observing webhook both, every state is stored
// once: an observation of a state a response body gave is confirmed but
// not stored again, and the states agree.
func TestObservedStatesWithBodies(t *testing.T) {
	w := startWorldWith(t, worldOptions{
		policy:    func(t *testing.T, _ string) string { return controlplane.PolicyFile(t) },
		admission: true,
	})
	ctx := context.Background()
	const ns = "e2e-observe-bodies"
	w.namespace(t, ns)
	w.registerObserver(t, "https://"+w.admissionAddr+"/observe", ns)
	w.probeObserver(t, ns, true)
	alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
	cm := ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"level": "one"}}, metav1.CreateOptions{}))(t)
	// The probe's own observations are confirmed by now or soon (one may
	// still wait in the queue): wait for every one received to be
	// confirmed, then count from there.
	var confirmed float64
	eventually(t, 60*time.Second, "the probe's observations confirmed", func() error {
		received := w.metric(t, `options_record_observations_received_total{cluster="e2e"}`)
		if confirmed = w.metric(t, "options_record_observations_confirmed_total"); confirmed != received {
			return fmt.Errorf("%v of %v confirmed", confirmed, received)
		}
		return nil
	})
	cm.Data["level"] = "two"
	ok(alice.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}))(t)
	ok(0, bob.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}))(t)
	eventually(t, 60*time.Second, "bob's deletion, and both observations confirmed", func() error {
		if got := w.metric(t, "options_record_observations_confirmed_total") - confirmed; got != 2 {
			return fmt.Errorf("%v observations confirmed since, want 2", got)
		}
		if n := w.count(t, `SELECT count(*) FROM deletions WHERE namespace = '`+ns+`' AND name = 'settings' AND username = 'bob' AND NOT state_unknown`); n != 1 {
			return fmt.Errorf("%d deletions with their state", n)
		}
		// The probe's observations and settings' two.
		if n := w.count(t, `SELECT count(*) FROM observations WHERE namespace = '`+ns+`' AND name = 'settings'`); n != 0 {
			return fmt.Errorf("%d observations of settings unconfirmed", n)
		}
		return nil
	})
	var all string
	if err := w.db.QueryRow(ctx, `SELECT string_agg(coalesce(resource_version::text, '-') || ' ' || origin || ' ' || verb, ', ' ORDER BY changed_at)
		FROM object_versions WHERE uid = $1`, string(cm.UID)).Scan(&all); err == nil {
		t.Logf("versions of settings: %s", all)
	}
	// (A baseline LIST racing the create may observe its state too: that
	// is the baselines' own rule, hidden by the listings; not this one's.)
	var twice string
	if err := w.db.QueryRow(ctx, `SELECT coalesce(string_agg(resource_version || ': ' || origins, ', '), '') FROM (
		SELECT resource_version, string_agg(origin, '+' ORDER BY origin) AS origins FROM object_versions
		WHERE uid = $1 AND resource_version IS NOT NULL AND origin <> 'baseline'
		GROUP BY resource_version HAVING count(*) > 1) d`, string(cm.UID)).Scan(&twice); err != nil || twice != "" {
		t.Errorf("states of settings stored twice: %s %v", twice, err)
	}
	if n := w.count(t, `SELECT count(*) FROM object_versions WHERE uid = '`+string(cm.UID)+`' AND origin = 'admission'`); n != 0 {
		t.Errorf("%d admission versions of settings; want none (the bodies gave every state)", n)
	}
	var prior string
	if err := w.db.QueryRow(ctx, `SELECT prior_object->'data'->>'level' FROM deletions WHERE namespace = $1 AND name = 'settings'`, ns).Scan(&prior); err != nil || prior != "two" {
		t.Errorf("state before the deletion: %q, %v; want level two", prior, err)
	}
}

// TestOneAuditAnnotationKeyForSeveralReviews provokes what the observing
// webhook's per-object keys avoid: a webhook that answers every review of
// one deletecollection with the same key and a different value. The
// kube-apiserver keeps the first value only (docs/semantics.md).
func TestOneAuditAnnotationKeyForSeveralReviews(t *testing.T) {
	w := startWorldWith(t, worldOptions{})
	ctx := context.Background()
	const ns = "e2e-observe-onekey"
	w.namespace(t, ns)
	ca, err := certs.NewCA("e2e fixed-key webhook CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue("fixed-key", []string{"127.0.0.1"}, true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	reviews := make(chan string, 100)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var rv admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&rv); err != nil || rv.Request == nil {
			http.Error(rw, "bad review", http.StatusBadRequest)
			return
		}
		// A deletecollection's reviews name no object (request.name is the
		// request's, empty): the object is oldObject.
		var old metav1.PartialObjectMetadata
		_ = json.Unmarshal(rv.Request.OldObject.Raw, &old)
		rv.Response = &admissionv1.AdmissionResponse{UID: rv.Request.UID, Allowed: true,
			AuditAnnotations: map[string]string{"observation": old.Name}}
		reviews <- fmt.Sprintf("%s name=%q oldObject=%s", rv.Request.Operation, rv.Request.Name, old.Name)
		rv.Request = nil
		_ = json.NewEncoder(rw).Encode(&rv)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	ignore, none, timeout := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, int32(5)
	url := srv.URL + "/fixed"
	ok(w.admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-fixed-key"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "fixed.optionsrecord.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca.CertPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:     &ignore, SideEffects: &none, TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"}}},
	}, metav1.CreateOptions{}))(t)
	cms := w.admin.CoreV1().ConfigMaps(ns)
	names := []string{"a", "b", "c"}
	for _, n := range names {
		ok(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"set": "x"}}}, metav1.CreateOptions{}))(t)
	}
	// The configuration is in force once a delete is reviewed: the audit
	// event of a delete of a probe carries the annotation.
	i := 0
	eventually(t, 30*time.Second, "the fixed-key webhook in force", func() error {
		i++
		name := fmt.Sprintf("probe-%d", i)
		ok(cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))(t)
		ok(0, cms.Delete(ctx, name, metav1.DeleteOptions{}))(t)
		return w.auditAnnotation(t, ns, "delete", name, "fixed.optionsrecord.io/observation", name)
	})
	for len(reviews) > 0 {
		<-reviews
	}
	ok(0, cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "set=x"}))(t)
	var seen []string
	for len(reviews) > 0 {
		seen = append(seen, <-reviews)
	}
	t.Logf("the deletecollection's reviews: %q", seen)
	if len(seen) != len(names) {
		t.Errorf("%d reviews of the deletecollection, want one per object (%d)", len(seen), len(names))
	}
	eventually(t, 30*time.Second, "the deletecollection's audit event", func() error {
		return w.auditAnnotation(t, ns, "deletecollection", "", "fixed.optionsrecord.io/observation", "")
	})
}

// auditAnnotation finds in the apiserver's audit log the ResponseComplete
// event of verb on name in ns and checks its annotation key: equal to want,
// or, with want "", one of the three objects a, b, c (the first reviewed).
func (w *world) auditAnnotation(t *testing.T, ns, verb, name, key, want string) error {
	t.Helper()
	data, err := os.ReadFile(w.auditLog)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		var ev struct {
			Verb, Stage string
			ObjectRef   struct{ Namespace, Name, Resource string }
			Annotations map[string]string
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Verb != verb || ev.Stage != "ResponseComplete" ||
			ev.ObjectRef.Namespace != ns || ev.ObjectRef.Name != name || ev.ObjectRef.Resource != "configmaps" {
			continue
		}
		got, ok := ev.Annotations[key]
		t.Logf("%s %s: %s = %q", verb, name, key, got)
		switch {
		case !ok:
			return fmt.Errorf("%s %s: no %s", verb, name, key)
		case want != "" && got != want, want == "" && got != "a" && got != "b" && got != "c":
			return fmt.Errorf("%s %s: %s = %q", verb, name, key, got)
		}
		return nil
	}
	return fmt.Errorf("no ResponseComplete event of %s %s yet", verb, name)
}
