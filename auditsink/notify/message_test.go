package notify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/options-record/options-record/store"
)

// TestUndoCommands: the command that brings an incident back, with every
// recorded string a single shell word.
func TestUndoCommands(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	item := func(user, group, res, ns, name string) store.NotificationItem {
		return store.NotificationItem{Username: user, APIGroup: group, Resource: res, Namespace: ns, Name: name, Verb: "delete", ChangedAt: at}
	}
	for _, tt := range []struct {
		name  string
		group string
		items []store.NotificationItem
		want  []string
	}{
		{"one object", "user:bob", []store.NotificationItem{item("bob", "apps", "deployments", "shop", "web")},
			[]string{"kubectl record restore deployments.apps/web -n shop"}},
		{"a hostile name", "user:bob", []store.NotificationItem{item("bob", "", "configmaps", "shop", "x'; rm -rf / #")},
			[]string{`kubectl record restore 'configmaps/x'\''; rm -rf / #' -n shop`}},
		{"a namespace", "namespace:shop", []store.NotificationItem{item("alice", "", "namespaces", "shop", "shop")},
			[]string{"kubectl create namespace shop", "kubectl record plan as-of 2026-11-26T09:59:59Z -n shop"}},
		{"a burst, one namespace and cluster-scoped", "user:$(id)", []store.NotificationItem{
			item("$(id)", "", "configmaps", "shop", "a"), item("$(id)", "", "configmaps", "shop", "b"),
			item("$(id)", "rbac.authorization.k8s.io", "clusterroles", "", "c")},
			[]string{
				"kubectl record plan undo --user '$(id)' --since 2026-11-26T09:59:59Z --until 2026-11-26T10:00:01Z -n shop",
				"kubectl record plan undo --user '$(id)' --since 2026-11-26T09:59:59Z --until 2026-11-26T10:00:01Z --cluster --resources clusterroles.rbac.authorization.k8s.io",
			}},
	} {
		in := NewIncident(&store.NotificationMessage{ID: "k", Cluster: "c", GroupKey: tt.group, Items: tt.items})
		if diff := cmp.Diff(tt.want, in.Undo); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
