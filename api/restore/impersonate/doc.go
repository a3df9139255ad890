// Package impersonate is the sink's access to the cluster as one of its
// callers: a dynamic client that impersonates the caller's user, uid,
// groups and extras (so the cluster's RBAC and admission decide every read
// and write, and its audit log names the caller), the live object of a
// recorded one, owner checks as the caller, and discovery (the one thing
// done as the sink). It is the only code that holds the impersonation
// right; package restore uses it.
package impersonate
