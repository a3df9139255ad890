// Package restore is the query and restore layer over the record: the
// operations both front doors of the API call (the direct HTTPS API of
// package restoreapi, and the aggregated API served through the
// kube-apiserver), with no HTTP in it.
//
// It owns
//   - the reads of the record (lookups.go): changes, one object's history,
//     versions, diffs, deletions, failed mutations and a user's activity,
//     paged with sealed cursors (cursor.go) by a scan that tells nothing of
//     the rows it leaves out (page.go);
//   - authorization per object (authorize.go): reading the record of an
//     object needs "get" on it, asked of the Authorizer (SubjectAccessReview)
//     for the caller the context carries (WithCaller); an object the caller
//     may not read is answered as one that does not exist;
//   - the clean manifest of a version (clean.go) and the diff of two states
//     (diff.go);
//   - restores (restore.go): of one version, and plans (plan.go, steps.go)
//     — a namespace as of a time, or undoing a user's changes — that the
//     caller reviews before executing them (execute.go). Every write goes
//     through client-go impersonating the caller (cluster.go), so the
//     cluster's RBAC decides it and its audit log names the operator; the
//     sink's identity needs only "impersonate". Every restore is recorded in
//     the restores table.
//
// Its errors (errors.go) carry a status code (Status) that each front door
// answers in its own form. It must never write to the cluster with the
// sink's own rights, build SQL (package store does, with parameters), or
// write to the record except the restores table.
package restore
