package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/store/model"
	"github.com/options-record/options-record/test/framework/controlplane"
)

// TestRecordOnARealControlPlane drives a real kube-apiserver as several users
// and checks what the sink recorded, through the SQL views operators use.
func TestRecordOnARealControlPlane(t *testing.T) {
	w := startWorld(t)
	ctx := context.Background()

	for _, ns := range []string{"e2e-app", "e2e-cascade", "e2e-late", "e2e-base"} {
		w.namespace(t, ns)
	}

	t.Run("lifecycle of a ConfigMap names each actor and prior state", func(t *testing.T) {
		alice, bob, carol := w.kube(t, "alice"), w.kube(t, "bob"), w.kube(t, "carol")
		cms := func(c *kubernetes.Clientset) func() (*corev1.ConfigMap, error) {
			return func() (*corev1.ConfigMap, error) {
				return c.CoreV1().ConfigMaps("e2e-app").Get(ctx, "settings", metav1.GetOptions{})
			}
		}
		ok(alice.CoreV1().ConfigMaps("e2e-app").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "info"}}, metav1.CreateOptions{}))(t)
		ok(bob.CoreV1().ConfigMaps("e2e-app").Patch(ctx, "settings", types.MergePatchType,
			[]byte(`{"data":{"level":"debug"}}`), metav1.PatchOptions{}))(t)
		ok(bob.CoreV1().ConfigMaps("e2e-app").Patch(ctx, "settings", types.JSONPatchType,
			[]byte(`[{"op":"add","path":"/data/extra","value":"1"}]`), metav1.PatchOptions{}))(t)
		cm := ok(cms(carol)())(t)
		cm.Data["level"] = "warn"
		ok(carol.CoreV1().ConfigMaps("e2e-app").Update(ctx, cm, metav1.UpdateOptions{}))(t)
		// Server-side apply by alice, with the field manager she names.
		ok(alice.CoreV1().ConfigMaps("e2e-app").Patch(ctx, "settings", types.ApplyPatchType,
			[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"owner":"alice"}}`),
			metav1.PatchOptions{FieldManager: "alice-apply", Force: ptr(true)}))(t)
		// Dry runs record nothing.
		ok(alice.CoreV1().ConfigMaps("e2e-app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}))(t)
		ok(bob.CoreV1().ConfigMaps("e2e-app").Patch(ctx, "settings", types.MergePatchType,
			[]byte(`{"data":{"level":"dry"}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}))(t)
		if err := carol.CoreV1().ConfigMaps("e2e-app").Delete(ctx, "settings", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		// A delete without a body, as curl -X DELETE sends it.
		if err := alice.CoreV1().RESTClient().Delete().Namespace("e2e-app").Resource("configmaps").Name("settings").Do(ctx).Error(); err != nil {
			t.Fatal(err)
		}

		want := []row{
			{Verb: "create", User: "alice", PriorKnown: true, Prior: "", After: "info"},
			{Verb: "patch", User: "bob", PriorKnown: true, Prior: "info", After: "debug"},
			{Verb: "patch", User: "bob", PriorKnown: true, Prior: "debug", After: "debug"},
			{Verb: "update", User: "carol", PriorKnown: true, Prior: "debug", After: "warn"},
			{Verb: "patch", User: "alice", PriorKnown: true, Prior: "warn", After: "warn"},
			{Verb: "delete", User: "alice", PriorKnown: true, Prior: "warn", After: "", Deleted: true},
		}
		w.waitHistory(t, "e2e-app", "configmaps", "settings", want)
		if n := w.count(t, `SELECT count(*) FROM events WHERE namespace = 'e2e-app' AND (name = 'dry' OR request_uri LIKE '%dryRun%' OR request_object::text LIKE '%dryRun%')`); n != 0 {
			t.Errorf("dry runs recorded: %d events", n)
		}
	})

	t.Run("secrets are digested, denied attempts and impersonation are kept", func(t *testing.T) {
		alice, eve := w.kube(t, "alice"), w.kube(t, "eve")
		ok(alice.CoreV1().Secrets("e2e-app").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			StringData: map[string]string{"password": "hunter2-e2e"}}, metav1.CreateOptions{}))(t)
		err := eve.CoreV1().Secrets("e2e-app").Delete(ctx, "db", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("eve's delete: %v, want forbidden", err)
		}
		cfg := w.cp.AdminConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "bob", Groups: []string{"developers"}}
		asBob := kubernetes.NewForConfigOrDie(cfg)
		if err := asBob.CoreV1().Secrets("e2e-app").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "failed delete recorded", func() error {
			if w.count(t, `SELECT count(*) FROM failed_mutations WHERE namespace = 'e2e-app' AND name = 'db' AND username = 'eve' AND response_code = 403`) != 1 {
				return errors.New("no row")
			}
			return nil
		})
		eventually(t, 30*time.Second, "impersonated delete recorded", func() error {
			if w.count(t, `SELECT count(*) FROM deletions WHERE namespace = 'e2e-app' AND name = 'db' AND impersonated_user = 'bob' AND username = '`+controlplane.AdminUser+`' AND prior_known`) != 1 {
				return errors.New("no row")
			}
			return nil
		})
		var dump string
		if err := w.db.QueryRow(ctx, `SELECT coalesce(string_agg(coalesce(object::text,'') || coalesce(request_object::text,'') || coalesce(prior_object::text,''), ' '), '')
			FROM object_history WHERE resource = 'secrets'`).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(dump, "hunter2-e2e") || strings.Contains(dump, "aHVudGVyMi1lMmU=") || !strings.Contains(dump, model.KeyedDigestPrefix) {
			t.Errorf("secret not digested: %s", dump)
		}
	})

	t.Run("client-side apply is recorded as kubectl sends it", func(t *testing.T) {
		carol := w.kube(t, "carol")
		const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
		applied := func(level string) string {
			return `{"apiVersion":"v1","data":{"level":"` + level + `"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"applied","namespace":"e2e-app"}}`
		}
		// kubectl apply of a new object: a create carrying the annotation.
		ok(carol.CoreV1().ConfigMaps("e2e-app").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "applied",
			Annotations: map[string]string{lastApplied: applied("one")}}, Data: map[string]string{"level": "one"}}, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}))(t)
		// kubectl apply of a change: a strategic merge patch of the fields and the annotation.
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{"level": "two"},
			"metadata": map[string]any{"annotations": map[string]string{lastApplied: applied("two")}}})
		ok(carol.CoreV1().ConfigMaps("e2e-app").Patch(ctx, "applied", types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-client-side-apply"}))(t)
		w.waitHistory(t, "e2e-app", "configmaps", "applied", []row{
			{Verb: "create", User: "carol", PriorKnown: true, After: "one"},
			{Verb: "patch", User: "carol", PriorKnown: true, Prior: "one", After: "two"},
		})
	})

	t.Run("a scale marks the Deployment's prior state stale", func(t *testing.T) {
		alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
		ok(alice.AppsV1().Deployments("e2e-app").Create(ctx, deployment("web"), metav1.CreateOptions{}))(t)
		ok(bob.AppsV1().Deployments("e2e-app").UpdateScale(ctx, "web", &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "e2e-app"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{}))(t)
		ok(alice.AppsV1().Deployments("e2e-app").Patch(ctx, "web", types.StrategicMergePatchType,
			[]byte(`{"metadata":{"labels":{"tier":"front"}}}`), metav1.PatchOptions{}))(t)
		eventually(t, 30*time.Second, "scale and patch recorded", func() error {
			var stale bool
			err := w.db.QueryRow(ctx, `SELECT prior_stale FROM object_history WHERE resource = 'deployments' AND name = 'web' AND verb = 'patch' AND username = 'alice'`).Scan(&stale)
			if err != nil {
				return err
			}
			if !stale {
				return errors.New("prior_stale is false after a /scale write")
			}
			return nil
		})
	})

	t.Run("a namespace deletion cascade is attributed to the user", func(t *testing.T) {
		alice, carol := w.kube(t, "alice"), w.kube(t, "carol")
		ok(alice.CoreV1().ConfigMaps("e2e-cascade").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
			Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}))(t)
		w.allow(t, "", "carol-deletes-namespaces", "carol", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"delete"}})
		// RBAC changes reach the authorizer's cache within a moment.
		eventually(t, 10*time.Second, "carol deletes the namespace", func() error {
			return carol.CoreV1().Namespaces().Delete(ctx, "e2e-cascade", metav1.DeleteOptions{})
		})
		eventually(t, 90*time.Second, "cascade deletion attributed", func() error {
			var by, via, user string
			err := w.db.QueryRow(ctx, `SELECT username, coalesce(initiated_by,''), coalesce(initiated_via,'') FROM deletions
				WHERE namespace = 'e2e-cascade' AND name = 'victim'`).Scan(&user, &by, &via)
			if err != nil {
				return err
			}
			if by != "carol" || via != "namespace-deletion" {
				return fmt.Errorf("deleted by %s, initiated by %q via %q", user, by, via)
			}
			return nil
		})
	})

	t.Run("owner cascades, background and foreground, are attributed to the user", func(t *testing.T) {
		alice, bob := w.kube(t, "alice"), w.kube(t, "bob")
		for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
			owner := ok(alice.CoreV1().ConfigMaps("e2e-app").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "owner-" + strings.ToLower(string(policy))}}, metav1.CreateOptions{}))(t)
			dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent-" + strings.ToLower(string(policy)),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}},
				Data: map[string]string{"level": "owned"}}
			ok(alice.CoreV1().ConfigMaps("e2e-app").Create(ctx, dep, metav1.CreateOptions{}))(t)
			if err := bob.CoreV1().ConfigMaps("e2e-app").Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 60*time.Second, string(policy)+" cascade attributed", func() error {
				var user, by, via, level string
				err := w.db.QueryRow(ctx, `SELECT username, coalesce(initiated_by,''), coalesce(initiated_via,''),
					coalesce(prior_object->'data'->>'level','') FROM deletions
					WHERE namespace = 'e2e-app' AND name = $1`, dep.Name).Scan(&user, &by, &via, &level)
				if err != nil {
					return err
				}
				if by != "bob" || via != "owner-deletion" || level != "owned" {
					return fmt.Errorf("dependent deleted by %s, initiated by %q via %q, prior level %q", user, by, via, level)
				}
				return nil
			})
		}
	})

	t.Run("a Deployment and an OptionsRecordController deletion keep their prior state", func(t *testing.T) {
		alice := w.kube(t, "alice")
		ok(alice.AppsV1().Deployments("e2e-app").Create(ctx, deployment("gone"), metav1.CreateOptions{}))(t)
		if err := alice.AppsV1().Deployments("e2e-app").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"short-lived","namespace":"options-record"},"spec":{"namespaces":["nowhere"]}}`), "")
		if err := w.dynAdmin.Resource(v1alpha1.GroupVersionResource).Namespace(sinkNS).Delete(ctx, "short-lived", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "deletions with prior state", func() error {
			var replicas, ns string
			err := w.db.QueryRow(ctx, `SELECT
				(SELECT prior_object->'spec'->>'replicas' FROM deletions WHERE resource = 'deployments' AND name = 'gone'),
				(SELECT prior_object->'spec'->'namespaces'->>0 FROM deletions WHERE resource = 'optionsrecordcontrollers' AND name = 'short-lived')`).Scan(&replicas, &ns)
			if err != nil {
				return err
			}
			if replicas != "1" || ns != "nowhere" {
				return fmt.Errorf("prior replicas %q, prior namespaces %q", replicas, ns)
			}
			return nil
		})
	})

	t.Run("a new OptionsRecordController takes effect at once, and gets a status", func(t *testing.T) {
		alice := w.kube(t, "alice")
		// e2e-late is not covered by the e2e rule? It is (e2e-*). Use a tenant
		// rule in a fresh namespace instead: outside the sink's namespace it
		// records its own namespace.
		w.namespace(t, "tenant-a")
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"mine","namespace":"tenant-a"},"spec":{}}`), "")
		eventually(t, 10*time.Second, "create in a fresh namespace (RBAC settles)", func() error {
			_, err := alice.CoreV1().ConfigMaps("tenant-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "t1"}}, metav1.CreateOptions{})
			return err
		})
		eventually(t, 30*time.Second, "tenant rule records", func() error {
			if w.count(t, `SELECT count(*) FROM object_history WHERE namespace = 'tenant-a' AND name = 't1' AND 'tenant-a/mine' = ANY(rules)`) != 1 {
				return errors.New("not recorded under tenant-a/mine")
			}
			return nil
		})
		// A tenant rule reaching for other namespaces is refused.
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"greedy","namespace":"tenant-a"},"spec":{"namespaces":["kube-system"]}}`), "")
		w.waitCondition(t, "tenant-a", "greedy", metav1.ConditionFalse, v1alpha1.ReasonNamespaceOutOfScope)
		w.waitCondition(t, "tenant-a", "mine", metav1.ConditionTrue, v1alpha1.ReasonSynced)
		eventually(t, 30*time.Second, "recordedEvents", func() error {
			o := w.getORC(t, "tenant-a", "mine")
			if o.Status.RecordedEvents < 1 || o.Status.LastRecordedTime == nil || o.Status.ObservedGeneration != o.Generation {
				return fmt.Errorf("status %+v", o.Status)
			}
			return nil
		})
		// Deleting the rule stops the recording, again within a batch.
		unanswered := func() float64 { return unansweredBatches(t, w) }
		failedBefore := unanswered()
		if err := w.dynAdmin.Resource(v1alpha1.GroupVersionResource).Namespace("tenant-a").Delete(ctx, "mine", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ok(alice.CoreV1().ConfigMaps("tenant-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "t2"}}, metav1.CreateOptions{}))(t)
		ok(alice.CoreV1().ConfigMaps("e2e-late").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sentinel"}}, metav1.CreateOptions{}))(t)
		w.waitHistory(t, "e2e-late", "configmaps", "sentinel", []row{{Verb: "create", User: "alice", PriorKnown: true}})
		// The sentinel and t2 may travel in different batches, sent
		// concurrently: t2's went first and has been answered once no
		// batch is in flight at the sink and none failed (a failed one
		// would come again later).
		eventually(t, 30*time.Second, "no batch in flight", func() error {
			if n := w.metric(t, `options_record_batches_in_flight`); n != 0 {
				return fmt.Errorf("%v in flight", n)
			}
			return nil
		})
		if n := unanswered(); n != failedBefore {
			t.Fatalf("%v batches were refused meanwhile: t2's may come again later, so its absence proves nothing", n-failedBefore)
		}
		if n := w.count(t, `SELECT count(*) FROM events WHERE namespace = 'tenant-a' AND name = 't2'`); n != 0 {
			t.Errorf("recorded after its rule was deleted: %d", n)
		}
	})

	t.Run("a baseline gives the first change after a rule a prior state", func(t *testing.T) {
		// The namespace sorts last, so its ConfigMap comes in the last page
		// of the cluster-wide LIST: with the sink's small baseline passes
		// (7 objects), it is reached only if passes go on where the
		// previous one stopped.
		alice := w.kube(t, "alice")
		w.namespace(t, "base-filler")
		for i := range 12 {
			eventually(t, 10*time.Second, "filler ConfigMap", func() error {
				_, err := alice.CoreV1().ConfigMaps("base-filler").Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%02d", i)}}, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
		}
		w.namespace(t, "zz-base-x")
		eventually(t, 10*time.Second, "create in a fresh namespace (RBAC settles)", func() error {
			_, err := alice.CoreV1().ConfigMaps("zz-base-x").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old"},
				Data: map[string]string{"level": "before-rule"}}, metav1.CreateOptions{})
			return err
		})
		// The create's batch must be answered before the rule exists (a
		// rule created in the same batch would select it): a sentinel
		// created after it is recorded, no batch is in flight at the sink
		// and none was refused meanwhile (it would come again later),
		// instead of 3 s and hoping.
		refusedBefore := unansweredBatches(t, w)
		ok(alice.CoreV1().ConfigMaps("e2e-late").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sentinel-base"}}, metav1.CreateOptions{}))(t)
		w.waitHistory(t, "e2e-late", "configmaps", "sentinel-base", []row{{Verb: "create", User: "alice", PriorKnown: true}})
		eventually(t, 30*time.Second, "no batch in flight", func() error {
			if n := w.metric(t, `options_record_batches_in_flight`); n != 0 {
				return fmt.Errorf("%v in flight", n)
			}
			return nil
		})
		if n := unansweredBatches(t, w); n != refusedBefore {
			t.Fatalf("%v batches were refused meanwhile: the create's may come again after the rule", n-refusedBefore)
		}
		w.apply.create(t, []byte(`{"apiVersion":"optionsrecord.io/v1alpha1","kind":"OptionsRecordController",
			"metadata":{"name":"zz-base-x","namespace":"options-record"},"spec":{"namespaces":["zz-base-x"],"resources":[{"group":"","resources":["configmaps"]}]}}`), "")
		eventually(t, 60*time.Second, "baseline stored", func() error {
			if w.count(t, `SELECT count(*) FROM object_versions WHERE origin = 'baseline' AND namespace = 'zz-base-x' AND name = 'old'`) != 1 {
				return errors.New("no baseline")
			}
			return nil
		})
		ok(alice.CoreV1().ConfigMaps("zz-base-x").Patch(ctx, "old", types.MergePatchType, []byte(`{"data":{"level":"after"}}`), metav1.PatchOptions{}))(t)
		w.waitHistory(t, "zz-base-x", "configmaps", "old", []row{{Verb: "patch", User: "alice", PriorKnown: true, Prior: "before-rule", After: "after"}})
	})

	t.Run("the sink never watches and its own requests are not recorded", func(t *testing.T) {
		f, err := os.Open(w.auditLog)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		verbs := map[string]int{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev struct {
				Verb string `json:"verb"`
				User struct {
					Username string `json:"username"`
				} `json:"user"`
				Stage string `json:"stage"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != sinkUser {
				continue
			}
			// A watch still open when the log is read has only its
			// ResponseStarted entry: every stage of a watch counts.
			if ev.Stage == "ResponseComplete" || ev.Verb == "watch" {
				verbs[ev.Verb]++
			}
		}
		if verbs["list"] == 0 {
			t.Errorf("the audit log shows no LIST by the sink: %v (is the instrumentation working?)", verbs)
		}
		if verbs["watch"] > 0 {
			t.Errorf("the sink issued %d watches", verbs["watch"])
		}
		if n := w.count(t, `SELECT count(*) FROM events WHERE username = '`+sinkUser+`'`); n != 0 {
			t.Errorf("%d of the sink's own requests were recorded", n)
		}
		t.Logf("the sink's requests seen by the apiserver: %v", verbs)
	})
}

// row is one change as the tests compare it: data.level before and after.
type row struct {
	Verb, User          string
	PriorKnown, Deleted bool
	Prior, After        string
}

func (w *world) waitHistory(t *testing.T, ns, resource, name string, want []row) {
	t.Helper()
	eventually(t, 45*time.Second, "history of "+ns+"/"+name, func() error {
		rows, err := w.db.Query(context.Background(), `
			SELECT verb, username, prior_known, deleted,
			       coalesce(prior_object->'data'->>'level', ''), coalesce(object->'data'->>'level', '')
			FROM object_history WHERE namespace = $1 AND resource = $2 AND name = $3
			ORDER BY changed_at, resource_version NULLS LAST`, ns, resource, name)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			err := r.Scan(&x.Verb, &x.User, &x.PriorKnown, &x.Deleted, &x.Prior, &x.After)
			return x, err
		})
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("\n got %v\nwant %v", got, want)
		}
		return nil
	})
}

func (w *world) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	if err := w.db.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// namespace creates a namespace where the test users may edit (eve may read).
func (w *world) namespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for role, subjects := range map[string][]string{"e2e-editor": {"alice", "bob", "carol"}, "e2e-reader": {"eve"}} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: name},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role}}
		for _, s := range subjects {
			rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: s})
		}
		if _, err := w.admin.RbacV1().RoleBindings(name).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// The authorizer sees new bindings a moment later: wait for them.
	alice := w.kube(t, "alice")
	eventually(t, 10*time.Second, "RBAC of namespace "+name, func() error {
		r, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: name, Verb: "create", Resource: "configmaps"}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !r.Status.Allowed {
			return errors.New("not yet allowed")
		}
		return nil
	})
}

// allow grants a user a cluster-wide rule.
func (w *world) allow(t *testing.T, _ string, name, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	ok(w.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}))(t)
	ok(w.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{}))(t)
}

func (w *world) getORC(t *testing.T, ns, name string) v1alpha1.OptionsRecordController {
	t.Helper()
	u, err := w.dynAdmin.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var o v1alpha1.OptionsRecordController
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func (w *world) waitCondition(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	eventually(t, 30*time.Second, "condition of "+ns+"/"+name, func() error {
		o := w.getORC(t, ns, name)
		c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Ready condition = %+v", c)
		}
		return nil
	})
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// ok fails the test on an error and returns the value: ok(f())(t).
func ok[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// unansweredBatches counts the batches the apiserver would send again,
// later and out of order.
func unansweredBatches(t *testing.T, w *world) float64 {
	t.Helper()
	var n float64
	for _, o := range []string{"rejected", "slow_body", "throttled", "unavailable", "unauthenticated"} {
		n += w.metric(t, `options_record_batches_total{outcome="`+o+`"}`)
	}
	return n
}
