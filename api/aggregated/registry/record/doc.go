// Package record serves the read resources of the record in
// record.optionsrecord.io: deletions, changes and attempts, each as a
// namespaced resource and its cluster-scoped twin (clusterdeletions,
// clusterchanges, clusterattempts), from the history service as the
// caller, and a change's inclusion proof in the tamper-evident log
// (changes/proof, clusterchanges/proof). It owns their field selectors, their names and their tables.
//
// It must never read the database itself, nor answer a record of an
// object the caller may not get: every read goes through the history
// service, which authorizes it per object.
package record

import (
	"log/slog"

	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/options-record/options-record/api/history"
	"github.com/options-record/options-record/api/restore"
)

// Storage is the REST storage of the six read resources, by resource
// name, for the cluster named cluster, and the proof subresource of the
// changes (changes/proof, clusterchanges/proof), answered by proofs (nil:
// the record keeps no tamper-evident log).
func Storage(log *slog.Logger, hist *history.Service, rst *restore.Service, cluster string, proofs history.Proofs) map[string]rest.Storage {
	changes := newChangeStorage(log, hist, rst, cluster, true)
	clusterChanges := newChangeStorage(log, hist, rst, cluster, false)
	return map[string]rest.Storage{
		"deletions":            newDeletionStorage(log, hist, cluster, true),
		"clusterdeletions":     newDeletionStorage(log, hist, cluster, false),
		"changes":              changes,
		"changes/proof":        &proofStorage{changes: changes, proofs: proofs},
		"clusterchanges":       clusterChanges,
		"clusterchanges/proof": &proofStorage{changes: clusterChanges, proofs: proofs},
		"attempts":             newAttemptStorage(log, hist, cluster, true),
		"clusterattempts":      newAttemptStorage(log, hist, cluster, false),
	}
}
