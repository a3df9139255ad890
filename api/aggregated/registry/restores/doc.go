// Package restores serves the writes of record.optionsrecord.io: restores
// and restore plans, each as a namespaced resource and its cluster-scoped
// twin (clusterrestores, clusterrestoreplans). A created plan is made by
// the restore service (nothing is written to the cluster); a created
// restore runs as its creator, and is read back from the restores table.
// It owns their validation, their status and their tables.
//
// It must never write to the cluster itself, nor as anyone but the
// caller: the restore service does, impersonating the caller. A restore's
// status never carries a value of a Secret (the audit log keeps it).
package restores

import (
	"log/slog"

	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
)

// Storage is the REST storage of the four resources, by resource name, for
// the cluster named cluster.
func Storage(log *slog.Logger, hist *history.Service, rst *restore.Service, cluster string) map[string]rest.Storage {
	return map[string]rest.Storage{
		"restoreplans":        newPlanStorage(log, rst, cluster, true),
		"clusterrestoreplans": newPlanStorage(log, rst, cluster, false),
		"restores":            newRestoreStorage(log, hist, rst, cluster, true),
		"clusterrestores":     newRestoreStorage(log, hist, rst, cluster, false),
	}
}
