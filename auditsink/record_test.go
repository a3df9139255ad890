package auditsink_test

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/auditsink"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/store"
	"github.com/options-record/options-record/store/model"
	. "github.com/options-record/options-record/test/gen"
)

// lifecycle is create → patch → update → delete of one ConfigMap, each with
// the state the apiserver answers.
func lifecycle() []*auditv1.Event {
	const uid = "11111111-0000-0000-0000-000000000001"
	return []*auditv1.Event{
		Event(Verb("create"), User("alice"), Name("cm"),
			Request(ConfigMap("default", "cm", "", 0, map[string]string{"k": "v1"})),
			Response(ConfigMap("default", "cm", uid, 100, map[string]string{"k": "v1"}))),
		Event(Verb("patch"), User("bob"), Name("cm"),
			Request(map[string]any{"data": map[string]any{"k": "v2"}}),
			Response(ConfigMap("default", "cm", uid, 105, map[string]string{"k": "v2"}))),
		Event(Verb("update"), User("carol"), Name("cm"),
			Request(ConfigMap("default", "cm", uid, 105, map[string]string{"k": "v3"})),
			Response(ConfigMap("default", "cm", uid, 110, map[string]string{"k": "v3"}))),
		Event(Verb("delete"), User("dave"), Name("cm"),
			Response(Status("", "configmaps", "cm", uid))),
	}
}

type step struct {
	verb, user   string
	priorKnown   bool
	prior, after string // data.k of the prior and after states ("" = none)
	deleted      bool
}

func summarize(h []change) []step {
	var out []step
	val := func(o map[string]any) string {
		if v, ok := data(o)["k"].(string); ok {
			return v
		}
		return ""
	}
	for _, c := range h {
		out = append(out, step{c.Verb, c.Username, c.PriorKnown, val(c.PriorObject), val(c.Object), c.Deleted})
	}
	return out
}

var wantLifecycle = []step{
	{"create", "alice", true, "", "v1", false},
	{"patch", "bob", true, "v1", "v2", false},
	{"update", "carol", true, "v2", "v3", false},
	{"delete", "dave", true, "v3", "", true},
}

func TestLifecyclePriorStates(t *testing.T) {
	e := newEnv(t)
	evs := lifecycle()
	for _, ev := range evs {
		e.send(ev)
	}
	if diff := cmp.Diff(wantLifecycle, summarize(e.history("default", "cm")), cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	h := e.history("default", "cm")
	if got := h[1].RequestObject; got == nil || !strings.Contains(toJSON(got), `"v2"`) {
		t.Errorf("patch body not kept: %v", got)
	}
	if h[0].RequestObject != nil {
		t.Errorf("create body stored twice (it equals the response): %v", h[0].RequestObject)
	}
}

func TestOutOfOrderArrivalGivesSameHistory(t *testing.T) {
	e := newEnv(t)
	evs := lifecycle()
	// Batches arrive newest first, and the middle two together.
	e.send(evs[3])
	e.send(evs[2], evs[1])
	e.send(evs[0])
	if diff := cmp.Diff(wantLifecycle, summarize(e.history("default", "cm")), cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestRedeliveredBatchAddsNothing(t *testing.T) {
	e := newEnv(t)
	evs := lifecycle()
	first := e.send(evs...)
	if first.Written.Events != 4 || first.Written.Versions != 4 {
		t.Fatalf("first delivery wrote %+v, want 4 events and 4 versions", first.Written)
	}
	again := e.send(evs...)
	if again.Written.Events != 0 || again.Written.Versions != 0 || again.Written.DuplicateEvents != 4 {
		t.Errorf("redelivery wrote %+v, want nothing new and 4 duplicates", again.Written)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 4 {
		t.Errorf("events = %d, want 4", n)
	}
	if n := e.count(`SELECT count(*) FROM object_versions`); n != 4 {
		t.Errorf("versions = %d, want 4", n)
	}
}

func TestNoopUpdateCreatesNoVersion(t *testing.T) {
	e := newEnv(t)
	evs := lifecycle()
	e.send(evs[0])
	// kubectl apply with nothing to change: the apiserver answers the same
	// resourceVersion.
	noop := Event(Verb("patch"), User("bob"), Name("cm"), Request(map[string]any{"data": map[string]any{"k": "v1"}}),
		Response(ConfigMap("default", "cm", "11111111-0000-0000-0000-000000000001", 100, map[string]string{"k": "v1"})))
	out := e.send(noop)
	if out.Written.Events != 1 || out.Written.NoopVersions != 1 || out.Written.Versions != 0 {
		t.Errorf("no-op patch wrote %+v, want the event, no version", out.Written)
	}
}

func TestCraftedAuditIDDoesNotHideAChange(t *testing.T) {
	e := newEnv(t)
	evs := lifecycle()
	// The deleting client reuses the auditID of the create (Audit-ID header).
	evs[3].AuditID = evs[0].AuditID
	for _, ev := range evs {
		e.send(ev)
	}
	if diff := cmp.Diff(wantLifecycle, summarize(e.history("default", "cm")), cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestDeleteCollectionRecordsEachObject(t *testing.T) {
	e := newEnv(t)
	a := ConfigMap("prod", "a", "uid-a", 200, map[string]string{"k": "a1"})
	b := ConfigMap("prod", "b", "uid-b", 201, map[string]string{"k": "b1"})
	e.send(
		Event(Namespace("prod"), Name("a"), Response(a)),
		Event(Namespace("prod"), Name("b"), Response(b)),
	)
	e.send(Event(Verb("deletecollection"), User("erin"), Namespace("prod"), Name(""),
		Response(List("v1", "ConfigMapList", 300, a, b))))
	for _, name := range []string{"a", "b"} {
		h := e.history("prod", name)
		if len(h) != 2 {
			t.Fatalf("%s: %d changes, want create and deletecollection", name, len(h))
		}
		d := h[1]
		if d.Verb != "deletecollection" || d.Username != "erin" || !d.Deleted || !d.PriorKnown || data(d.PriorObject)["k"] != name+"1" {
			t.Errorf("%s: deletecollection row = %+v", name, d)
		}
		// The List's items have no type of their own: the stored state
		// is a whole Kubernetes object again, so it can be restored.
		if d.PriorObject["apiVersion"] != "v1" || d.PriorObject["kind"] != "ConfigMap" {
			t.Errorf("%s: state before the deletecollection has apiVersion %v kind %v, want v1 ConfigMap", name, d.PriorObject["apiVersion"], d.PriorObject["kind"])
		}
	}
	if n := e.count(`SELECT count(*) FROM object_versions WHERE verb = 'deletecollection' AND complete
		AND kind = 'ConfigMap' AND object->>'kind' = 'ConfigMap' AND object->>'apiVersion' = 'v1'`); n != 2 {
		t.Errorf("complete deletecollection versions typed ConfigMap = %d, want 2", n)
	}
	if n := e.count(`SELECT count(*) FROM deletions WHERE namespace = 'prod'`); n != 2 {
		t.Errorf("deletions = %d, want 2", n)
	}
}

// TestDeleteCollectionOfMetadataRecordsEachDeletion: a deletecollection
// answered with its items' metadata only (a PartialObjectMetadataList, as
// the metadata API asks, or a List the webhook cut to its metadata for its
// size) still records which objects went, by whom, with the state recorded
// before; the metadata is not taken for a state to restore.
func TestDeleteCollectionOfMetadataRecordsEachDeletion(t *testing.T) {
	e := newEnv(t)
	a := ConfigMap("prod", "a", "uid-a", 200, map[string]string{"k": "a1"})
	b := ConfigMap("prod", "b", "uid-b", 201, map[string]string{"k": "b1"})
	e.send(Event(Namespace("prod"), Name("a"), Response(a)), Event(Namespace("prod"), Name("b"), Response(b)))
	metaOnly := func(o Obj) Obj {
		return Obj{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": o["metadata"]}
	}
	list := Obj{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": Obj{"resourceVersion": "300"},
		"items": []any{metaOnly(a), metaOnly(b)}}
	e.send(Event(Verb("deletecollection"), User("erin"), Namespace("prod"), Name(""), Response(list)))
	for _, name := range []string{"a", "b"} {
		h := e.history("prod", name)
		if len(h) != 2 {
			t.Fatalf("%s: %d changes, want create and deletecollection", name, len(h))
		}
		if d := h[1]; d.Verb != "deletecollection" || d.Username != "erin" || !d.Deleted || !d.PriorKnown || data(d.PriorObject)["k"] != name+"1" {
			t.Errorf("%s: deletecollection row = %+v", name, d)
		}
	}
	if n := e.count(`SELECT count(*) FROM object_versions WHERE verb = 'deletecollection' AND NOT complete AND object IS NULL AND deleted`); n != 2 {
		t.Errorf("deletecollection versions without a state = %d, want 2", n)
	}
	if n := e.count(`SELECT count(*) FROM deletions WHERE namespace = 'prod' AND username = 'erin' AND prior_object->'data'->>'k' IN ('a1', 'b1')`); n != 2 {
		t.Errorf("deletions with their prior state = %d, want 2", n)
	}
}

func TestNamespaceCascadeIsAttributedToTheUser(t *testing.T) {
	e := newEnv(t)
	cm := ConfigMap("team-a", "settings", "uid-s", 400, map[string]string{"k": "x"})
	e.send(Event(Namespace("team-a"), Name("settings"), Response(cm)))
	e.send(Event(Verb("delete"), User("mallory"), Resource("", "v1", "namespaces"), Namespace(""), Name("team-a"),
		Response(NamespaceObj("team-a", "uid-ns", 401, true))))
	e.send(Event(Verb("deletecollection"), User("system:kube-controller-manager"),
		UserAgent("kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:namespace-controller"),
		Namespace("team-a"), Name(""), Response(List("v1", "ConfigMapList", 402, cm))))

	var who, via string
	err := e.pool.QueryRow(t.Context(), `
		SELECT initiated_by, initiated_via FROM deletions
		WHERE namespace = 'team-a' AND name = 'settings'`).Scan(&who, &via)
	if err != nil {
		t.Fatalf("query deletions: %v", err)
	}
	if who != "mallory" || via != "namespace-deletion" {
		t.Errorf("cascade initiated by %q via %q, want mallory via namespace-deletion", who, via)
	}
}

func TestOwnerCascadeIsAttributedToTheUser(t *testing.T) {
	e := newEnv(t)
	dep := Deployment("prod", "web", "uid-dep", 500, 2)
	rs := Object("apps/v1", "ReplicaSet", "prod", "web-1", "uid-rs", 501, OwnedBy("apps/v1", "Deployment", "web", "uid-dep"))
	e.send(
		Event(Resource("apps", "v1", "deployments"), Namespace("prod"), Name("web"), Response(dep)),
		Event(User("system:kube-controller-manager"), Resource("apps", "v1", "replicasets"), Namespace("prod"), Name("web-1"), Response(rs)),
	)
	e.send(Event(Verb("delete"), User("oscar"), Resource("apps", "v1", "deployments"), Namespace("prod"), Name("web"),
		Response(Status("apps", "deployments", "web", "uid-dep"))))
	e.send(Event(Verb("delete"), User("system:kube-controller-manager"),
		UserAgent("kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:generic-garbage-collector"),
		Resource("apps", "v1", "replicasets"), Namespace("prod"), Name("web-1"),
		Response(Status("apps", "replicasets", "web-1", "uid-rs"))))
	var who, via string
	err := e.pool.QueryRow(t.Context(), `SELECT initiated_by, initiated_via FROM deletions WHERE name = 'web-1'`).Scan(&who, &via)
	if err != nil {
		t.Fatalf("query deletions: %v", err)
	}
	if who != "oscar" || via != "owner-deletion" {
		t.Errorf("GC delete initiated by %q via %q, want oscar via owner-deletion", who, via)
	}
}

func TestDryRunsRecordNothing(t *testing.T) {
	e := newEnv(t)
	out := e.send(
		Event(Verb("create"), URI("/api/v1/namespaces/default/configmaps?dryRun=All"),
			Response(ConfigMap("default", "cm", "uid-dry", 10, map[string]string{"k": "v"}))),
		Event(Verb("delete"), Request(DeleteOptions(true)), Response(Status("", "configmaps", "cm", "uid-x"))),
	)
	if out.Kept != 0 || out.Dropped["dry_run"] != 2 {
		t.Errorf("outcome %+v, want both dropped as dry_run", out)
	}
	if n := e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("events = %d, want 0", n)
	}
}

func TestFailedMutationsAreKept(t *testing.T) {
	e := newEnv(t)
	e.send(Event(Verb("delete"), User("eve"), Name("cm"), Failed(403, "Forbidden", `configmaps "cm" is forbidden`)))
	var user string
	var code int
	if err := e.pool.QueryRow(t.Context(), `SELECT username, response_code FROM failed_mutations WHERE name = 'cm'`).Scan(&user, &code); err != nil {
		t.Fatalf("query failed_mutations: %v", err)
	}
	if user != "eve" || code != 403 {
		t.Errorf("failed mutation = %s %d", user, code)
	}
	if n := e.count(`SELECT count(*) FROM object_versions`); n != 0 {
		t.Errorf("a failed mutation created %d versions", n)
	}
}

func TestImpersonationNamesBothIdentities(t *testing.T) {
	e := newEnv(t)
	e.send(Event(User("admin"), Impersonating("bob", "devs"), Name("imp"),
		Response(ConfigMap("default", "imp", "uid-imp", 20, nil))))
	h := e.history("default", "imp")
	if len(h) != 1 || h[0].Username != "admin" || h[0].ImpersonatedUser == nil || *h[0].ImpersonatedUser != "bob" {
		t.Errorf("history = %+v", h)
	}
}

func TestScaleMarksThePriorStale(t *testing.T) {
	e := newEnv(t)
	dep := func(rv int64, replicas int) map[string]any { return Deployment("prod", "api", "uid-api", rv, replicas) }
	deps := func(mods ...EventMod) []EventMod {
		return append([]EventMod{Resource("apps", "v1", "deployments"), Namespace("prod"), Name("api")}, mods...)
	}
	e.send(Event(deps(Response(dep(600, 1)))...))
	e.send(Event(deps(Verb("patch"), Subresource("scale"), Request(map[string]any{"spec": map[string]any{"replicas": 5}}),
		Response(Scale("prod", "api", "uid-api", 601, 5)))...))
	e.send(Event(deps(Verb("patch"), Request(map[string]any{"metadata": map[string]any{"labels": map[string]any{"t": "x"}}}),
		Response(dep(602, 5)))...))
	h := e.history("prod", "api")
	if len(h) != 3 {
		t.Fatalf("history has %d rows, want create, scale, patch", len(h))
	}
	if h[1].Object != nil {
		t.Errorf("the Scale answer was stored as the Deployment: %v", h[1].Object)
	}
	if !h[2].PriorStale {
		t.Errorf("the patch after a scale should say its prior state is stale")
	}
}

func TestSecretsAreDigestedUnlessARuleAsks(t *testing.T) {
	e := newEnv(t)
	applied := `{"apiVersion":"v1","kind":"Secret","data":{"password":"aHVudGVyMg=="}}`
	sec := Secret("default", "db", "uid-sec", 700, map[string]string{"password": "hunter2"},
		Annotation("kubectl.kubernetes.io/last-applied-configuration", applied))
	e.send(Event(Resource("", "v1", "secrets"), Name("db"), Request(sec), Response(sec)))
	e.send(Event(Verb("patch"), Resource("", "v1", "secrets"), Name("db"),
		Request([]any{map[string]any{"op": "replace", "path": "/data/password", "value": "c3dvcmRmaXNo"}}),
		Response(Secret("default", "db", "uid-sec", 701, map[string]string{"password": "swordfish"}))))
	e.send(Event(Verb("patch"), Resource("", "v1", "secrets"), Name("db"),
		Request(map[string]any{"stringData": map[string]any{"password": "tuna"}}),
		Response(Secret("default", "db", "uid-sec", 702, map[string]string{"password": "tuna"}))))
	e.send(Event(Verb("update"), Resource("", "v1", "secrets"), Name("db"), Failed(409, "Conflict", "conflict"),
		Request(Secret("default", "db", "uid-sec", 701, map[string]string{"password": "marlin"}))))
	// Annotations are free text: a tool's credential URL is digested, the
	// ServiceAccount a token Secret belongs to is not. A refusal whose
	// message echoes the values sent (an admission webhook's) keeps the
	// message, not the values.
	e.send(Event(Verb("update"), Resource("", "v1", "secrets"), Name("db"),
		Failed(403, "Forbidden", `admission webhook "policy.example.com" denied the request: password "barracuda" is in the breach list; git URL https://ci:pike-token@git.example/x`),
		Request(Secret("default", "db", "uid-sec", 702, map[string]string{"password": "barracuda"},
			Annotation("tekton.dev/git-0", "https://ci:pike-token@git.example/x"),
			Annotation("kubernetes.io/service-account.name", "builder")))))
	// A mutating admission webhook injected a value: the apiserver records
	// its patch in an audit annotation.
	e.send(Event(Verb("update"), Resource("", "v1", "secrets"), Name("db"),
		Request(Secret("default", "db", "uid-sec", 702, map[string]string{"password": "tuna"})),
		Response(Secret("default", "db", "uid-sec", 703, map[string]string{"password": "tuna", "token": "octopus"})),
		func(ev *auditv1.Event) {
			ev.Annotations = map[string]string{
				"patch.webhook.admission.k8s.io/round_0_index_0":    `{"configuration":"inject","webhook":"inject.example.com","patch":[{"op":"add","path":"/data/token","value":"b2N0b3B1cw=="}],"patchType":"JSONPatch"}`,
				"patch.webhook.admission.k8s.io/round_0_index_1":    `not json octopus`,
				"mutation.webhook.admission.k8s.io/round_0_index_0": `{"configuration":"inject","webhook":"inject.example.com","mutated":true}`,
			}
		}))

	var dump string
	if err := e.pool.QueryRow(t.Context(), `
		SELECT coalesce(string_agg(object::text, ' '), '') || coalesce((SELECT string_agg(request_object::text, ' ') FROM events), '')
		    || coalesce((SELECT string_agg(annotations::text, ' ') FROM events), '')
		FROM object_versions`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, "inject.example.com") || !strings.Contains(dump, `\"mutated\":true`) {
		t.Errorf("the admission annotations are not kept (digested): %s", dump)
	}
	if !strings.Contains(dump, `"kubernetes.io/service-account.name": "builder"`) && !strings.Contains(dump, `"kubernetes.io/service-account.name":"builder"`) {
		t.Errorf("the service-account annotation, which names and holds nothing secret, is not kept in clear: %s", dump)
	}
	var msg string
	if err := e.pool.QueryRow(t.Context(), `SELECT response_message FROM events WHERE response_code = 403 AND resource = 'secrets'`).Scan(&msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "is in the breach list") || strings.Contains(msg, "barracuda") || strings.Contains(msg, "pike-token") {
		t.Errorf("refusal message as stored: %q; want it without the values it echoed", msg)
	}
	for _, clear := range []string{"hunter2", "aHVudGVyMg==", "swordfish", "c3dvcmRmaXNo", "tuna", "marlin", "bWFybGlu", "dHVuYQ==", "octopus", "b2N0b3B1cw==",
		"barracuda", "YmFycmFjdWRh", "pike-token"} {
		if strings.Contains(dump, clear) {
			t.Errorf("secret value %q stored in clear", clear)
		}
	}
	if !strings.Contains(dump, model.KeyedDigestPrefix) {
		t.Errorf("no keyed digests stored: %s", dump)
	}
	// Keyed: a value's plain SHA-256 (what a dictionary of guesses holds)
	// is not in the record, the HMAC under the sink's key is.
	plain := sha256.Sum256([]byte("hunter2"))
	if strings.Contains(dump, hex.EncodeToString(plain[:])) {
		t.Errorf("the plain SHA-256 of a secret value is stored: it can be matched against guesses")
	}
	// The digest is HMAC-SHA256 under a key of its own, derived from the
	// sink's key (HKDF), of the value bound to its place: cluster,
	// namespace, name and data key, each length-prefixed.
	valueKey, err := hkdf.Key(sha256.New, []byte(testDigestKey), nil, "options-record/v2 secret value digest", 32)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, valueKey)
	for _, f := range []string{"default", "default", "db", "password"} {
		mac.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
		mac.Write([]byte(f))
	}
	mac.Write([]byte("hunter2"))
	if !strings.Contains(dump, model.KeyedDigestPrefix+hex.EncodeToString(mac.Sum(nil))) {
		t.Errorf("the place-bound HMAC-SHA256 of hunter2 is not stored: %s", dump)
	}
	unbound := hmac.New(sha256.New, []byte(testDigestKey))
	unbound.Write([]byte("hunter2"))
	if strings.Contains(dump, hex.EncodeToString(unbound.Sum(nil))) {
		t.Errorf("the HMAC of hunter2 under the operator's key itself is stored: equal values link across Secrets")
	}
	h := e.history("default", "db")
	if len(h) != 4 || !h[0].SecretDigested {
		t.Fatalf("history = %d rows, digested=%v", len(h), len(h) > 0 && h[0].SecretDigested)
	}
	if data(h[1].PriorObject)["password"] == data(h[1].Object)["password"] {
		t.Errorf("digests of different values are equal: a diff could not show the change")
	}

	// A rule with recordSecretData keeps the values.
	e.send(Event(Resource("", "v1", "secrets"), Namespace("vault"), Name("kept"),
		Response(Secret("vault", "kept", "uid-kept", 800, map[string]string{"token": "abc"}))))
	hk := e.history("vault", "kept")
	if len(hk) != 1 || data(hk[0].Object)["token"] != "YWJj" || hk[0].SecretDigested {
		t.Errorf("vault secret = %+v", hk)
	}
}

func TestRecreatedObjectHistorySpansIncarnations(t *testing.T) {
	e := newEnv(t)
	e.send(Event(Name("re"), Response(ConfigMap("default", "re", "uid-1", 900, map[string]string{"k": "first"}))))
	e.send(Event(Verb("delete"), Name("re"), Response(Status("", "configmaps", "re", "uid-1"))))
	e.send(Event(Name("re"), At(Base.Add(time.Hour)), Response(ConfigMap("default", "re", "uid-2", 950, map[string]string{"k": "second"}))))
	h := e.history("default", "re")
	if len(h) != 3 || h[0].UID != "uid-1" || h[2].UID != "uid-2" || h[2].Verb != "create" || h[2].PriorObject != nil || !h[2].PriorKnown {
		t.Errorf("history = %+v", h)
	}
}

// TestRemovingTheLastFinalizerDeletes: a delete of an object with a
// finalizer only marks it; the write that removes the last finalizer is what
// deletes it, and no delete event follows. The record must say the object is
// gone from then on (objects_as_of, the deleted flag).
func TestRemovingTheLastFinalizerDeletes(t *testing.T) {
	e := newEnv(t)
	const uid = "uid-fin"
	cm := func(rv int64, mods ...ObjMod) Obj { return ConfigMap("default", "fin", uid, rv, nil, mods...) }
	e.send(
		Event(Verb("create"), Name("fin"), Request(cm(0, Finalizers("example.com/hold"))), Response(cm(10, Finalizers("example.com/hold")))),
		Event(Verb("delete"), User("alice"), Name("fin"), Response(cm(11, Finalizers("example.com/hold"), Deleting()))),
	)
	later := Base.Add(time.Hour)
	e.send(Event(Verb("patch"), User("controller"), Name("fin"), At(later),
		Request(Obj{"metadata": Obj{"finalizers": nil}}), Response(cm(12, Deleting()))))

	h := e.history("default", "fin")
	if len(h) != 3 {
		t.Fatalf("history has %d rows, want 3", len(h))
	}
	if h[1].Deleted {
		t.Error("the delete of an object holding a finalizer says it is gone")
	}
	if !h[2].Deleted || h[2].Verb != "patch" {
		t.Errorf("the patch that removed the last finalizer: verb %s, deleted %v; want the object gone", h[2].Verb, h[2].Deleted)
	}
	asOf := func(at time.Time) int {
		return e.count(`SELECT count(*) FROM objects_as_of('default', 'default', $1) WHERE name = 'fin'`, at)
	}
	if n := asOf(Base.Add(time.Minute)); n != 1 {
		t.Errorf("objects_as_of while it was terminating: %d, want 1", n)
	}
	if n := asOf(later.Add(time.Minute)); n != 0 {
		t.Errorf("objects_as_of after its last finalizer went: %d, want 0 (gone)", n)
	}
}

// TestNamespaceCascadeNeedsTheObjectToPredateTheDeletion: alice deleted
// namespace team-b long ago; it was made again, and an object created there
// since is deleted by the controller manager (a Job's TTL, say). Alice's old
// deletion did not start that.
func TestNamespaceCascadeNeedsTheObjectToPredateTheDeletion(t *testing.T) {
	e := newEnv(t)
	e.send(Event(Verb("delete"), User("alice"), Resource("", "v1", "namespaces"), Namespace(""), Name("team-b"),
		At(Base.Add(-24*time.Hour)), Response(NamespaceObj("team-b", "uid-ns-old", 600, true))))
	cm := ConfigMap("team-b", "fresh", "uid-fresh", 610, map[string]string{"k": "x"}) // created at Base
	e.send(Event(Namespace("team-b"), Name("fresh"), Response(cm)))
	e.send(Event(Verb("delete"), User("system:kube-controller-manager"), Namespace("team-b"), Name("fresh"),
		At(Base.Add(time.Hour)), Response(Status("", "configmaps", "fresh", "uid-fresh"))))

	var who, via *string
	if err := e.pool.QueryRow(t.Context(), `
		SELECT initiated_by, initiated_via FROM deletions
		WHERE namespace = 'team-b' AND name = 'fresh'`).Scan(&who, &via); err != nil {
		t.Fatalf("query deletions: %v", err)
	}
	if who != nil || via != nil {
		t.Errorf("deletion attributed to %v via %v: that namespace deletion predates the object", *who, *via)
	}
}

// TestNoOpWriteStoredFirstDoesNotTakeTheChange: alice's update makes
// resourceVersion 801 through one apiserver; bob's no-op apply 5 s later
// answers with the same resourceVersion through another, whose batch is
// stored first. The state is alice's change; bob's write changed nothing.
// The same answer whichever batch comes first.
func TestNoOpWriteStoredFirstDoesNotTakeTheChange(t *testing.T) {
	for _, bobFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("no-op stored first: %v", bobFirst), func(t *testing.T) {
			e := newEnv(t)
			cm := func(rv int64, v string) Obj {
				return ConfigMap("default", "shared", "uid-shared", rv, map[string]string{"k": v})
			}
			e.send(Event(Verb("create"), User("carol"), Name("shared"), Request(cm(0, "a")), Response(cm(800, "a"))))
			alice := Event(Verb("update"), User("alice"), Name("shared"), At(Base.Add(time.Second)), Request(cm(800, "b")), Response(cm(801, "b")))
			bob := Event(Verb("patch"), User("bob"), Name("shared"), At(Base.Add(6*time.Second)), Request(Obj{"data": Obj{"k": "b"}}), Response(cm(801, "b")))
			if bobFirst {
				e.send(bob)
				e.send(alice)
			} else {
				e.send(alice)
				e.send(bob)
			}
			h := e.history("default", "shared")
			var who []string
			for _, c := range h {
				who = append(who, c.Verb+":"+c.Username)
			}
			if want := []string{"create:carol", "update:alice"}; !slices.Equal(who, want) {
				t.Errorf("history %v, want %v", who, want)
			}
			if len(h) == 2 && (data(h[1].PriorObject)["k"] != "a" || data(h[1].Object)["k"] != "b") {
				t.Errorf("alice's change: %v -> %v, want a -> b", data(h[1].PriorObject), data(h[1].Object))
			}
			vs, err := e.st.Changes(t.Context(), store.ChangeQuery{Cluster: "default", UID: "uid-shared", Limit: 10, Ascending: true})
			if err != nil {
				t.Fatal(err)
			}
			var api []string
			for _, v := range vs {
				api = append(api, v.Verb+":"+v.Username)
			}
			if want := []string{"create:carol", "update:alice"}; !slices.Equal(api, want) {
				t.Errorf("restore API history %v, want %v", api, want)
			}
		})
	}
}

// A rule that names tokenreviews records who asked, never the bearer token
// under review (it would let anyone who reads the record act as its owner).
func TestTokenReviewsNeverKeepTheToken(t *testing.T) {
	e := newEnv(t)
	const token = "eyJhbGciOiJSUzI1NiJ9.tenant-bearer-token-under-review"
	review := Obj{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": Obj{},
		"spec": Obj{"token": token, "audiences": []any{"https://kubernetes.default.svc"}}}
	answered := Obj{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": Obj{},
		"spec": Obj{"token": token}, "status": Obj{"authenticated": true, "user": Obj{"username": "system:serviceaccount:app:api"}}}
	rv := Resource("authentication.k8s.io", "v1", "tokenreviews")
	out := e.send(
		Event(rv, Namespace(""), Name(""), User("webhook-authn"), Request(review), Response(answered)),
		Event(rv, Namespace(""), Name(""), User("mallory"), Request(review), Failed(403, "Forbidden", "forbidden")),
		Event(Verb("patch"), rv, Namespace(""), Name("x"), User("mallory"), Request(review), Failed(405, "MethodNotAllowed", "not allowed")),
	)
	if out.Kept != 3 {
		t.Fatalf("kept %d tokenreview events, want 3 (the rule names them): %+v", out.Kept, out)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE resource = 'tokenreviews' AND request_object IS NOT NULL
		AND request_object->'spec'->>'audiences' IS NOT NULL`); n != 2 {
		t.Errorf("tokenreview request bodies kept = %d, want the 2 failed ones (without the token)", n)
	}
	var dump string
	if err := e.pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(request_object::text || coalesce(annotations::text, ''), ' '), '')
		|| coalesce((SELECT string_agg(object::text, ' ') FROM object_versions), '') FROM events`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dump, "tenant-bearer-token") {
		t.Errorf("a bearer token under review was stored: %s", dump)
	}
}

// TestAnEventTheDatabaseRefusesCostsOnlyItself: an event PostgreSQL refuses
// as invalid data, which the conversion did not make safe (here a CHECK
// constraint stands in for whatever that might be), is skipped and
// counted; the others of its batch are stored, once, also when the batch
// comes again.
func TestAnEventTheDatabaseRefusesCostsOnlyItself(t *testing.T) {
	e := newEnv(t)
	if _, err := e.pool.Exec(t.Context(), `ALTER TABLE events ADD CONSTRAINT refuse_poison CHECK (username <> 'poison')`); err != nil {
		t.Fatal(err)
	}
	batch := func() []*auditv1.Event {
		var evs []*auditv1.Event
		for i, user := range []string{"alice", "poison", "bob"} {
			name := fmt.Sprintf("cm-%d", i)
			cm := ConfigMap("prod", name, "uid-"+name, int64(100+i), map[string]string{"k": user})
			evs = append(evs, Event(User(user), Namespace("prod"), Name(name), Response(cm)))
		}
		return evs
	}()
	for range 2 {
		out := e.send(batch...)
		if out.Kept != 2 || out.Dropped["rejected_by_database"] != 1 {
			t.Errorf("outcome %+v; want 2 kept and 1 rejected_by_database", out)
		}
	}
	if n := e.count(`SELECT count(*) FROM events WHERE username IN ('alice', 'bob')`); n != 2 {
		t.Errorf("events of the batch stored: %d, want 2", n)
	}
	if n := e.count(`SELECT count(*) FROM object_versions WHERE namespace = 'prod' AND name IN ('cm-0', 'cm-2')`); n != 2 {
		t.Errorf("versions of the batch stored: %d, want 2", n)
	}
	if n := e.count(`SELECT count(*) FROM object_versions WHERE name = 'cm-1'`); n != 0 {
		t.Errorf("the refused event's version was stored: %d", n)
	}
	// Alone in its batch, it is dropped and counted all the same (else the
	// apiserver would retry it, then drop it uncounted).
	if out := e.send(batch[1]); out.Kept != 0 || out.Dropped["rejected_by_database"] != 1 {
		t.Errorf("alone: outcome %+v; want it dropped as rejected_by_database", out)
	}
}

// swappingRules is a rule source whose rules a rule event in the batch
// replaces (as a deleted OptionsRecordController does), observed in order.
type swappingRules struct {
	now, after *filter.Rules
}

func (s *swappingRules) RulesFor(string) *filter.Rules { return s.now }

func (s *swappingRules) ObserveEvents(_ string, evs []auditv1.Event) bool {
	changed := false
	for i := range evs {
		if evs[i].ObjectRef != nil && evs[i].ObjectRef.Resource == "optionsrecordcontrollers" {
			s.now, changed = s.after, true
		}
	}
	return changed
}

// TestARuleChangeAppliesFromItsEventOn: a batch holding a change made while
// a rule was in force and, after it, that rule's deletion keeps the change;
// what comes after the deletion is judged without the rule.
func TestARuleChangeAppliesFromItsEventOn(t *testing.T) {
	e := newEnv(t)
	none, _ := filter.Compile(nil, filter.Options{SinkNamespace: "options-record"})
	src := &swappingRules{now: testRules(t), after: none}
	pipe := auditsink.NewPipeline(src, e.st, nil, nil).WithObserver(src)
	cm := func(name string) *auditv1.Event {
		return Event(Namespace("prod"), Name(name), Response(ConfigMap("prod", name, "uid-"+name, 10, nil)))
	}
	del := Event(Verb("delete"), Resource("optionsrecord.io", "v1alpha1", "optionsrecordcontrollers"), Namespace("options-record"),
		Name("prod"), Response(Status("optionsrecord.io", "OptionsRecordController", "prod", "u-rule")))
	out, err := pipe.Process(t.Context(), "default", []auditv1.Event{*cm("before"), *del, *cm("after")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE name = 'before'`); n != 1 {
		t.Errorf("the change made under the rule: %d stored, want 1 (outcome %+v)", n, out)
	}
	if n := e.count(`SELECT count(*) FROM events WHERE name = 'after'`); n != 0 {
		t.Errorf("the change after the rule's deletion: %d stored, want 0", n)
	}
}
