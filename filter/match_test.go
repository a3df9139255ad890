package filter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

const day = 24 * time.Hour

// kept is the Decision for an event kept by the named rules, with the
// default retention.
func kept(rules ...string) Decision {
	return Decision{Keep: true, Rules: rules, Retention: v1alpha1.DefaultRetention}
}

func dropped(r DropReason) Decision { return Decision{Reason: r} }

var (
	all     = sinkORC("all")
	allName = "options-record/all"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules []v1alpha1.OptionsRecordController
		ev    *auditv1.Event
		want  Decision
	}{
		// Stages, verbs, objects.
		{"update is kept", rules(all), event(), kept(allName)},
		{"RequestReceived has no response", rules(all), event(stage(auditv1.StageRequestReceived)), dropped(DropStage)},
		{"ResponseStarted has no response", rules(all), event(stage(auditv1.StageResponseStarted)), dropped(DropStage)},
		{"Panic is kept", rules(all), event(stage(auditv1.StagePanic)), kept(allName)},
		{"get is read-only", rules(all), event(verb("get")), dropped(DropReadOnly)},
		{"watch is read-only", rules(all), event(verb("watch")), dropped(DropReadOnly)},
		{"unknown verb is not a change", rules(all), event(verb("escalate")), dropped(DropReadOnly)},
		{"verbs are case-sensitive", rules(all), event(verb("DELETE")), dropped(DropReadOnly)},
		{"mutation without objectRef", rules(all), event(verb("create"), noObjectRef()), dropped(DropNoObject)},
		{"forbidden delete is kept", rules(all), event(verb("delete"), code(403)), kept(allName)},
		{"failed create is kept", rules(all), event(verb("create"), code(409)), kept(allName)},
		{"no rules", nil, event(), dropped(DropNoRule)},

		// Dry run.
		{"create dryRun=All", rules(all), event(verb("create"), query("dryRun=All&fieldManager=kubectl-create")), dropped(DropDryRun)},
		{"patch dryRun among other parameters", rules(all), event(verb("patch"), query("fieldManager=kubectl&dryRun=All")), dropped(DropDryRun)},
		{"dryRun without value", rules(all), event(verb("update"), query("dryRun")), dropped(DropDryRun)},
		{"percent-encoded dryRun key", rules(all), event(verb("create"), query("dry%52un=All")), dropped(DropDryRun)},
		{"pair with ';' is ignored by the apiserver", rules(all), event(verb("create"), query("x=1;dryRun=All")), kept(allName)},
		{"bad escape in value is ignored by the apiserver", rules(all), event(verb("create"), query("dryRun=%zz")), kept(allName)},
		{"other parameter", rules(all), event(verb("create"), query("dryRunX=All&notdryRun=All")), kept(allName)},
		{"dryRun in the path is not a parameter", rules(all), event(verb("create"), name("dryRun")), kept(allName)},
		{"delete with DeleteOptions dryRun", rules(all),
			event(verb("delete"), body(`{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`)), dropped(DropDryRun)},
		{"deletecollection with DeleteOptions dryRun", rules(all),
			event(verb("deletecollection"), name(""), body(`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"]}`)), dropped(DropDryRun)},
		{"delete body overrides the query", rules(all),
			event(verb("delete"), query("dryRun=All"), body(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`)), kept(allName)},
		{"delete with empty dryRun list", rules(all),
			event(verb("delete"), body(`{"kind":"DeleteOptions","apiVersion":"v1","dryRun":[]}`)), kept(allName)},
		{"DeleteOptions fields are case-sensitive", rules(all),
			event(verb("delete"), body(`{"DryRun":["All"]}`)), kept(allName)},
		{"escaped DeleteOptions key", rules(all),
			event(verb("delete"), body(`{"dry\u0052un":["All"]}`)), dropped(DropDryRun)},
		{"delete without body falls back to the query", rules(all),
			event(verb("delete"), query("dryRun=All")), dropped(DropDryRun)},
		{"update body mentioning dryRun", rules(all),
			event(verb("update"), body(`{"apiVersion":"v1","kind":"ConfigMap","data":{"dryRun":"All"}}`)), kept(allName)},

		// Namespaces.
		{"namespace glob matches", rules(sinkORC("r", namespaces("prod", "payments-*"))),
			event(ns("payments-eu")), kept("options-record/r")},
		{"namespace glob does not match", rules(sinkORC("r", namespaces("prod", "payments-*"))),
			event(ns("staging")), dropped(DropNoRule)},
		{"excluded namespace", rules(sinkORC("r", excludeNamespaces("kube-*"))),
			event(ns("kube-system")), dropped(DropNoRule)},
		{"cluster-scoped object and empty namespaces", rules(all),
			event(resource("rbac.authorization.k8s.io", "clusterroles"), clusterScoped()), kept(allName)},
		{"cluster-scoped object and excludeNamespaces", rules(sinkORC("r", excludeNamespaces("*"))),
			event(resource("rbac.authorization.k8s.io", "clusterroles"), clusterScoped()), kept("options-record/r")},
		{"cluster-scoped object and namespaces", rules(sinkORC("r", namespaces("*"))),
			event(resource("rbac.authorization.k8s.io", "clusterroles"), clusterScoped()), dropped(DropNoRule)},
		{"a Namespace is in its own namespace", rules(sinkORC("r", namespaces("prod"))),
			event(verb("delete"), resource("", "namespaces"), clusterScoped(), name("prod")), kept("options-record/r")},
		{"namespaces of another group are not Namespaces", rules(sinkORC("r", namespaces("prod"))),
			event(verb("delete"), resource("example.com", "namespaces"), clusterScoped(), name("prod")), dropped(DropNoRule)},
		{"rule outside the sink namespace records its namespace", rules(orc("team-a", "own")),
			event(ns("team-a")), kept("team-a/own")},
		{"rule outside the sink namespace ignores other namespaces", rules(orc("team-a", "own")),
			event(ns("team-b")), dropped(DropNoRule)},
		{"rule outside the sink namespace ignores cluster-scoped objects", rules(orc("team-a", "own")),
			event(resource("", "nodes"), clusterScoped(), name("node-1")), dropped(DropNoRule)},
		{"rule outside the sink namespace records its Namespace", rules(orc("team-a", "own")),
			event(verb("delete"), resource("", "namespaces"), ns("team-a"), name("team-a")), kept("team-a/own")},
		{"rule outside the sink namespace excluding itself", rules(orc("team-a", "own", excludeNamespaces("team-*"))),
			event(ns("team-a")), dropped(DropNoRule)},
		{"rule outside the sink namespace with namespaces is not applied", rules(orc("team-a", "own", namespaces("team-a"))),
			event(ns("team-a")), dropped(DropNoRule)},
		{"rule without namespace is in the sink namespace", rules(orc("", "file", namespaces("prod"))),
			event(ns("prod")), kept("options-record/file")},

		// Resources.
		{"resource by name", rules(sinkORC("r", resources("apps", "deployments"))),
			event(resource("apps", "deployments")), kept("options-record/r")},
		{"resource by name covers subresources", rules(sinkORC("r", resources("apps", "deployments"))),
			event(verb("patch"), resource("apps", "deployments"), sub("scale")), kept("options-record/r")},
		{"other group", rules(sinkORC("r", resources("apps", "deployments"))),
			event(resource("extensions", "deployments")), dropped(DropNoRule)},
		{"other resource", rules(sinkORC("r", resources("apps", "deployments"))),
			event(resource("apps", "statefulsets")), dropped(DropNoRule)},
		{"core group is the empty group", rules(sinkORC("r", resources("", "configmaps"))),
			event(), kept("options-record/r")},
		{"subresource only", rules(sinkORC("r", resources("apps", "deployments/scale"))),
			event(resource("apps", "deployments"), sub("scale")), kept("options-record/r")},
		{"subresource selector skips the resource", rules(sinkORC("r", resources("apps", "deployments/scale"))),
			event(resource("apps", "deployments")), dropped(DropNoRule)},
		{"subresource selector skips other subresources", rules(sinkORC("r", resources("apps", "deployments/scale"), keepStatusChanges())),
			event(resource("apps", "deployments"), sub("status")), dropped(DropNoRule)},
		{"any group", rules(sinkORC("r", resources("*", "secrets"))),
			event(resource("", "secrets")), kept("options-record/r")},
		{"any resource of a group", rules(sinkORC("r", resources("", "*"))),
			event(resource("", "services")), kept("options-record/r")},
		{"any resource of another group", rules(sinkORC("r", resources("", "*"))),
			event(resource("apps", "deployments")), dropped(DropNoRule)},

		// What wildcards leave out.
		{"lease renewal", rules(all),
			event(resource("coordination.k8s.io", "leases"), ns("kube-node-lease"), user("system:node:node-1")), dropped(DropHighChurn)},
		{"lease renewal with a '*' selector", rules(sinkORC("r", resources("*", "*"))),
			event(resource("coordination.k8s.io", "leases")), dropped(DropHighChurn)},
		{"leases by name", rules(sinkORC("r", resources("coordination.k8s.io", "leases"))),
			event(resource("coordination.k8s.io", "leases")), kept("options-record/r")},
		{"core events", rules(all), event(verb("create"), resource("", "events")), dropped(DropHighChurn)},
		{"events.k8s.io events", rules(all), event(verb("create"), resource("events.k8s.io", "events")), dropped(DropHighChurn)},
		{"events by name in any group", rules(sinkORC("r", resources("*", "events"))),
			event(verb("create"), resource("events.k8s.io", "events")), kept("options-record/r")},
		{"token request", rules(all),
			event(verb("create"), resource("", "serviceaccounts"), sub("token")), dropped(DropNotPersisted)},
		{"token request under its resource's name", rules(sinkORC("r", resources("", "serviceaccounts"))),
			event(verb("create"), resource("", "serviceaccounts"), sub("token")), dropped(DropNotPersisted)},
		{"token request by name", rules(sinkORC("r", resources("", "serviceaccounts/token"))),
			event(verb("create"), resource("", "serviceaccounts"), sub("token")), kept("options-record/r")},
		{"exec", rules(all), event(verb("create"), resource("", "pods"), sub("exec")), dropped(DropNotPersisted)},
		{"eviction is a change", rules(all), event(verb("create"), resource("", "pods"), sub("eviction")), kept(allName)},
		{"access review", rules(all),
			event(verb("create"), resource("authorization.k8s.io", "subjectaccessreviews"), clusterScoped(), name("")), dropped(DropNotPersisted)},
		{"a wildcard drops, a name keeps",
			rules(all, sinkORC("leases", resources("coordination.k8s.io", "leases"))),
			event(resource("coordination.k8s.io", "leases")), kept("options-record/leases")},

		// Verbs.
		{"verb selected", rules(sinkORC("r", verbs(v1alpha1.VerbDelete))), event(verb("delete")), kept("options-record/r")},
		{"verb not selected", rules(sinkORC("r", verbs(v1alpha1.VerbDelete))), event(verb("update")), dropped(DropNoRule)},
		{"deletecollection is its own verb", rules(sinkORC("r", verbs(v1alpha1.VerbDelete))),
			event(verb("deletecollection"), name("")), dropped(DropNoRule)},

		// Users and groups.
		{"user selected", rules(sinkORC("r", users("alice"))), event(), kept("options-record/r")},
		{"user not selected", rules(sinkORC("r", users("alice"))), event(user("bob")), dropped(DropNoRule)},
		{"impersonated user selected", rules(sinkORC("r", users("system:serviceaccount:ci:*"))),
			event(user("admin"), impersonating("system:serviceaccount:ci:deployer")), kept("options-record/r")},
		{"real user selected while impersonating", rules(sinkORC("r", users("admin"))),
			event(user("admin"), impersonating("system:serviceaccount:ci:deployer")), kept("options-record/r")},
		{"excluded user", rules(sinkORC("r", excludeUsers("system:kube-scheduler"))),
			event(user("system:kube-scheduler")), dropped(DropNoRule)},
		{"impersonating an excluded user hides nothing", rules(sinkORC("r", excludeUsers("system:serviceaccount:kube-system:*"))),
			event(impersonating("system:serviceaccount:kube-system:generic-garbage-collector")), kept("options-record/r")},
		{"an excluded user stays excluded while impersonating", rules(sinkORC("r", excludeUsers("alice"))),
			event(impersonating("bob")), dropped(DropNoRule)},
		{"group selected", rules(sinkORC("r", userGroups("developers"))), event(), kept("options-record/r")},
		{"group not selected", rules(sinkORC("r", userGroups("developers"))), event(user("bob", "ops")), dropped(DropNoRule)},
		{"impersonated group selected", rules(sinkORC("r", userGroups("developers"))),
			event(user("bob", "ops"), impersonating("carol", "developers")), kept("options-record/r")},
		{"excluded group", rules(sinkORC("r", excludeUserGroups("system:nodes"))),
			event(user("system:node:node-1", "system:nodes")), dropped(DropNoRule)},
		{"impersonating an excluded group hides nothing", rules(sinkORC("r", excludeUserGroups("system:nodes"))),
			event(impersonating("system:node:node-1", "system:nodes")), kept("options-record/r")},
		{"users and groups combine with AND", rules(sinkORC("r", users("alice"), userGroups("ops"))),
			event(), dropped(DropNoRule)},

		// Status-only changes.
		{"status subresource patch", rules(all),
			event(verb("patch"), resource("", "pods"), sub("status"), user("system:node:node-1", "system:nodes"),
				body(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)), dropped(DropStatusOnly)},
		{"status subresource update", rules(all),
			event(verb("update"), resource("apps", "deployments"), sub("status")), dropped(DropStatusOnly)},
		{"status subresource with status changes kept", rules(sinkORC("r", keepStatusChanges())),
			event(verb("update"), resource("apps", "deployments"), sub("status")), kept("options-record/r")},
		{"status subresource by name", rules(sinkORC("r", resources("apps", "deployments/status"), keepStatusChanges())),
			event(verb("update"), resource("apps", "deployments"), sub("status")), kept("options-record/r")},
		{"status-only merge patch", rules(all),
			event(verb("patch"), body(`{"status":{"replicas":3}}`)), dropped(DropStatusOnly)},
		{"merge patch with resourceVersion precondition", rules(all),
			event(verb("patch"), body(`{"metadata":{"resourceVersion":"4711"},"status":{"phase":"Active"}}`)), dropped(DropStatusOnly)},
		{"label patch", rules(all),
			event(verb("patch"), body(`{"metadata":{"labels":{"tier":"web"}}}`)), kept(allName)},
		{"annotation patch", rules(all),
			event(verb("patch"), body(`{"metadata":{"annotations":{"note":"x"}}}`)), kept(allName)},
		{"generation is not noise", rules(all),
			event(verb("patch"), body(`{"metadata":{"generation":3}}`)), kept(allName)},
		{"spec patch", rules(all), event(verb("patch"), body(`{"spec":{"replicas":3}}`)), kept(allName)},
		{"status-only JSON patch", rules(all),
			event(verb("patch"), body(`[{"op":"test","path":"/metadata/uid","value":"u"},{"op":"replace","path":"/status/replicas","value":3}]`)),
			dropped(DropStatusOnly)},
		{"JSON patch of a label", rules(all),
			event(verb("patch"), body(`[{"op":"add","path":"/metadata/labels/tier","value":"web"}]`)), kept(allName)},
		{"JSON patch moving spec into status", rules(all),
			event(verb("patch"), body(`[{"op":"move","from":"/spec/replicas","path":"/status/replicas"}]`)), kept(allName)},
		{"server-side apply of status", rules(all),
			event(verb("patch"), body(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"status":{}}`)), kept(allName)},
		{"YAML patch", rules(all), event(verb("patch"), body("status:\n  replicas: 3\n")), kept(allName)},
		{"patch without body (Metadata level)", rules(all), event(verb("patch"), level(auditv1.LevelMetadata)), kept(allName)},
		{"escaped key", rules(all), event(verb("patch"), body(`{"st\u0061tus":{}}`)), kept(allName)},
		{"empty patch", rules(all), event(verb("patch"), body(`{}`)), dropped(DropStatusOnly)},
		{"update of the object itself", rules(all),
			event(verb("update"), body(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"},"status":{}}`)), kept(allName)},
		{"status-only patch kept by one rule of two",
			rules(all, sinkORC("status", keepStatusChanges())),
			event(verb("patch"), body(`{"status":{"replicas":3}}`)), kept("options-record/status")},

		// Several rules.
		{"invalid rule is not applied", rules(sinkORC("bad", users("[ab]"))), event(), dropped(DropNoRule)},
		{"several rules, sorted",
			rules(sinkORC("b", recordSecretData(), retention(2*day)), orc("prod", "a", retention(20*day)), sinkORC("c", users("bob"))),
			event(resource("", "secrets")),
			Decision{Keep: true, Rules: []string{"options-record/b", "prod/a"}, RecordSecretData: true, Retention: 20 * day}},
		{"tenant and sink rules merge in name order",
			rules(orc("zz", "own"), orc("aaa", "z"), sinkORC("m"), orc("aaa", "x"), orc("prod", "own")),
			event(ns("aaa")),
			kept("aaa/x", "aaa/z", "options-record/m")},
		{"three rules",
			rules(sinkORC("z"), sinkORC("y", retention(2*time.Hour)), sinkORC("x")),
			event(),
			kept("options-record/x", "options-record/y", "options-record/z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, _ := Compile(tt.rules, Options{})
			got := set.Match(tt.ev)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Match() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func rules(objs ...v1alpha1.OptionsRecordController) []v1alpha1.OptionsRecordController { return objs }

func TestMatchEmpty(t *testing.T) {
	t.Parallel()
	for _, set := range []*Rules{nil, Empty()} {
		if got, want := set.Match(event()), dropped(DropNoRule); !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Errorf("Match() = %+v, want %+v", got, want)
		}
		if got := set.Match(event(stage(auditv1.StageRequestReceived))); got.Reason != DropStage {
			t.Errorf("Match(RequestReceived).Reason = %q, want %q", got.Reason, DropStage)
		}
		if set.Len() != 0 || len(set.Names()) != 0 || set.MaxRetention() != 0 {
			t.Errorf("empty set: Len() = %d, Names() = %q, MaxRetention() = %v", set.Len(), set.Names(), set.MaxRetention())
		}
	}
	if got := Empty().Match(nil); got.Reason != DropNoObject {
		t.Errorf("Match(nil).Reason = %q, want %q", got.Reason, DropNoObject)
	}
}

// TestMatchDoesNotModifyEvent guards the package's promise to only read.
func TestMatchDoesNotModifyEvent(t *testing.T) {
	t.Parallel()
	set, _ := Compile(rules(all, sinkORC("b", keepStatusChanges())), Options{})
	for _, ev := range []*auditv1.Event{
		event(),
		event(verb("patch"), body(`{"status":{"replicas":3}}`)),
		event(verb("delete"), body(`{"dryRun":["All"]}`)),
		event(impersonating("bob", "ops")),
	} {
		before := ev.DeepCopy()
		set.Match(ev)
		if diff := cmp.Diff(before, ev); diff != "" {
			t.Errorf("Match modified the event (-before +after):\n%s", diff)
		}
	}
}

// TestMatchAllocations checks that the common paths do not allocate.
func TestMatchAllocations(t *testing.T) {
	set, _ := Compile(rules(
		sinkORC("apps", namespaces("prod", "payments-*"), resources("apps", "deployments", "statefulsets")),
		sinkORC("core", resources("", "configmaps", "secrets"), excludeUsers("system:kube-scheduler")),
		orc("team-a", "own"),
	), Options{})
	for _, tt := range []struct {
		name string
		ev   *auditv1.Event
	}{
		{"kept by one rule", event()},
		{"dropped, no rule", event(ns("staging"))},
		{"dropped, read-only", event(verb("get"))},
		{"status-only patch", event(verb("patch"), resource("apps", "deployments"), body(`{"metadata":{"resourceVersion":"1"},"status":{"replicas":3,"conditions":[{"type":"Available","status":"True"}]}}`))},
		{"dry run", event(verb("create"), query("dryRun=All"))},
		{"impersonated", event(user("admin"), impersonating("bob", "ops"))},
	} {
		if n := testing.AllocsPerRun(100, func() { set.Match(tt.ev) }); n != 0 {
			t.Errorf("%s: %v allocations per Match, want 0", tt.name, n)
		}
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	set, _ := Compile(rules(
		sinkORC("apps", namespaces("prod"), resources("apps", "deployments"), users("alice"), verbs(v1alpha1.VerbDelete), recordSecretData()),
		sinkORC("leases", resources("coordination.k8s.io", "leases"), retention(48*time.Hour)),
		orc("team-a", "own"),
	), Options{})
	tests := []struct {
		group, resource, ns string
		want                Decision
	}{
		{"apps", "deployments", "prod", Decision{Keep: true, Rules: []string{"options-record/apps"}, RecordSecretData: true, Retention: v1alpha1.DefaultRetention}},
		{"apps", "deployments", "staging", dropped(DropNoRule)},
		{"apps", "deployments", "team-a", kept("team-a/own")},
		{"", "configmaps", "team-a", kept("team-a/own")},
		{"", "events", "team-a", dropped(DropHighChurn)},
		{"coordination.k8s.io", "leases", "team-a", Decision{Keep: true, Rules: []string{"options-record/leases"}, Retention: 48 * time.Hour}}, // team-a/own only by wildcard
		{"coordination.k8s.io", "leases", "", Decision{Keep: true, Rules: []string{"options-record/leases"}, Retention: 48 * time.Hour}},
		{"", "namespaces", "team-a", kept("team-a/own")},
		{"", "nodes", "", dropped(DropNoRule)},
	}
	for _, tt := range tests {
		got := set.Covers(tt.group, tt.resource, tt.ns)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Covers(%q, %q, %q) mismatch (-want +got):\n%s", tt.group, tt.resource, tt.ns, diff)
		}
	}

	for _, tt := range []struct {
		group, resource string
		want            bool
	}{
		{"apps", "deployments", true},
		{"", "configmaps", true}, // team-a/own selects every resource
		{"", "events", false},
		{"coordination.k8s.io", "leases", true},
		{"authorization.k8s.io", "subjectaccessreviews", false},
	} {
		if got := set.CoversResource(tt.group, tt.resource); got != tt.want {
			t.Errorf("CoversResource(%q, %q) = %v, want %v", tt.group, tt.resource, got, tt.want)
		}
	}
	if got := Empty().CoversResource("apps", "deployments"); got {
		t.Error("Empty().CoversResource() = true")
	}
	var nilSet *Rules
	if got := nilSet.Covers("apps", "deployments", "prod"); got.Keep {
		t.Error("nil.Covers() kept")
	}
}
