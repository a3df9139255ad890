// Package restore is the write half of the layer both front doors of the
// API call (package history is the read half): the clean manifest of a
// version, restores of one version, and plans — a namespace as of a time, or
// undoing a user's changes — that the caller reviews before executing them.
// It has no HTTP in it.
//
// It owns
//   - the clean manifest of a version (manifest.go, with packages manifest
//     and restorable): a state without what the server sets, with
//     ownerReferences only to owners that still exist, checked as the caller;
//   - restores (restore.go): a version written back, refused when the live
//     object changed after the version the caller saw;
//   - plans, made by package planner (bounded before anything is loaded,
//     covering only what the caller may read), recorded (plan.go) and
//     executed (execute.go);
//   - the check that a run is what was reviewed (digest.go, with package
//     digest): a real run carries the plan's digest and runs those steps,
//     restoring those states, or nothing; a version's restore is pinned
//     alike by its dry run's stateDigest.
//
// Every version a caller names is loaded, and every object a plan covers is
// authorized, through package history. Every write to the cluster goes
// through client-go impersonating the caller (package impersonate): user, uid,
// groups and extras, so the cluster's RBAC and admission decide and its
// audit log names the operator; the sink's identity needs only
// "impersonate". Every restore is recorded in the restores table before
// anything is written.
//
// It must never write to the cluster with the sink's own rights, build SQL
// (package store does, with parameters), or write to the record except the
// restores table.
package restore
