// Package tamper keeps the record's tamper-evident log and checks the record
// against it.
//
// Each recorded cluster has one append-only Merkle log (RFC 6962, built with
// golang.org/x/mod/sumdb/tlog) whose leaves commit to every row the ingest
// stored (events, object_versions) and to each retention cutoff, and whose
// checkpoints are C2SP tlog-checkpoint notes signed with an Ed25519 key
// (golang.org/x/mod/sumdb/note). The ingest's batch transaction writes a
// narrow pending row per stored row (store.WriteBatch); an Integrator
// drains them, appends the leaves, stores the tree's hashes and signs a
// checkpoint, in one transaction, one integrator per cluster at a time under
// an advisory lock. Verify recomputes everything from what is stored and
// names each row that fails.
//
// It must never store or log the signing key, and never take a lock the
// ingest's batches wait on: the ingest only inserts pending rows.
package tamper
