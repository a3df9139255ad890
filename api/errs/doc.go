// Package errs holds the errors the services (packages history and
// restore) return and the one function, Status, that maps them to a status
// code and reason, which each front door answers in its own form (a JSON
// error of the direct API, a metav1.Status of the aggregated API). As
// pkgsite's internal/derrors, it is a leaf: it imports no package of the
// module and does no I/O, so any layer may use it (package impersonate
// refuses a caller without importing the read service, and the store's
// not-found is one of its errors).
package errs
