package planner

import (
	"strings"
	"testing"

	"github.com/options-record/options-record/api/history"
)

func TestOrderSteps(t *testing.T) {
	t.Parallel()
	step := func(action, group, resource, name, uid string, owners ...string) Step {
		st := Step{Action: action, Object: ObjectRef{Group: group, Resource: resource, Namespace: "ns", Name: name}, Owners: owners}
		if action == ActionDelete {
			st.Live = &LiveRef{UID: uid}
		} else {
			st.Source = &history.Version{UID: uid}
		}
		if resource == "namespaces" {
			st.Object.Namespace = ""
		}
		return st
	}
	steps := []Step{
		step(ActionCreate, "example.com", "widgets", "w", "u-w"),
		step(ActionCreate, "", "pods", "p", "u-p", "u-cm"), // owned by a ConfigMap: after it
		step(ActionCreate, "", "configmaps", "cm", "u-cm", "u-w"),
		step(ActionSkip, "", "serviceaccounts", "default", "u-sa"),
		step(ActionCreate, "apiextensions.k8s.io", "customresourcedefinitions", "widgets.example.com", "u-crd"),
		step(ActionCreate, "", "namespaces", "ns", "u-ns"),
		step(ActionDelete, "apps", "deployments", "d", "u-d"),
		step(ActionDelete, "apps", "replicasets", "d-1", "u-rs", "u-d"),
		step(ActionDelete, "", "configmaps", "new", "u-new"),
	}
	var got []string
	for _, st := range orderSteps(steps) {
		got = append(got, st.Action+" "+st.Object.Resource+"/"+st.Object.Name)
	}
	want := []string{
		"delete replicasets/d-1", "delete deployments/d", "delete configmaps/new",
		"create namespaces/ns", "create customresourcedefinitions/widgets.example.com",
		"create widgets/w", "create configmaps/cm", "create pods/p",
		"skip serviceaccounts/default",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
