package filter

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/options-record/options-record/api/v1alpha1"
)

func notifyTo(dest string, vs ...v1alpha1.Verb) orcMod {
	return func(o *v1alpha1.OptionsRecordController) {
		o.Spec.Notify = append(o.Spec.Notify, v1alpha1.NotifyRoute{Destination: dest, Verbs: vs})
	}
}

// allowTenants opens every destination to trusted rules and to tenant
// rules of the namespaces given.
func allowTenants(nss ...string) func(string, string, bool) bool {
	return func(_, ns string, trusted bool) bool { return trusted || slices.Contains(nss, ns) }
}

// TestNotifyRoutes: a kept event carries the routes of the rules that kept
// it whose verbs select it (delete and deletecollection by default); a
// tenant's rule routes only its own namespace's events, and only to a
// destination open to it.
func TestNotifyRoutes(t *testing.T) {
	t.Parallel()
	rules, statuses := Compile([]v1alpha1.OptionsRecordController{
		sinkORC("ops", notifyTo("oncall"), notifyTo("audit", v1alpha1.VerbPatch, v1alpha1.VerbDelete)),
		orc("team-a", "mine", notifyTo("chat")),
		orc("team-b", "theirs", notifyTo("chat")),
		orc("team-c", "quiet"),
	}, Options{NotifyAllowed: allowTenants("team-a", "team-c")})
	for _, s := range statuses {
		if !s.Ready {
			t.Fatalf("%s/%s not ready: %s", s.Namespace, s.Name, s.Message)
		}
		if s.Name == "theirs" && (len(s.Capped) != 1 || !strings.Contains(s.Capped[0], `spec.notify[0]: destination "chat"`)) {
			t.Errorf("team-b's route to a destination not open to it: capped %q", s.Capped)
		}
	}
	tests := []struct {
		name string
		ev   eventMod
		ns   string
		want []Route
	}{
		{"delete in team-a", verb("delete"), "team-a", []Route{
			{Rule: "options-record/ops", Destination: "oncall"}, {Rule: "options-record/ops", Destination: "audit"},
			{Rule: "team-a/mine", Destination: "chat"}}},
		{"deletecollection in team-a", verb("deletecollection"), "team-a", []Route{
			{Rule: "options-record/ops", Destination: "oncall"}, {Rule: "team-a/mine", Destination: "chat"}}},
		{"patch in team-a: only the route asking for patches", verb("patch"), "team-a", []Route{
			{Rule: "options-record/ops", Destination: "audit"}}},
		{"create: no route", verb("create"), "team-a", nil},
		{"delete in team-b: its rule's route was refused", verb("delete"), "team-b", []Route{
			{Rule: "options-record/ops", Destination: "oncall"}, {Rule: "options-record/ops", Destination: "audit"}}},
		{"delete in team-d: no tenant rule reaches it", verb("delete"), "team-d", []Route{
			{Rule: "options-record/ops", Destination: "oncall"}, {Rule: "options-record/ops", Destination: "audit"}}},
	}
	for _, tt := range tests {
		d := rules.Match(event(tt.ev, ns(tt.ns), resource("", "configmaps"), name("c")))
		if !d.Keep {
			t.Fatalf("%s: dropped (%s)", tt.name, d.Reason)
		}
		if diff := cmp.Diff(tt.want, d.Notify); diff != "" {
			t.Errorf("%s: routes (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestNotifyNeedsConfiguredDestinations: without NotifyAllowed (no
// --notify-config) every route is refused, and said so; an invalid route
// makes the rule invalid.
func TestNotifyNeedsConfiguredDestinations(t *testing.T) {
	t.Parallel()
	rules, statuses := Compile([]v1alpha1.OptionsRecordController{sinkORC("ops", notifyTo("oncall"))}, Options{})
	if !statuses[0].Ready || len(statuses[0].Capped) != 1 {
		t.Fatalf("status %+v: want Ready and the route refused in Capped", statuses[0])
	}
	if d := rules.Match(event(verb("delete"), ns("a"), resource("", "configmaps"), name("c"))); !d.Keep || d.Notify != nil {
		t.Fatalf("decision %+v: want kept, no route", d)
	}
	for _, bad := range []orcMod{notifyTo("Not_A_Label"), notifyTo("x", "get"), func(o *v1alpha1.OptionsRecordController) {
		notifyTo("x")(o)
		notifyTo("x")(o)
	}} {
		_, st := Compile([]v1alpha1.OptionsRecordController{sinkORC("ops", bad)}, Options{NotifyAllowed: allowTenants()})
		if st[0].Ready || st[0].Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(st[0].Message, "spec.notify[") {
			t.Errorf("status %+v: want InvalidSpec naming spec.notify", st[0])
		}
	}
}

// TestNotifyRefusedAttempts: an attempt the cluster refused is sent only
// where a route asks for refused attempts.
func TestNotifyRefusedAttempts(t *testing.T) {
	t.Parallel()
	refused := func(o *v1alpha1.OptionsRecordController) {
		o.Spec.Notify = append(o.Spec.Notify, v1alpha1.NotifyRoute{Destination: "security", Refused: true})
	}
	rules, _ := Compile([]v1alpha1.OptionsRecordController{sinkORC("ops", notifyTo("oncall"), refused)},
		Options{NotifyAllowed: allowTenants()})
	d := rules.Match(event(verb("delete"), ns("prod"), resource("", "secrets"), name("db"), code(403)))
	if diff := cmp.Diff([]Route{{Rule: "options-record/ops", Destination: "security"}}, d.Notify); !d.Keep || diff != "" {
		t.Errorf("refused delete: kept %v, routes (-want +got):\n%s", d.Keep, diff)
	}
	d = rules.Match(event(verb("delete"), ns("prod"), resource("", "secrets"), name("db")))
	if diff := cmp.Diff([]Route{{Rule: "options-record/ops", Destination: "oncall"}, {Rule: "options-record/ops", Destination: "security"}}, d.Notify); diff != "" {
		t.Errorf("delete: routes (-want +got):\n%s", diff)
	}
}
