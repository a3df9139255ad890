// Package auditsink owns the ingest of audit events: the HTTPS webhook
// handler the kube-apiserver posts EventLists to, the authentication of that
// caller (client certificate or bearer token, each mapped to a cluster), the
// limits on what a caller may hold (failed authentications, batches and
// bytes in flight, slow bodies), and the pipeline that filters events with
// the rules of package filter, turns kept events into rows with package
// store/model (prior-state bookkeeping, deletecollection explosion, Secret
// digests) and hands each batch to a writer in one call. Package
// auditsink/decode decodes the EventLists (and the audit log files of
// `options-record import`); this package streams a long body to it chunk by
// chunk (chunks.go), each chunk stored in its own transaction.
//
// It acknowledges a batch only after the writer returned, so nothing
// acknowledged is lost. It never answers a whole batch with a 4xx because of
// one bad event: such events are skipped and counted. It never reads the
// database and never talks to the cluster.
//
// # JSON, and which library where
//
// docs/development.md ("JSON") says which decoder the project uses where,
// and why. Package auditsink/decode decodes the webhook's bodies; this
// package reads the token file with sigs.k8s.io/yaml (auth.go).
package auditsink
