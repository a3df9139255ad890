// Package restore is the restore HTTP API of Options Record: JSON over HTTPS
// under /api/v1 (go-chi), described by the OpenAPI document it serves at
// /api/v1/openapi.json.
//
// It owns the reads of the record (search, history, versions, diffs,
// deletions, failed mutations, a user's activity), the clean manifest of a
// version (CleanManifest), the diff of two states (Diff), and restores: of
// one version, and plans (a namespace as of a time, or undoing a user's
// changes) that the caller reviews before executing them. Every restore is
// recorded in the restores table.
//
// Every request is authenticated (a bearer token: TokenReview through the
// cluster, or the static token of the standalone mode) and authorized per
// object (SubjectAccessReview: reading the record of an object needs "get"
// on it). Restores go through client-go impersonating the caller, so the
// cluster's RBAC decides each write and the cluster's audit log names the
// operator; the sink's identity needs only "impersonate".
//
// It must never write to the cluster with the sink's own rights, build SQL
// (package store does, with parameters), or write to the record except the
// restores table.
package restore
