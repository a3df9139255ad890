package rulesync

import (
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
	"github.com/options-record/options-record/filter"
	"github.com/options-record/options-record/test/gen"
)

func orc(ns, name, uid string, rv string, namespaces ...string) v1alpha1.OptionsRecordController {
	o := v1alpha1.OptionsRecordController{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: rv, Generation: 1},
	}
	o.Spec.Namespaces = namespaces
	return o
}

func orcEvent(verb string, resp any) auditv1.Event {
	return *gen.Event(gen.Verb(verb), gen.Resource("optionsrecord.io", "v1alpha1", "optionsrecordcontrollers"),
		gen.Namespace("options-record"), gen.Name("r"), gen.Response(resp))
}

// keeps reports whether the cluster's rules keep a create in namespace ns.
func keeps(r *Registry, ns string) bool {
	ev := gen.Event(gen.Namespace(ns), gen.Name("x"))
	return r.RulesFor("c").Match(ev).Keep
}

func TestRegistryFollowsEventsAndLists(t *testing.T) {
	r := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	changes := 0
	r.OnChange(func(string) { changes++ })
	if keeps(r, "prod") {
		t.Fatal("an empty registry keeps events")
	}

	// A create event brings the rule in.
	r.ObserveEvents("c", []auditv1.Event{orcEvent("create", orc("options-record", "r", "u1", "10", "prod"))})
	if !keeps(r, "prod") || keeps(r, "dev") {
		t.Fatal("rule from a create event not applied")
	}
	// An older update arriving late does not win over the newer state.
	r.ObserveEvents("c", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u1", "12", "dev"))})
	r.ObserveEvents("c", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u1", "11", "prod"))})
	if keeps(r, "prod") || !keeps(r, "dev") {
		t.Fatal("an older event overrode a newer one")
	}
	// A dry-run or failed change is not applied.
	dry := orcEvent("update", orc("options-record", "r", "u1", "13", "staging"))
	dry.RequestURI += "?dryRun=All"
	failed := orcEvent("update", orc("options-record", "r", "u1", "14", "staging"))
	failed.ResponseStatus.Code = 409
	r.ObserveEvents("c", []auditv1.Event{dry, failed})
	if keeps(r, "staging") {
		t.Fatal("a dry-run or failed update was applied")
	}
	// A LIST older than what the events told keeps the newer copy.
	r.Replace("c", []v1alpha1.OptionsRecordController{orc("options-record", "r", "u1", "9", "prod")}, 9)
	if !keeps(r, "dev") {
		t.Fatal("an older LIST overrode a newer event")
	}
	// A delete answered with a Status removes it, and a late update of the
	// deleted object does not bring it back.
	r.ObserveEvents("c", []auditv1.Event{orcEvent("delete", gen.Status("optionsrecord.io", "optionsrecordcontrollers", "r", "u1"))})
	r.ObserveEvents("c", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u1", "15", "dev"))})
	if keeps(r, "dev") {
		t.Fatal("rule still applied after its delete")
	}
	// A LIST is the truth for objects the events never mentioned.
	r.Replace("c", []v1alpha1.OptionsRecordController{orc("options-record", "s", "u2", "20", "ops")}, 20)
	if !keeps(r, "ops") {
		t.Fatal("LIST not applied")
	}
	r.Replace("c", nil, 21)
	if keeps(r, "ops") {
		t.Fatal("an object missing from a newer LIST is still applied")
	}
	// Another cluster is unaffected.
	r.ObserveEvents("other", []auditv1.Event{orcEvent("create", orc("options-record", "z", "u3", "1", "x"))})
	if keeps(r, "x") {
		t.Fatal("another cluster's rule applied to cluster c")
	}
	if changes == 0 {
		t.Error("OnChange never called")
	}
}

func TestRegistryMaxRetention(t *testing.T) {
	withRetention := func(o v1alpha1.OptionsRecordController, d time.Duration) v1alpha1.OptionsRecordController {
		o.Spec.Retention = &metav1.Duration{Duration: d}
		return o
	}
	const day = 24 * time.Hour
	trustD := map[string][]string{"d": {"options-record"}}
	tests := []struct {
		name     string
		trusted  map[string][]string
		max      time.Duration // --max-retention
		static   []v1alpha1.OptionsRecordController
		clusters map[string][]v1alpha1.OptionsRecordController
		want     time.Duration
	}{
		{name: "no rule: nothing says how long, 0", want: 0},
		{name: "a rule without retention: the default",
			clusters: map[string][]v1alpha1.OptionsRecordController{"c": {orc("options-record", "a", "u1", "1")}},
			want:     v1alpha1.DefaultRetention},
		{name: "the longest of every cluster's and the static rules",
			trusted: trustD,
			static:  []v1alpha1.OptionsRecordController{withRetention(orc("options-record", "s", "u0", "1"), 2*day)},
			clusters: map[string][]v1alpha1.OptionsRecordController{
				"c": {withRetention(orc("options-record", "a", "u1", "1"), 10*day)},
				"d": {withRetention(orc("options-record", "b", "u2", "1"), 90*day), withRetention(orc("options-record", "e", "u3", "1"), 5*day)},
			},
			want: 90 * day},
		{name: "never more than --max-retention",
			max:      30 * day,
			static:   []v1alpha1.OptionsRecordController{withRetention(orc("", "s", "u0", "1"), 400*day)},
			clusters: map[string][]v1alpha1.OptionsRecordController{"c": {withRetention(orc("options-record", "a", "u1", "1"), 90*day)}},
			want:     30 * day},
		{name: "never more than the default ceiling",
			clusters: map[string][]v1alpha1.OptionsRecordController{"c": {withRetention(orc("options-record", "a", "u1", "1"), 3650*day)}},
			want:     filter.DefaultMaxRetention},
		{name: "a rule in the sink namespace of an untrusted cluster is a tenant's",
			clusters: map[string][]v1alpha1.OptionsRecordController{"d": {withRetention(orc("options-record", "b", "u2", "1"), 90*day)}},
			want:     filter.DefaultTenantMaxRetention},
		{name: "a tenant rule of the home cluster",
			clusters: map[string][]v1alpha1.OptionsRecordController{"c": {withRetention(orc("team-a", "b", "u2", "1"), 90*day)}},
			want:     filter.DefaultTenantMaxRetention},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry(tc.static, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record", MaxRetention: tc.max},
				HomeCluster: "c", TrustedNamespaces: tc.trusted})
			for cluster, objs := range tc.clusters {
				r.Replace(cluster, objs, 1)
			}
			if got := r.MaxRetention(); got != tc.want {
				t.Errorf("MaxRetention = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRegistryTrustsRuleNamespacesPerCluster: on the home cluster the CRs in
// the sink's namespace may select any namespace; on the other clusters of a
// fleet no namespace is trusted unless the operator says so (whoever can
// create a namespace named like the sink's there must not get cluster-wide
// rules); the rules file is trusted everywhere.
func TestRegistryTrustsRuleNamespacesPerCluster(t *testing.T) {
	static := orc("options-record", "file", "u0", "1", "from-file")
	tests := []struct {
		name    string
		trusted map[string][]string
		cluster string
		obj     v1alpha1.OptionsRecordController
		keeps   map[string]bool // event namespace → kept
		reason  string          // of obj
	}{
		{name: "home cluster: the sink namespace is trusted", cluster: "home",
			obj:   orc("options-record", "r", "u1", "5", "shop"),
			keeps: map[string]bool{"shop": true, "from-file": true}, reason: v1alpha1.ReasonSynced},
		{name: "secondary cluster: the sink namespace is not trusted by default", cluster: "fleet-b",
			obj:   orc("options-record", "r", "u1", "5", "shop"),
			keeps: map[string]bool{"shop": false, "from-file": true}, reason: v1alpha1.ReasonNamespaceOutOfScope},
		{name: "secondary cluster: an empty spec records only its own namespace", cluster: "fleet-b",
			obj:   orc("options-record", "r", "u1", "5"),
			keeps: map[string]bool{"options-record": true, "shop": false}, reason: v1alpha1.ReasonSynced},
		{name: "secondary cluster: a configured namespace is trusted", cluster: "fleet-b",
			trusted: map[string][]string{"fleet-b": {"platform"}},
			obj:     orc("platform", "r", "u1", "5", "shop"),
			keeps:   map[string]bool{"shop": true}, reason: v1alpha1.ReasonSynced},
		{name: "home cluster: configured namespaces replace the default", cluster: "home",
			trusted: map[string][]string{"home": {"platform"}},
			obj:     orc("options-record", "r", "u1", "5", "shop"),
			keeps:   map[string]bool{"shop": false, "from-file": true}, reason: v1alpha1.ReasonNamespaceOutOfScope},
		{name: "home cluster: none configured trusts none", cluster: "home",
			trusted: map[string][]string{"home": {}},
			obj:     orc("options-record", "r", "u1", "5", "shop"),
			keeps:   map[string]bool{"shop": false, "from-file": true}, reason: v1alpha1.ReasonNamespaceOutOfScope},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry([]v1alpha1.OptionsRecordController{static}, RegistryOptions{
				Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "home", TrustedNamespaces: tc.trusted})
			r.ObserveEvents(tc.cluster, []auditv1.Event{orcEvent("create", tc.obj)})
			for ns, want := range tc.keeps {
				if got := r.RulesFor(tc.cluster).Match(gen.Event(gen.Namespace(ns), gen.Name("x"))).Keep; got != want {
					t.Errorf("event in %s on %s: Keep = %t, want %t", ns, tc.cluster, got, want)
				}
			}
			found := false
			for _, st := range r.Statuses(tc.cluster) {
				if st.Namespace == tc.obj.Namespace && st.Name == tc.obj.Name {
					found = true
					if st.Reason != tc.reason {
						t.Errorf("status of %s/%s: %s (%s), want %s", st.Namespace, st.Name, st.Reason, st.Message, tc.reason)
					}
				}
			}
			if !found {
				t.Errorf("no status for %s/%s", tc.obj.Namespace, tc.obj.Name)
			}
		})
	}
}

// TestDeletionOutlivesTheEventsMemory: the webhook decodes events without
// copying their strings and reuses a request's body once its batch is
// stored. A deleted uid taken from an event must be remembered as a copy:
// overwriting the body must not let a late update of the deleted object
// bring its rule back.
func TestDeletionOutlivesTheEventsMemory(t *testing.T) {
	r := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	r.ObserveEvents("c", []auditv1.Event{orcEvent("create", orc("options-record", "r", "u9", "10", "prod"))})
	if !keeps(r, "prod") {
		t.Fatal("rule from a create event not applied")
	}
	// A delete answered by a Status that names no uid: the uid is the
	// event's objectRef's, a string in the request body's memory.
	body := []byte("u9")
	del := orcEvent("delete", gen.Obj{"kind": "Status", "apiVersion": "v1", "metadata": gen.Obj{}, "status": "Success"})
	del.ObjectRef.UID = types.UID(unsafe.String(&body[0], len(body)))
	r.ObserveEvents("c", []auditv1.Event{del})
	if keeps(r, "prod") {
		t.Fatal("rule still applied after its delete")
	}
	copy(body, "zz") // the next request's bytes
	r.ObserveEvents("c", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u9", "11", "prod"))})
	if keeps(r, "prod") {
		t.Error("a late update brought back a deleted rule: the registry kept the uid in the event's memory")
	}
}

// TestRemovingTheLastFinalizerEndsTheRule: a delete held by a finalizer
// keeps the rule pending; the write that removes the last finalizer (an
// update by a client, or a patch through the metadata API by the garbage
// collector) deletes the object, and no delete event follows: the rule
// ends with that write.
func TestRemovingTheLastFinalizerEndsTheRule(t *testing.T) {
	deleting := func(o v1alpha1.OptionsRecordController, rv string, finalizers ...string) v1alpha1.OptionsRecordController {
		now := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
		o.DeletionTimestamp, o.Finalizers, o.ResourceVersion = &now, finalizers, rv
		return o
	}
	for _, tt := range []struct {
		name string
		last func(o v1alpha1.OptionsRecordController) auditv1.Event
	}{
		{"an update", func(o v1alpha1.OptionsRecordController) auditv1.Event {
			return orcEvent("update", deleting(o, "11")) // the apiserver answers with the deleted state's resourceVersion
		}},
		{"a metadata patch", func(o v1alpha1.OptionsRecordController) auditv1.Event {
			m := deleting(o, "11")
			m.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
			return orcEvent("patch", m)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
			o := orc("options-record", "r", "u1", "10", "prod")
			r.ObserveEvents("c", []auditv1.Event{orcEvent("create", o)})
			r.ObserveEvents("c", []auditv1.Event{orcEvent("delete", deleting(o, "11", "example.com/hold"))})
			if !keeps(r, "prod") {
				t.Fatal("a deletion held by a finalizer ended the rule at once")
			}
			r.ObserveEvents("c", []auditv1.Event{tt.last(o)})
			if keeps(r, "prod") {
				t.Error("the rule outlived the removal of its object's last finalizer")
			}
		})
	}
}

// TestARecreatedRuleReplacesTheOldCopy: a rule deleted without the registry
// seeing it (a lost event) and made again under its name: the newer object
// is the rule, every time, and the old copy is gone.
func TestARecreatedRuleReplacesTheOldCopy(t *testing.T) {
	for range 20 { // map order once decided it
		r := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
		r.ObserveEvents("c", []auditv1.Event{orcEvent("create", orc("options-record", "r", "u1", "10", "prod"))})
		r.ObserveEvents("c", []auditv1.Event{orcEvent("create", orc("options-record", "r", "u2", "20", "staging"))})
		r.ObserveEvents("c", []auditv1.Event{orcEvent("update", orc("options-record", "r", "u1", "15", "prod"))}) // late, of the old copy
		if keeps(r, "prod") || !keeps(r, "staging") {
			t.Fatalf("prod kept %v, staging kept %v: want the recreated rule (staging) only", keeps(r, "prod"), keeps(r, "staging"))
		}
		if objs := r.Objects("c"); len(objs) != 1 || objs[0].UID != "u2" {
			t.Fatalf("objects %v, want u2 only", objs)
		}
	}
}

// TestDeleteCollectionLeavesPendingDeletions: a deletecollection answers
// the objects as they were; one a finalizer holds is not gone yet.
func TestDeleteCollectionLeavesPendingDeletions(t *testing.T) {
	r := NewRegistry(nil, RegistryOptions{Compile: filter.Options{SinkNamespace: "options-record"}, HomeCluster: "c"})
	held := orc("options-record", "r", "u1", "10", "prod")
	held.Finalizers = []string{"example.com/hold"}
	r.ObserveEvents("c", []auditv1.Event{orcEvent("create", held)})
	r.ObserveEvents("c", []auditv1.Event{orcEvent("deletecollection", v1alpha1.OptionsRecordControllerList{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "OptionsRecordControllerList"},
		Items:    []v1alpha1.OptionsRecordController{held}})})
	if !keeps(r, "prod") {
		t.Error("a deletecollection ended a rule whose object a finalizer still holds")
	}
}
