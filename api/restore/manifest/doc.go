// Package manifest cleans a recorded object into a manifest fit for
// kubectl apply or a create: without the metadata the apiserver sets and
// without status, with ownerReferences only to owners an OwnerCheck finds
// (the caller says how: in the cluster as the caller, or in the record),
// and with what it removed reported. It is pure: no I/O, no cluster, no
// database.
package manifest
