package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/options-record/options-record/api/v1alpha1"
)

func TestCompileStatus(t *testing.T) {
	t.Parallel()
	many := make([]string, 65)
	for i := range many {
		many[i] = fmt.Sprintf("ns-%d", i)
	}
	tests := []struct {
		name   string
		obj    v1alpha1.OptionsRecordController
		reason string
		// message must contain each of these
		message []string
	}{
		{"empty spec", sinkORC("r"), v1alpha1.ReasonSynced, nil},
		{"full spec", sinkORC("r", namespaces("prod", "payments-*"), excludeNamespaces("kube-system"),
			resources("apps", "deployments", "statefulsets", "deployments/scale"), resources("", "*"),
			verbs(v1alpha1.VerbCreate, v1alpha1.VerbDelete), users("alice", "system:serviceaccount:ci:*"),
			excludeUsers("system:kube-scheduler"), userGroups("developers"), excludeUserGroups("system:nodes"),
			recordSecretData(), retention(time.Hour)), v1alpha1.ReasonSynced, nil},
		{"outside the sink namespace", orc("team-a", "r", excludeNamespaces("kube-system")), v1alpha1.ReasonSynced, nil},
		{"namespaces outside the sink namespace", orc("team-a", "r", namespaces("team-a")),
			v1alpha1.ReasonNamespaceOutOfScope, []string{`"options-record"`, `"team-a"`}},
		{"no name", sinkORC(""), v1alpha1.ReasonInvalidSpec, []string{"metadata.name: Required"}},
		{"empty glob", sinkORC("r", users("")), v1alpha1.ReasonInvalidSpec, []string{"spec.users[0]", "must not be empty"}},
		{"character class", sinkORC("r", excludeUsers("alice", "[ab]ob")), v1alpha1.ReasonInvalidSpec,
			[]string{"spec.excludeUsers[1]", "must not contain"}},
		{"escape", sinkORC("r", userGroups(`dev\*`)), v1alpha1.ReasonInvalidSpec, []string{"spec.userGroups[0]"}},
		{"invalid UTF-8", sinkORC("r", excludeUserGroups("a\xffb")), v1alpha1.ReasonInvalidSpec, []string{"spec.excludeUserGroups[0]", "UTF-8"}},
		{"upper-case namespace", sinkORC("r", namespaces("Prod")), v1alpha1.ReasonInvalidSpec, []string{"spec.namespaces[0]", "lowercase"}},
		{"long namespace", sinkORC("r", excludeNamespaces(strings.Repeat("a", 64))), v1alpha1.ReasonInvalidSpec,
			[]string{"spec.excludeNamespaces[0]", "at most 63"}},
		{"long user", sinkORC("r", users(strings.Repeat("a", 513))), v1alpha1.ReasonInvalidSpec, []string{"spec.users[0]", "at most 512"}},
		{"too many namespaces", sinkORC("r", namespaces(many...)), v1alpha1.ReasonInvalidSpec, []string{"spec.namespaces: Too many"}},
		{"bad verb", sinkORC("r", verbs("create", "get")), v1alpha1.ReasonInvalidSpec, []string{"spec.verbs[1]", `"get"`, "deletecollection"}},
		{"upper-case group", sinkORC("r", resources("Apps", "deployments")), v1alpha1.ReasonInvalidSpec, []string{"spec.resources[0].group"}},
		{"upper-case resource", sinkORC("r", resources("apps", "Deployments")), v1alpha1.ReasonInvalidSpec,
			[]string{"spec.resources[0].resources[0]"}},
		{"resource glob", sinkORC("r", resources("apps", "deploy*")), v1alpha1.ReasonInvalidSpec, []string{"spec.resources[0].resources[0]"}},
		{"subresource wildcard", sinkORC("r", resources("apps", "*/status")), v1alpha1.ReasonInvalidSpec, []string{"spec.resources[0].resources[0]"}},
		{"no resources", sinkORC("r", resources("apps")), v1alpha1.ReasonInvalidSpec, []string{"spec.resources[0].resources: Required"}},
		{"status subresource with noise dropped", sinkORC("r", resources("", "configmaps"), resources("apps", "deployments/status")),
			v1alpha1.ReasonInvalidSpec, []string{"spec.resources[1].resources[0]", "ignoreStatusOnlyChanges"}},
		{"status subresource with noise kept", sinkORC("r", resources("apps", "deployments/status"), keepStatusChanges()),
			v1alpha1.ReasonSynced, nil},
		{"short retention", sinkORC("r", retention(59*time.Minute)), v1alpha1.ReasonInvalidSpec, []string{"spec.retention", "at least 1h0m0s"}},
		{"negative retention", sinkORC("r", retention(-time.Hour)), v1alpha1.ReasonInvalidSpec, []string{"spec.retention"}},
		{"several errors", sinkORC("r", users(""), verbs("get")), v1alpha1.ReasonInvalidSpec, []string{"spec.users[0]", "spec.verbs[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := tt.obj
			obj.Generation = 7
			set, statuses := Compile([]v1alpha1.OptionsRecordController{obj}, Options{})
			if len(statuses) != 1 {
				t.Fatalf("Compile returned %d statuses, want 1", len(statuses))
			}
			st := statuses[0]
			ready := tt.reason == v1alpha1.ReasonSynced
			if st.Ready != ready || st.Reason != tt.reason || st.Generation != 7 ||
				st.Namespace != obj.Namespace || st.Name != obj.Name {
				t.Errorf("status = %+v, want Ready=%v Reason=%s Generation=7", st, ready, tt.reason)
			}
			for _, want := range tt.message {
				if !strings.Contains(st.Message, want) {
					t.Errorf("message %q does not contain %q", st.Message, want)
				}
			}
			if wantLen := map[bool]int{true: 1, false: 0}[ready]; set.Len() != wantLen {
				t.Errorf("Len() = %d, want %d", set.Len(), wantLen)
			}
		})
	}
}

func TestCompileSet(t *testing.T) {
	t.Parallel()
	objs := []v1alpha1.OptionsRecordController{
		orc("sink", "z", retention(48*time.Hour), generation(3)),
		orc("team-a", "own", namespaces("team-b")),
		orc("sink", "bad", verbs("get")),
		orc("", "file"),
		orc("team-a", "a", retention(2*time.Hour)),
		orc("sink", "z"), // duplicate
	}
	set, statuses := Compile(objs, Options{SinkNamespace: "sink"})

	want := []RuleStatus{
		{Namespace: "sink", Name: "z", Generation: 3, Ready: true, Reason: v1alpha1.ReasonSynced, Message: readyMessage},
		{Namespace: "team-a", Name: "own", Generation: 1, Reason: v1alpha1.ReasonNamespaceOutOfScope},
		{Namespace: "sink", Name: "bad", Generation: 1, Reason: v1alpha1.ReasonInvalidSpec},
		{Namespace: "sink", Name: "file", Generation: 1, Ready: true, Reason: v1alpha1.ReasonSynced, Message: readyMessage},
		{Namespace: "team-a", Name: "a", Generation: 1, Ready: true, Reason: v1alpha1.ReasonSynced, Message: readyMessage},
		{Namespace: "sink", Name: "z", Generation: 1, Reason: v1alpha1.ReasonInvalidSpec, Message: "another object named sink/z came first"},
	}
	ignoreMessage := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" },
		cmp.Comparer(func(a, b string) bool { return a == "" || b == "" || a == b }))
	if diff := cmp.Diff(want, statuses, ignoreMessage); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sink/file", "sink/z", "team-a/a"}, set.Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
	if got := set.Len(); got != 3 {
		t.Errorf("Len() = %d, want 3", got)
	}
	if got, want := set.MaxRetention(), v1alpha1.DefaultRetention; got != want {
		t.Errorf("MaxRetention() = %v, want %v (the default of sink/file)", got, want)
	}
	// The returned names are a copy.
	set.Names()[0] = "changed"
	if set.Names()[0] != "sink/file" {
		t.Error("Names() returned the set's own slice")
	}
}

func TestCompileDoesNotRetainInput(t *testing.T) {
	t.Parallel()
	objs := []v1alpha1.OptionsRecordController{sinkORC("r", users("alice"))}
	set, _ := Compile(objs, Options{})
	objs[0].Spec.Users[0] = "bob"
	objs[0].Spec.Retention = &metav1.Duration{Duration: time.Hour}
	if !set.Match(event()).Keep {
		t.Error("changing the input after Compile changed the rule set")
	}
	if got := set.Match(event(user("bob"))); got.Keep {
		t.Error("changing the input after Compile changed the rule set")
	}
}
