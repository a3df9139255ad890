// Package registry holds what the REST storages of record.optionsrecord.io
// share: the map of the services' errors to the Kubernetes statuses a
// client expects, the escape of a recorded string shown in a table cell,
// the names of record objects (<uid>.<version key>) and the paging of
// their lists. Its sub-packages are the storages: record (deletions,
// changes, attempts: the reads) and restores (restores and restore plans:
// the writes).
//
// It must never reach the database or the cluster itself: the storages
// call the history and restore services, which do, as the caller.
package registry
