package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
	"github.com/options-record/options-record/api/restoreapi"
	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/cmd/options-record/app"
	"github.com/options-record/options-record/store/pgtest"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestRestoreAPIOnARealControlPlane drives the restore API of a sink
// recording a real control plane: reads authorized by SubjectAccessReview,
// restores impersonating the caller, plans for a namespace and a user.
func TestRestoreAPIOnARealControlPlane(t *testing.T) {
	w := startRestoreWorld(t)
	ctx := context.Background()
	for _, ns := range []string{"e2e-rs-one", "e2e-rs-vault", "e2e-rs-ns"} {
		w.namespace(t, ns)
	}
	alice, bob, carol := w.kube(t, "alice"), w.kube(t, "bob"), w.kube(t, "carol")

	t.Run("the served OpenAPI document is the golden one", func(t *testing.T) {
		code, body := w.call(t, "", http.MethodGet, "/api/v1/openapi.json", nil)
		golden, err := os.ReadFile(filepath.Join("..", "..", "api", "restoreapi", "testdata", "openapi.json"))
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusOK || !bytes.Equal(body, golden) {
			t.Errorf("GET openapi.json = %d, %d bytes; differs from the golden file (%d bytes)", code, len(body), len(golden))
		}
	})

	t.Run("bad requests get clear errors", func(t *testing.T) {
		for _, tt := range []struct {
			user, path string
			code       int
			msg        string
		}{
			{"", "/api/v1/clusters/e2e/changes", 401, "send a bearer token"},
			{"nobody", "/api/v1/clusters/e2e/changes", 401, "the bearer token was not accepted"},
			{"alice", "/api/v1/clusters/e2e/changes?limit=1000", 400, `limit="1000": must be a whole number from 1 to 500`},
			{"alice", "/api/v1/clusters/e2e/changes?namespace=e2e-rs-one&nmae=x", 400, `unknown query parameter "nmae"`},
			{"alice", "/api/v1/clusters/e2e/deletions?since=last-week", 400, `since="last-week": want an RFC 3339 time`},
			{"alice", "/api/v1/clusters/e2e/history?resource=configmaps&namespace=e2e-rs-one", 400, `query parameter "name" is required`},
			{"alice", "/api/v1/clusters/e2e/objects/x/versions/not-hex", 400, "want the 64 hex digits"},
			{"alice", "/api/v1/clusters/prod/changes", 404, `cluster "prod" is not served here`},
		} {
			code, body := w.call(t, tt.user, http.MethodGet, tt.path, nil)
			var e restoreapi.ErrorBody
			_ = json.Unmarshal(body, &e)
			if code != tt.code || !strings.Contains(e.Error.Message, tt.msg) {
				t.Errorf("%s GET %s = %d %s, want %d with %q", tt.user, tt.path, code, body, tt.code, tt.msg)
			}
		}
		code, body := w.call(t, "alice", http.MethodPost, "/api/v1/clusters/e2e/restore-plans", map[string]any{"kind": "as-of", "namespaces": []string{"e2e-rs-one"}})
		if code != 400 || !strings.Contains(string(body), "as-of needs at") {
			t.Errorf("plan without at = %d %s", code, body)
		}
		// A namespace the caller may not read is refused before anything
		// of it is loaded.
		at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		code, body = w.call(t, "alice", http.MethodPost, "/api/v1/clusters/e2e/restore-plans",
			map[string]any{"kind": "as-of", "namespaces": []string{"kube-system"}, "at": at})
		if code != http.StatusForbidden || !strings.Contains(string(body), `cannot get namespaces in the namespace \"kube-system\"`) {
			t.Errorf("alice's plan for kube-system = %d %s, want 403", code, body)
		}
	})

	t.Run("a user without get on secrets cannot read a Secret's history", func(t *testing.T) {
		ok(alice.CoreV1().Secrets("e2e-rs-one").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			StringData: map[string]string{"password": "digest-me"}}, metav1.CreateOptions{}))(t)
		hist := "/api/v1/clusters/e2e/history?resource=secrets&namespace=e2e-rs-one&name=db"
		var page history.Page[history.Version]
		// The history starts with alice's create (a baseline observation
		// may follow it).
		w.eventuallyGet(t, "alice", hist, &page, func() error {
			if len(page.Items) == 0 || page.Items[0].Verb != "create" || !page.Items[0].SecretDigested {
				return fmt.Errorf("history %+v", page.Items)
			}
			return nil
		})
		code, body := w.call(t, "eve", http.MethodGet, hist, nil)
		if code != http.StatusForbidden || !strings.Contains(string(body), `user \"eve\" cannot get secrets in the namespace \"e2e-rs-one\"`) {
			t.Errorf("eve reads the Secret's history: %d %s", code, body)
		}
		// By uid, eve named nothing: the answer is that of an object that
		// does not exist, and names nothing of the Secret.
		code, body = w.call(t, "eve", http.MethodGet, page.Items[0].Links.History, nil)
		if code != http.StatusNotFound || strings.Contains(string(body), "secrets") || strings.Contains(string(body), "e2e-rs-one") {
			t.Errorf("eve reads the Secret's history by uid: %d %s", code, body)
		}
		code, body = w.call(t, "eve", http.MethodGet, page.Items[0].Links.Self, nil)
		if code != http.StatusNotFound || strings.Contains(string(body), "secrets") || strings.Contains(string(body), "e2e-rs-one") {
			t.Errorf("eve reads the Secret's version: %d %s", code, body)
		}
		// In a search, eve sees what she may get, and not the Secret.
		var search history.Page[history.Version]
		w.getJSON(t, "eve", "/api/v1/clusters/e2e/changes?namespace=e2e-rs-one", &search)
		for _, v := range search.Items {
			if v.Resource == "secrets" {
				t.Errorf("eve's search shows a Secret: %+v", v)
			}
		}
	})

	t.Run("find who deleted a ConfigMap, look at the diff, restore it", func(t *testing.T) {
		ok(alice.CoreV1().ConfigMaps("e2e-rs-one").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
			Data: map[string]string{"level": "info"}}, metav1.CreateOptions{}))(t)
		ok(bob.CoreV1().ConfigMaps("e2e-rs-one").Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"level":"debug"}}`), metav1.PatchOptions{}))(t)
		before := ok(alice.CoreV1().ConfigMaps("e2e-rs-one").Get(ctx, "settings", metav1.GetOptions{}))(t)
		if err := carol.CoreV1().ConfigMaps("e2e-rs-one").Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		del := w.deletion(t, "e2e-rs-one", "configmaps", "settings")
		if del.Actor == nil || del.Actor.Username != "carol" || del.RestoreFrom == nil {
			t.Fatalf("deletion: %+v", del)
		}
		// The history names bob's patch; its diff shows what he changed.
		var hist history.Page[history.Version]
		w.getJSON(t, "alice", "/api/v1/clusters/e2e/history?resource=configmaps&namespace=e2e-rs-one&name=settings", &hist)
		hist.Items = changesOnly(hist.Items)
		if len(hist.Items) != 3 || hist.Items[1].Verb != "patch" || hist.Items[1].Actor.Username != "bob" {
			t.Fatalf("history: %+v", hist.Items)
		}
		var diff history.DiffResult
		w.getJSON(t, "alice", hist.Items[1].Links.Diff, &diff)
		if len(diff.Changes) != 1 || diff.Changes[0].Path != "/data/level" || diff.Changes[0].From != "info" || diff.Changes[0].To != "debug" {
			t.Errorf("diff of bob's patch: %+v", diff.Changes)
		}
		code, yml := w.call(t, "alice", http.MethodGet, del.RestoreFrom.Manifest+"?format=yaml", nil)
		if code != 200 || !strings.Contains(string(yml), "level: debug") || strings.Contains(string(yml), "resourceVersion") {
			t.Errorf("manifest: %d %s", code, yml)
		}

		// eve may read the record but not create ConfigMaps: the cluster
		// refuses the impersonated create.
		code, body := w.call(t, "eve", http.MethodPost, del.RestoreFrom.Restore, nil)
		var e restoreapi.ErrorBody
		_ = json.Unmarshal(body, &e)
		if code != http.StatusForbidden || !e.Error.FromCluster || !strings.Contains(e.Error.Message, `User "eve" cannot create resource "configmaps"`) {
			t.Errorf("eve's restore: %d %s", code, body)
		}
		// A dry run changes nothing.
		var res restore.RestoreResult
		w.postJSON(t, "alice", del.RestoreFrom.Restore+"?dryRun=true", nil, http.StatusOK, &res)
		if res.Action != restore.ActionCreate || !res.DryRun {
			t.Errorf("dry run: %+v", res)
		}
		if _, err := alice.CoreV1().ConfigMaps("e2e-rs-one").Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after a dry run the ConfigMap exists: %v", err)
		}
		w.postJSON(t, "alice", del.RestoreFrom.Restore, nil, http.StatusOK, &res)
		if res.Action != restore.ActionCreate || res.RestoreID == "" {
			t.Errorf("restore: %+v", res)
		}
		got := ok(alice.CoreV1().ConfigMaps("e2e-rs-one").Get(ctx, "settings", metav1.GetOptions{}))(t)
		if !reflect.DeepEqual(got.Data, before.Data) {
			t.Errorf("restored data %v, want %v", got.Data, before.Data)
		}
		// The write carries alice's uid and groups as the cluster knows
		// them (TokenReview), in the kube-apiserver's own audit log.
		who := ok(alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}))(t)
		eventually(t, 30*time.Second, "the impersonated create in the audit log", func() error {
			data, err := os.ReadFile(w.auditLog)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(data), "\n") {
				var ev struct {
					Verb, Stage      string
					User             struct{ Username string }
					ImpersonatedUser *authnv1.UserInfo
					ObjectRef        *struct{ Resource, Namespace, Name string }
				}
				if json.Unmarshal([]byte(line), &ev) != nil || ev.Verb != "create" || ev.Stage != "ResponseComplete" || ev.User.Username != sinkUser ||
					ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != "e2e-rs-one" || !strings.Contains(line, `"settings"`) ||
					strings.Contains(line, `"dryRun"`) || strings.Contains(line, "dryRun=All") {
					continue
				}
				iu, want := ev.ImpersonatedUser, who.Status.UserInfo
				if iu == nil || iu.Username != want.Username || iu.UID != want.UID || want.UID == "" || !slices.Equal(iu.Groups, want.Groups) {
					t.Errorf("the restore's write impersonated %+v; want alice as TokenReview gives her: %+v", iu, want)
				}
				return nil
			}
			return errors.New("not logged yet")
		})
		// The restores table names who restored what, refusals included.
		rows := w.restores(t, "configmaps")
		for _, want := range []string{"eve failed false", "alice succeeded true", "alice succeeded false"} {
			if !strings.Contains(rows, want) {
				t.Errorf("restores table %q lacks %q", rows, want)
			}
		}
		// The restore is itself recorded, as alice through the sink.
		w.eventuallyGet(t, "alice", "/api/v1/clusters/e2e/history?resource=configmaps&namespace=e2e-rs-one&name=settings", &hist, func() error {
			hist.Items = changesOnly(hist.Items)
			last := hist.Items[len(hist.Items)-1]
			if len(hist.Items) != 4 || last.Verb != "create" || last.Actor.Username != sinkUser || last.Actor.ImpersonatedUser != "alice" {
				return fmt.Errorf("history after the restore: %d items, last %+v", len(hist.Items), last.Actor)
			}
			return nil
		})

		t.Run("a live object changed after the newest record is not overwritten unless forced", func(t *testing.T) {
			// An excluded user's change is not recorded: the live object
			// now differs from the newest recorded version.
			sneaky := w.kube(t, excludedUser)
			live := ok(sneaky.CoreV1().ConfigMaps("e2e-rs-one").Patch(ctx, "settings", types.MergePatchType,
				[]byte(`{"data":{"level":"sneaky"}}`), metav1.PatchOptions{}))(t)
			target := hist.Items[0].Links.Restore // alice's create: level info
			code, body := w.call(t, "alice", http.MethodPost, target, nil)
			if code != http.StatusConflict || !strings.Contains(string(body), "changed after the newest recorded version") {
				t.Errorf("restore over an unrecorded change: %d %s", code, body)
			}
			code, body = w.call(t, "alice", http.MethodPost, target, restore.RestoreRequest{ExpectedResourceVersion: "1"})
			if code != http.StatusConflict || !strings.Contains(string(body), "the request expected 1") {
				t.Errorf("restore with a stale expectedResourceVersion: %d %s", code, body)
			}
			var res restore.RestoreResult
			w.postJSON(t, "alice", target, restore.RestoreRequest{Force: true, DryRun: true}, http.StatusOK, &res)
			after := ok(alice.CoreV1().ConfigMaps("e2e-rs-one").Get(ctx, "settings", metav1.GetOptions{}))(t)
			if res.Action != restore.ActionUpdate || after.ResourceVersion != live.ResourceVersion {
				t.Errorf("forced dry run: %s, resourceVersion %s → %s", res.Action, live.ResourceVersion, after.ResourceVersion)
			}
			w.postJSON(t, "alice", target, restore.RestoreRequest{ExpectedResourceVersion: live.ResourceVersion}, http.StatusOK, &res)
			after = ok(alice.CoreV1().ConfigMaps("e2e-rs-one").Get(ctx, "settings", metav1.GetOptions{}))(t)
			if res.Action != restore.ActionUpdate || after.Data["level"] != "info" {
				t.Errorf("restore with the live resourceVersion: %s, level %q", res.Action, after.Data["level"])
			}
		})
	})

	t.Run("a ServiceAccount token from kubectl create token restores as that ServiceAccount", func(t *testing.T) {
		ns := "e2e-rs-one"
		ok(w.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}))(t)
		ok(w.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "e2e-editor"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "operator", Namespace: ns}}}, metav1.CreateOptions{}))(t)
		// What kubectl create token operator -n e2e-rs-one does.
		tr := ok(w.admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "operator", &authnv1.TokenRequest{
			Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{}))(t)
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "by-sa"},
			Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}))(t)
		if err := alice.CoreV1().ConfigMaps(ns).Delete(ctx, "by-sa", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		del := w.deletion(t, ns, "configmaps", "by-sa")
		var res restore.RestoreResult
		eventually(t, 15*time.Second, "restore as the ServiceAccount (RBAC settles)", func() error {
			code, body := w.call(t, "token:"+tr.Status.Token, http.MethodPost, del.RestoreFrom.Restore, nil)
			if code != http.StatusOK {
				return fmt.Errorf("%d %s", code, body)
			}
			return json.Unmarshal(body, &res)
		})
		if res.Action != restore.ActionCreate {
			t.Errorf("restore as the ServiceAccount: %+v", res)
		}
		if got := w.restores(t, "configmaps"); !strings.Contains(got, "system:serviceaccount:"+ns+":operator succeeded false") {
			t.Errorf("restores table: %s", got)
		}
	})

	t.Run("a Secret recorded as digests is refused, one recorded with data comes back", func(t *testing.T) {
		if err := alice.CoreV1().Secrets("e2e-rs-one").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		del := w.deletion(t, "e2e-rs-one", "secrets", "db")
		code, body := w.call(t, "alice", http.MethodPost, del.RestoreFrom.Restore, nil)
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "holds digests (HMAC-SHA256)") {
			t.Errorf("restore of a digested Secret: %d %s", code, body)
		}

		want := map[string][]byte{"password": []byte("hunter2-vault"), "user": []byte("admin")}
		eventually(t, 10*time.Second, "create the vault Secret", func() error {
			_, err := alice.CoreV1().Secrets("e2e-rs-vault").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
				Data: want}, metav1.CreateOptions{})
			return err
		})
		if err := bob.CoreV1().Secrets("e2e-rs-vault").Delete(ctx, "creds", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		del = w.deletion(t, "e2e-rs-vault", "secrets", "creds")
		if del.SecretDigested {
			t.Fatal("the vault rule did not record the Secret's data")
		}
		var res restore.RestoreResult
		w.postJSON(t, "alice", del.RestoreFrom.Restore, nil, http.StatusOK, &res)
		got := ok(alice.CoreV1().Secrets("e2e-rs-vault").Get(ctx, "creds", metav1.GetOptions{}))(t)
		if !reflect.DeepEqual(got.Data, want) {
			t.Errorf("restored Secret data %v", got.Data)
		}
	})

	t.Run("a deleted Deployment and custom object come back with their spec", func(t *testing.T) {
		ok(alice.AppsV1().Deployments("e2e-rs-one").Create(ctx, deployment("web"), metav1.CreateOptions{}))(t)
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"tenant","namespace":"e2e-rs-one"},"spec":{"resources":[{"group":"","resources":["configmaps"]}],"verbs":["delete"]}}`), "")
		dyn := dynamic.NewForConfigOrDie(w.config("alice"))
		orcs := dyn.Resource(v1alpha1.GroupVersionResource).Namespace("e2e-rs-one")
		wantDep := ok(alice.AppsV1().Deployments("e2e-rs-one").Get(ctx, "web", metav1.GetOptions{}))(t)
		wantORC := ok(orcs.Get(ctx, "tenant", metav1.GetOptions{}))(t)
		if err := bob.AppsV1().Deployments("e2e-rs-one").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := orcs.Delete(ctx, "tenant", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, o := range []struct{ resource, name string }{{"deployments", "web"}, {"optionsrecordcontrollers", "tenant"}} {
			del := w.deletion(t, "e2e-rs-one", o.resource, o.name)
			var res restore.RestoreResult
			w.postJSON(t, "alice", del.RestoreFrom.Restore, nil, http.StatusOK, &res)
			if res.Action != restore.ActionCreate {
				t.Errorf("%s: %+v", o.name, res)
			}
		}
		gotDep := ok(alice.AppsV1().Deployments("e2e-rs-one").Get(ctx, "web", metav1.GetOptions{}))(t)
		if !reflect.DeepEqual(gotDep.Spec, wantDep.Spec) || gotDep.UID == wantDep.UID {
			t.Errorf("Deployment spec differs after the restore:\n%+v\n%+v", gotDep.Spec, wantDep.Spec)
		}
		gotORC := ok(orcs.Get(ctx, "tenant", metav1.GetOptions{}))(t)
		if !reflect.DeepEqual(gotORC.Object["spec"], wantORC.Object["spec"]) {
			t.Errorf("OptionsRecordController spec %v, want %v", gotORC.Object["spec"], wantORC.Object["spec"])
		}
	})

	t.Run("an object deleted by a namespace cascade comes back from its deletion", func(t *testing.T) {
		// The namespace controller deletes the namespace's ConfigMaps with
		// one deletecollection, answered by a ConfigMapList whose items
		// carry no apiVersion and kind: the deletion must still hold a
		// state that exports and restores.
		ns := "e2e-rs-cascade"
		w.namespace(t, ns)
		before := ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-config", Labels: map[string]string{"app": "shop"}, Annotations: map[string]string{"note": "a: b"}},
			Data:       map[string]string{"currency": "EUR", "multi": "line one\nline two"},
		}, metav1.CreateOptions{}))(t)
		w.waitChanges(t, ns, "shop-config", 1)
		var hist history.Page[history.Version]
		w.getJSON(t, "alice", "/api/v1/clusters/e2e/history?resource=configmaps&namespace="+ns+"&name=shop-config", &hist)
		hist.Items = changesOnly(hist.Items)
		var created restore.ManifestResult
		w.getJSON(t, "alice", hist.Items[0].Links.Manifest, &created)
		_, createdYAML := w.call(t, "alice", http.MethodGet, hist.Items[0].Links.Manifest+"?format=yaml", nil)

		w.deleteNamespace(t, ns)
		del := w.deletion(t, ns, "configmaps", "shop-config")
		if del.Verb != "deletecollection" || del.InitiatedVia != "namespace-deletion" || del.RestoreFrom.Self != del.Links.Self {
			t.Errorf("the cascade deletion: verb %s via %q, restore from %s (itself: %s)", del.Verb, del.InitiatedVia, del.RestoreFrom.Self, del.Links.Self)
		}
		if i := del.InitiatedObject; i == nil || i.Group != "" || i.Resource != "namespaces" || i.Namespace != "" || i.Name != ns {
			t.Errorf("the cascade's initiating object: %+v, want the namespace %s", i, ns)
		}
		var exported restore.ManifestResult
		w.getJSON(t, "alice", del.RestoreFrom.Manifest, &exported)
		want, _ := json.Marshal(created.Manifest)
		got, _ := json.Marshal(exported.Manifest)
		if !bytes.Equal(got, want) {
			t.Errorf("manifest from the cascade deletion:\n%s\nwant the state before it:\n%s", got, want)
		}
		code, yml := w.call(t, "alice", http.MethodGet, del.RestoreFrom.Manifest+"?format=yaml", nil)
		if code != http.StatusOK || !bytes.Equal(uncommented(yml), uncommented(createdYAML)) {
			t.Errorf("YAML manifest from the cascade deletion: %d\n%s\nwant\n%s", code, yml, createdYAML)
		}

		w.namespace(t, ns) // the namespace first, as an operator would
		var res restore.RestoreResult
		w.postJSON(t, "alice", del.RestoreFrom.Restore, nil, http.StatusOK, &res)
		if res.Action != restore.ActionCreate {
			t.Errorf("restore: %+v", res)
		}
		live := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "shop-config", metav1.GetOptions{}))(t)
		if !reflect.DeepEqual(live.Data, before.Data) || !reflect.DeepEqual(live.Labels, before.Labels) || !reflect.DeepEqual(live.Annotations, before.Annotations) {
			t.Errorf("restored %v %v %v, want %v %v %v", live.Data, live.Labels, live.Annotations, before.Data, before.Labels, before.Annotations)
		}
	})

	t.Run("a namespace deletion cascade is undone by a namespace restore", func(t *testing.T) {
		ns := "e2e-rs-ns"
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
			Data: map[string]string{"mode": "blue"}}, metav1.CreateOptions{}))(t)
		ok(alice.AppsV1().Deployments(ns).Create(ctx, deployment("api"), metav1.CreateOptions{}))(t)
		ok(alice.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"},
			StringData: map[string]string{"t": "x"}}, metav1.CreateOptions{}))(t)
		wantDep := ok(alice.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{}))(t)
		var page history.Page[history.Version]
		w.eventuallyGet(t, controlplane.AdminUser, "/api/v1/clusters/e2e/changes?namespace="+ns+"&user=alice", &page, func() error {
			if len(page.Items) != 3 {
				return fmt.Errorf("%d changes by alice recorded", len(page.Items))
			}
			return nil
		})
		time.Sleep(1100 * time.Millisecond) // stage timestamps have microseconds; keep "at" clearly after the creates
		at := time.Now().UTC()
		time.Sleep(100 * time.Millisecond)
		w.deleteNamespace(t, ns)
		w.deletion(t, ns, "configmaps", "app-config") // the cascade is recorded

		var plan restore.Plan
		w.postJSON(t, controlplane.AdminUser, "/api/v1/clusters/e2e/restore-plans",
			restore.PlanRequest{Kind: restore.KindAsOf, Namespaces: []string{ns}, At: &at}, http.StatusCreated, &plan)
		steps := map[string]restore.Step{}
		var order []string
		for _, st := range plan.Steps {
			k := st.Object.Resource + "/" + st.Object.Name
			steps[k] = st
			order = append(order, st.Action+" "+k)
		}
		for k, action := range map[string]string{
			"namespaces/" + ns: restore.ActionCreate, "configmaps/app-config": restore.ActionCreate,
			"deployments/api": restore.ActionCreate, "secrets/token": restore.ActionRefuse,
			"serviceaccounts/default": restore.ActionSkip, "rolebindings/e2e-editor": restore.ActionCreate,
		} {
			if steps[k].Action != action {
				t.Errorf("plan step %s: %q (%s), want %s; plan:\n%s", k, steps[k].Action, steps[k].Reason, action, strings.Join(order, "\n"))
			}
		}
		if order[0] != "create namespaces/"+ns {
			t.Errorf("the namespace is not created first:\n%s", strings.Join(order, "\n"))
		}
		var again restore.Plan
		w.getJSON(t, controlplane.AdminUser, strings.TrimSuffix(plan.Execute, "/execute"), &again)
		if again.ID != plan.ID || again.State != "planned" || len(again.Steps) != len(plan.Steps) {
			t.Errorf("GET plan: %+v", again)
		}
		code, body := w.call(t, "alice", http.MethodGet, strings.TrimSuffix(plan.Execute, "/execute"), nil)
		if code != http.StatusNotFound || strings.Contains(string(body), controlplane.AdminUser) {
			t.Errorf("alice reads the admin's plan: %d %s; want a 404 that names nobody", code, body)
		}

		var dry restore.Plan
		w.postJSON(t, controlplane.AdminUser, plan.Execute+"?dryRun=true", nil, http.StatusMultiStatus, &dry)
		if !dry.DryRun || dry.State != "partial" || dry.Outcome[0].Result != restore.ResultDone {
			t.Errorf("dry run: %s %+v", dry.State, dry.Outcome)
		}
		if _, err := w.admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a dry run created the namespace: %v", err)
		}

		if dry.Digest != plan.Digest || !strings.HasPrefix(plan.Digest, "sha256:") {
			t.Errorf("the dry run's digest %q is not the plan's %q", dry.Digest, plan.Digest)
		}
		if code, body := w.call(t, controlplane.AdminUser, http.MethodPost, plan.Execute, nil); code != http.StatusBadRequest || !strings.Contains(string(body), "digest is required") {
			t.Errorf("a real run without the digest: %d %s, want 400", code, body)
		}
		var done restore.Plan
		w.postJSON(t, controlplane.AdminUser, plan.Execute, restore.ExecuteRequest{Digest: dry.Digest}, http.StatusMultiStatus, &done)
		if done.State != "partial" {
			t.Errorf("execution state %s", done.State)
		}
		for _, o := range done.Outcome {
			st := done.Steps[o.Index]
			k := st.Object.Resource + "/" + st.Object.Name
			wantResult := restore.ResultDone
			switch st.Action {
			case restore.ActionRefuse:
				wantResult = restore.ResultFailed
			case restore.ActionSkip, restore.ActionNone:
				wantResult = restore.ResultSkipped
			}
			if o.Result != wantResult {
				t.Errorf("step %d %s %s: %s (%d %s), want %s", o.Index, st.Action, k, o.Result, o.Code, o.Message, wantResult)
			}
		}
		cm := ok(w.admin.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{}))(t)
		dep := ok(w.admin.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{}))(t)
		if cm.Data["mode"] != "blue" || !reflect.DeepEqual(dep.Spec, wantDep.Spec) {
			t.Errorf("after the namespace restore: data %v, Deployment spec equal %t", cm.Data, reflect.DeepEqual(dep.Spec, wantDep.Spec))
		}
		code, body = w.call(t, controlplane.AdminUser, http.MethodPost, plan.Execute, restore.ExecuteRequest{Digest: plan.Digest})
		if code != http.StatusConflict || !strings.Contains(string(body), "a plan executes once") {
			t.Errorf("second execution: %d %s", code, body)
		}
	})

	t.Run("an as-of plan deletes only what was created after its time", func(t *testing.T) {
		// "early" exists before the time restored to, but the record starts
		// later: no rule covered its namespace then, and the baseline the
		// new rule takes observes it afterwards. Not recorded then does not
		// mean created since: it must not be deleted. "later" was.
		ns := "rs-late"
		w.namespace(t, ns)
		ok(w.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early"}}, metav1.CreateOptions{}))(t)
		time.Sleep(1100 * time.Millisecond)
		at := time.Now().UTC()
		time.Sleep(100 * time.Millisecond)
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"rs-late","namespace":"options-record"},"spec":{"namespaces":["rs-late"],"resources":[{"group":"","resources":["configmaps"]}]}}`), "")
		eventually(t, 60*time.Second, "baseline of early", func() error {
			if w.count(t, `SELECT count(*) FROM object_versions WHERE origin = 'baseline' AND namespace = 'rs-late' AND name = 'early'`) != 1 {
				return errors.New("no baseline yet")
			}
			return nil
		})
		// creationTimestamp has whole seconds: "later" must be created in a
		// second after at's, or the plan cannot tell (the baseline may be
		// quick).
		time.Sleep(time.Until(at.Truncate(time.Second).Add(1100 * time.Millisecond)))
		ok(w.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}))(t)
		w.waitChanges(t, ns, "later", 1)

		var plan restore.Plan
		w.postJSON(t, controlplane.AdminUser, "/api/v1/clusters/e2e/restore-plans",
			restore.PlanRequest{Kind: restore.KindAsOf, Namespaces: []string{ns}, At: &at,
				Resources: []restore.GroupResource{{Group: "", Resource: "configmaps"}}}, http.StatusCreated, &plan)
		got := map[string]string{}
		for _, st := range plan.Steps {
			got[st.Object.Name] = st.Action + ": " + st.Reason
		}
		if !strings.HasPrefix(got["early"], restore.ActionRefuse+": it existed at") {
			t.Errorf("early (created before the time): %q, want refused", got["early"])
		}
		if !strings.HasPrefix(got["later"], restore.ActionDelete+":") {
			t.Errorf("later (created after the time): %q, want deleted", got["later"])
		}
	})

	t.Run("a user's changes are undone by an undo plan", func(t *testing.T) {
		ns := "e2e-rs-one"
		ok(alice.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"},
			Data: map[string]string{"v": "alice"}}, metav1.CreateOptions{}))(t)
		w.waitChanges(t, ns, "keep", 1)
		since := time.Now().UTC()
		ok(bob.CoreV1().ConfigMaps(ns).Patch(ctx, "keep", types.MergePatchType, []byte(`{"data":{"v":"bob"}}`), metav1.PatchOptions{}))(t)
		ok(bob.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bobs"}}, metav1.CreateOptions{}))(t)
		w.waitChanges(t, ns, "keep", 2)
		w.waitChanges(t, ns, "bobs", 1)
		var plan restore.Plan
		w.postJSON(t, "alice", "/api/v1/clusters/e2e/restore-plans",
			restore.PlanRequest{Kind: restore.KindUndo, User: "bob", Since: &since, Namespaces: []string{ns}}, http.StatusCreated, &plan)
		var got []string
		for _, st := range plan.Steps {
			got = append(got, st.Action+" "+st.Object.Name)
		}
		if strings.Join(got, ",") != "delete bobs,update keep" {
			t.Fatalf("undo plan: %v", got)
		}
		var done restore.Plan
		w.postJSON(t, "alice", plan.Execute, restore.ExecuteRequest{Digest: plan.Digest}, http.StatusOK, &done)
		if _, err := alice.CoreV1().ConfigMaps(ns).Get(ctx, "bobs", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("bob's ConfigMap is still there: %v", err)
		}
		if cm := ok(alice.CoreV1().ConfigMaps(ns).Get(ctx, "keep", metav1.GetOptions{}))(t); cm.Data["v"] != "alice" {
			t.Errorf("keep: %v", cm.Data)
		}
	})

	t.Run("a recorded ownerReference cannot inject objects into an exported manifest", func(t *testing.T) {
		// The apiserver does not restrict an ownerReference's name: a
		// tenant who may edit a ConfigMap can embed a document. An admin
		// who pipes the exported manifest into kubectl apply must get the
		// ConfigMap and nothing else.
		inject := "x\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: injected\n" +
			"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n" +
			"subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: alice\n"
		ok(alice.CoreV1().ConfigMaps("e2e-rs-one").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "ConfigMap\n---\nkind: Secret", Name: inject, UID: "00000000-0000-0000-0000-00000000dead"}}},
			// Values YAML 1.1 reads as line breaks, or refuses raw.
			Data: map[string]string{"k": "v", "nel": "a\u0085---\u0085kind: Secret", "del": "x\x7fy\u009bz"},
		}, metav1.CreateOptions{}))(t)
		var hist history.Page[history.Version]
		w.eventuallyGet(t, controlplane.AdminUser, "/api/v1/clusters/e2e/history?resource=configmaps&namespace=e2e-rs-one&name=owned", &hist, func() error {
			if hist.Items = changesOnly(hist.Items); len(hist.Items) == 0 {
				return errors.New("the create is not recorded yet")
			}
			return nil
		})
		code, yml := w.call(t, controlplane.AdminUser, http.MethodGet, hist.Items[0].Links.Manifest+"?format=yaml", nil)
		if code != http.StatusOK || !bytes.Contains(yml, []byte("# ownerReference")) {
			t.Fatalf("manifest: %d\n%s", code, yml)
		}
		out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, yml, "apply", "--dry-run=client", "-o", "name", "-f", "-")
		if err != nil || strings.TrimSpace(out) != "configmap/owned" {
			t.Errorf("kubectl apply --dry-run=client -f - of the exported manifest saw %q (%v: %s), want only configmap/owned; manifest:\n%s", out, err, errOut, yml)
		}
		out, errOut, err = w.cp.Kubectl(t, controlplane.AdminUser, yml, "apply", "--dry-run=client", "-o", "json", "-f", "-")
		var applied corev1.ConfigMap
		if err != nil || json.Unmarshal([]byte(out), &applied) != nil {
			t.Fatalf("kubectl apply --dry-run=client -o json: %v %s", err, errOut)
		}
		if applied.Data["nel"] != "a\u0085---\u0085kind: Secret" || applied.Data["del"] != "x\x7fy\u009bz" {
			t.Errorf("kubectl reads the exported values as %q and %q", applied.Data["nel"], applied.Data["del"])
		}
	})

	// Last: over everything the scenarios above recorded from the real
	// apiserver (creates, patches, updates, deletes, cascades, baselines,
	// subresource writes), every version stored with a full state gives it
	// back.
	t.Run("every stored full state is a Kubernetes object kubectl accepts", func(t *testing.T) {
		everyFullStateIsAnObject(t, w)
	})
}

// everyFullStateIsAnObject checks that every version stored with a full
// state reads back as jsonb, is a Kubernetes object (apiVersion, kind,
// metadata.name), and that the manifest the API exports of one version of
// each kind of change (group, resource, verb) is one object to
// `kubectl apply --dry-run=client`.
func everyFullStateIsAnObject(t *testing.T, w *restoreWorld) {
	ctx := context.Background()
	var total, typed int
	// count(object::jsonb) reads every row as jsonb: one that is not fails
	// the query.
	err := w.db.QueryRow(ctx, `SELECT count(object::jsonb),
		count(*) FILTER (WHERE jsonb_typeof(object::jsonb->'apiVersion') = 'string' AND object::jsonb->>'apiVersion' <> ''
			AND jsonb_typeof(object::jsonb->'kind') = 'string' AND object::jsonb->>'kind' <> ''
			AND jsonb_typeof(object::jsonb->'metadata'->'name') = 'string' AND object::jsonb->'metadata'->>'name' <> '')
		FROM object_versions WHERE complete`).Scan(&total, &typed)
	if err != nil {
		t.Fatalf("read the full states as jsonb: %v", err)
	}
	if total < 20 || typed != total {
		t.Errorf("%d versions with a full state, %d of them Kubernetes objects", total, typed)
	}
	rows, err := w.db.Query(ctx, `SELECT DISTINCT ON (api_group, resource, verb) uid, encode(version_key, 'hex'), api_group, resource, verb
		FROM object_versions WHERE complete AND NOT secret_digested
		ORDER BY api_group, resource, verb, changed_at DESC`)
	if err != nil {
		t.Fatal(err)
	}
	type sample struct{ uid, key, group, resource, verb string }
	var samples []sample
	for rows.Next() {
		var s sample
		if err := rows.Scan(&s.uid, &s.key, &s.group, &s.resource, &s.verb); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	verbs := map[string]bool{}
	for _, s := range samples {
		verbs[s.verb] = true
		path := "/api/v1/clusters/e2e/objects/" + s.uid + "/versions/" + s.key + "/manifest?format=yaml"
		code, yml := w.call(t, controlplane.AdminUser, http.MethodGet, path, nil)
		if code != http.StatusOK {
			t.Errorf("%s %s/%s: manifest %d %s", s.verb, s.group, s.resource, code, yml)
			continue
		}
		out, errOut, err := w.cp.Kubectl(t, controlplane.AdminUser, yml, "apply", "--dry-run=client", "-o", "name", "-f", "-")
		if lines := strings.Fields(out); err != nil || len(lines) != 1 {
			t.Errorf("%s %s/%s: kubectl apply --dry-run=client saw %q (%v: %s) in\n%s", s.verb, s.group, s.resource, out, err, errOut, yml)
		}
	}
	for _, v := range []string{"create", "baseline"} { // the other verbs come from the subtests before
		if !verbs[v] {
			t.Errorf("no full state of a %s was checked (verbs checked: %v)", v, verbs)
		}
	}
	t.Logf("%d full states read back as Kubernetes objects; kubectl checked the manifests of %d kinds of change", total, len(samples))
}

// excludedUser is excluded by the e2e rule: its changes are not recorded.
const excludedUser = "system:kube-scheduler"

// restoreWorld is a world whose sink also serves the restore API.
type restoreWorld struct {
	*world
	apiURL string
	client *http.Client
}

// startRestoreWorld is startWorldWith with the restore API enabled, the
// API's RBAC (TokenReview, SubjectAccessReview, impersonation) and a rule
// that records Secret data in e2e-rs-vault.
func startRestoreWorld(t *testing.T) *restoreWorld {
	t.Helper()
	return startRestoreWorldWith(t, 0, 0)
}

// startRestoreWorldWith is startRestoreWorld with the API's cap on the
// objects of a plan (0: the default).
func startRestoreWorldWith(t *testing.T, maxPlanObjects, maxUndoRows int) *restoreWorld {
	t.Helper()
	w := startWorldWith(t, worldOptions{
		maxPlanObjects: maxPlanObjects, maxUndoRows: maxUndoRows,
		users: []controlplane.User{{Name: excludedUser}},
		// The shipped policy as is: the instrumented one logs the sink's
		// requests at Metadata level, restores (impersonated) included.
		policy: func(t *testing.T, _ string) string { return controlplane.PolicyFile(t) },
		files:  []string{"testdata/restore-rbac.yaml", "testdata/restore-rules.yaml"},
		api:    true,
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.caPEM)
	return &restoreWorld{
		world:  w,
		apiURL: w.apiURL,
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
	}
}

// call sends a request to the restore API as user ("" sends no token,
// "nobody" a wrong one, "token:T" the token T) and returns the status and
// body.
func (w *restoreWorld) call(t *testing.T, user, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, w.apiURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case user == "":
	case strings.HasPrefix(user, "token:"):
		req.Header.Set("Authorization", "Bearer "+strings.TrimPrefix(user, "token:"))
	case user == "nobody":
		req.Header.Set("Authorization", "Bearer not-a-token-of-this-cluster")
	default:
		req.Header.Set("Authorization", "Bearer "+w.cp.UserConfig(user).BearerToken)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

func (w *restoreWorld) getJSON(t *testing.T, user, path string, into any) {
	t.Helper()
	code, body := w.call(t, user, http.MethodGet, path, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s as %s: %d %s", path, user, code, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func (w *restoreWorld) postJSON(t *testing.T, user, path string, body any, want int, into any) {
	t.Helper()
	code, data := w.call(t, user, http.MethodPost, path, body)
	if code != want {
		t.Fatalf("POST %s as %s: %d %s, want %d", path, user, code, data, want)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
}

// eventuallyGet polls a GET until check accepts what it decoded.
func (w *restoreWorld) eventuallyGet(t *testing.T, user, path string, into any, check func() error) {
	t.Helper()
	eventually(t, 45*time.Second, "GET "+path, func() error {
		code, body := w.call(t, user, http.MethodGet, path, nil)
		if code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		reflect.ValueOf(into).Elem().SetZero()
		if err := json.Unmarshal(body, into); err != nil {
			return err
		}
		return check()
	})
}

// deleteNamespace deletes a namespace as the admin and waits until the
// namespace controller has emptied and removed it.
func (w *restoreWorld) deleteNamespace(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := w.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "namespace gone", func() error {
		if _, err := w.admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace still there (%v)", err)
		}
		return nil
	})
}

// deletion waits for the recorded deletion of an object and returns it.
func (w *restoreWorld) deletion(t *testing.T, ns, resource, name string) history.Deletion {
	t.Helper()
	var page history.Page[history.Deletion]
	w.eventuallyGet(t, controlplane.AdminUser, "/api/v1/clusters/e2e/deletions?namespace="+ns+"&resource="+resource+"&name="+url.QueryEscape(name), &page, func() error {
		if len(page.Items) == 0 {
			return errors.New("no deletion recorded")
		}
		if page.Items[0].RestoreFrom == nil {
			return errors.New("no state to restore recorded")
		}
		return nil
	})
	return page.Items[0]
}

// changesOnly drops baseline observations: the sink's first LIST of what
// its rules cover may observe an object the test has just created.
func changesOnly(vs []history.Version) []history.Version {
	out := vs[:0:0]
	for _, v := range vs {
		if v.Origin != "baseline" {
			out = append(out, v)
		}
	}
	return out
}

// waitChanges waits until n changes of a ConfigMap are recorded.
func (w *restoreWorld) waitChanges(t *testing.T, ns, name string, n int) {
	t.Helper()
	var page history.Page[history.Version]
	w.eventuallyGet(t, controlplane.AdminUser, "/api/v1/clusters/e2e/history?resource=configmaps&namespace="+ns+"&name="+name, &page, func() error {
		if page.Items = changesOnly(page.Items); len(page.Items) != n {
			return fmt.Errorf("%d changes recorded, want %d", len(page.Items), n)
		}
		return nil
	})
}

// restores lists the restores table's rows of a resource as "user state
// dry_run", one per line.
func (w *restoreWorld) restores(t *testing.T, resource string) string {
	t.Helper()
	var out string
	err := w.db.QueryRow(context.Background(), `SELECT coalesce(string_agg(username || ' ' || state || ' ' || dry_run, E'\n' ORDER BY created_at), '')
		FROM options_record_api.restores WHERE kind = 'version' AND plan->0->'object'->>'resource' = $1`, resource).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRestoreAPIStandalone runs the API without a cluster: read-only, on
// loopback only, for the static token.
func TestRestoreAPIStandalone(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "api-token")
	const token = "standalone-e2e-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ls := newListeners(t)
	serve := func(ctx context.Context, addr string, started chan<- struct{}) error {
		return app.Serve(ctx, app.ServeOptions{
			Database: app.DatabaseOptions{URL: dsn, DataDir: dir}, Rules: app.RulesOptions{Namespace: sinkNS},
			WebhookAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0",
			API:    &app.APIOptions{Addr: addr, TokenFile: tokenFile},
			Logger: testLogger(t), OnListening: func(_, _ net.Addr) { close(started) }, Listen: ls.listen,
		})
	}
	if err := serve(context.Background(), "0.0.0.0:0", make(chan struct{})); err == nil || !strings.Contains(err.Error(), "loopback only") {
		t.Fatalf("standalone API on 0.0.0.0: %v, want a refusal", err)
	}

	addr := ls.addr()
	ctx, cancel := context.WithCancel(context.Background())
	started, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- serve(ctx, addr, started) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	caPEM, err := os.ReadFile(filepath.Join(dir, "tls", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	call := func(method, path, tok string) (int, string) {
		req, _ := http.NewRequest(method, "https://"+addr+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	key := strings.Repeat("0", 64)
	for _, tt := range []struct {
		method, path, token string
		code                int
		body                string
	}{
		{"GET", "/api/v1/clusters/any/changes", token, 200, `"items":[]`},
		{"GET", "/api/v1/clusters/any/deletions?namespace=prod", token, 200, `"items":[]`},
		{"GET", "/api/v1/clusters/any/changes", "", 401, "bearer token"},
		{"GET", "/api/v1/clusters/any/changes", "wrong-token-wrong-token", 401, "not accepted"},
		{"POST", "/api/v1/clusters/any/objects/u/versions/" + key + "/restore", token, 403, "standalone mode is read-only"},
		{"GET", "/api/v1/openapi.json", "", 200, `"openapi": "3.0.3"`},
	} {
		code, body := call(tt.method, tt.path, tt.token)
		if code != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("%s %s: %d %s, want %d with %q", tt.method, tt.path, code, body, tt.code, tt.body)
		}
	}
}

// uncommented is a YAML document without its comment lines.
func uncommented(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
