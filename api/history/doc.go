// Package history answers the questions of the record for a caller: who
// changed or deleted what and when, as whom, and what an object looked like
// before. It is the read half of the layer both front doors of the API call
// (the direct HTTPS API of package restoreapi, and the aggregated API served
// through the kube-apiserver); package restore is the write half. It has no
// HTTP in it and no client of the cluster.
//
// It owns
//   - the reads (lookups.go): changes, one object's history, versions,
//     diffs, deletions, failed mutations and a user's activity, paged with
//     sealed cursors (cursor.go) by a scan that tells nothing of the rows it
//     leaves out (page.go);
//   - authorization per object (authorize.go): reading the record of an
//     object needs "get" on it, asked of the Authorizer (SubjectAccessReview)
//     for the caller the context carries (WithCaller, as the generic
//     apiserver's handlers carry it); an object the caller may not read is
//     answered as one that does not exist, and a list leaves it out without
//     a trace;
//   - the diff of two states (diff.go) and the documents of the answers
//     (types.go).
//
// Its errors, and restore's, are package errs's.
//
// It must never build SQL (package store does, with parameters) nor write
// anything.
package history
